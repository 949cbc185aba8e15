"""tools/execute_pages.py: the order and pairing of the pages run side by side, the kernels' BLAS
threads, the committed page times."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
try:
    import execute_pages as ep
    from toc import toc_pages
finally:
    sys.path.pop(0)


def _run(pages, seconds, jobs, heavy):
    """Simulate the scheduler with fixed page times: (start, page) in start order, and the end."""
    pending, running, t, starts = ep.order_pages(list(pages), seconds), {}, 0.0, []
    while pending or running:
        while len(running) < jobs:
            page = ep.next_page(pending, list(running), heavy, jobs)
            if page is None:
                break
            pending.remove(page)
            running[page] = t + seconds[page]
            starts.append((t, page))
        page = min(running, key=running.get)
        t = running.pop(page)
    return starts, t


def test_longest_first_and_unknown_pages_before_all():
    seconds = {"a": 10.0, "b": 50.0, "c": 5.0}
    assert ep.order_pages(["a", "b", "c", "new"], seconds) == ["new", "b", "a", "c"]
    assert ep.order_pages(["y", "x"], {}) == ["x", "y"]  # no estimates: by name


def test_two_heavy_pages_never_run_together_on_two_jobs():
    seconds = {"h1": 70.0, "h2": 60.0, "h3": 45.0, "l1": 30.0, "l2": 20.0, "l3": 10.0, "l4": 5.0}
    heavy = {p for p, v in seconds.items() if v >= 40}
    starts, end = _run(seconds, seconds, 2, heavy)
    ends = {p: t + seconds[p] for t, p in starts}
    for t, p in starts:
        beside = [q for s, q in starts if q != p and s < ends[p] and t < ends[q]]
        if p in heavy:
            assert not heavy & set(beside), f"{p} ran beside another heavy page: {beside}"
    assert [p for _, p in starts][:2] == ["h1", "l1"]  # the heaviest first, beside the longest light page
    assert end <= sum(seconds.values())  # never slower than one page after another


def test_next_page_waits_for_a_heavy_slot_and_four_jobs_allow_two():
    heavy = {"h1", "h2", "h3"}
    assert ep.next_page(["h2"], ["h1"], heavy, 2) is None
    assert ep.next_page(["h2", "l"], ["h1"], heavy, 2) == "l"
    assert ep.next_page(["h2"], ["h1"], heavy, 4) == "h2"
    assert ep.next_page(["h3"], ["h1", "h2"], heavy, 4) is None
    assert ep.next_page(["h1"], [], heavy, 1) == "h1"


def test_kernel_environment_divides_the_cores_and_keeps_the_users_setting():
    assert ep.kernel_environment(2, 2, environ={}) == {"OPENBLAS_NUM_THREADS": "1"}
    assert ep.kernel_environment(2, 8, environ={}) == {"OPENBLAS_NUM_THREADS": "4"}
    assert ep.kernel_environment(4, 2, environ={}) == {"OPENBLAS_NUM_THREADS": "1"}
    assert ep.kernel_environment(1, 2, environ={}) == {"OPENBLAS_NUM_THREADS": "2"}
    assert ep.kernel_environment(2, 2, environ={"OPENBLAS_NUM_THREADS": "3"}) == {}
    with pytest.raises(ValueError, match="jobs and cores"):
        ep.kernel_environment(0, 2, environ={})


def test_committed_page_times_name_pages_of_the_toc(tmp_path):
    estimates = ep.load_estimates()
    assert estimates, "tools/page_seconds.json is missing or empty"
    pages = {str(p.relative_to(ROOT)) for p in toc_pages(ROOT)}
    assert set(estimates) <= pages, f"not pages of _toc.yml: {sorted(set(estimates) - pages)}"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"book/intro.md": -1}))
    with pytest.raises(ValueError, match="page paths to seconds"):
        ep.load_estimates(bad)
    assert ep.load_estimates(tmp_path / "none.json") == {}
