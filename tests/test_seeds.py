"""Every page under seeds other than the default (``BOOK_SEED``, :mod:`symbreak.rng`), in quick mode.

A claim that holds only on the default seed is a finding about the claim, not noise: each page is
executed with every seed of the library moved (``BOOK_SEED=1`` and ``BOOK_SEED=2``, the code
unchanged) and every one of its claims must hold and the page must finish. The claims are recorded
rather than raised (``tools/seeds.py``), so one failure does not hide the next. Marked ``seeds``:
``make seeds-quick`` runs it (two seeds × every page in quick mode, about twice the page tests);
``make seeds N=5`` is the full-size run.
"""

from __future__ import annotations

import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import seeds  # noqa: E402  (tools/seeds.py)
import toc  # noqa: E402

OTHER_SEEDS = (1, 2)


def _pages_with_code() -> list[str]:
    return [p for p in toc.toc_files(ROOT) if "{code-cell}" in (ROOT / (p + ".md")).read_text()]


@pytest.mark.seeds
@pytest.mark.parametrize("seed", OTHER_SEEDS)
@pytest.mark.parametrize("page", _pages_with_code())
def test_every_claim_holds_under_another_seed(page, seed, tmp_path, monkeypatch):
    monkeypatch.delenv("SYMBREAK_FIGURES", raising=False)
    error = seeds.execute_page(page, seed, tmp_path, quick=True, timeout=900)
    records = seeds.page_claims(tmp_path, page, quick=True)
    failed = [f"{r['id']}: measured {r['measured']}, expected {r['expected']}" for r in records if r["holds"] is False]
    assert error is None and not failed, f"BOOK_SEED={seed} {page}: error {error}; claims that do not hold: {failed}"


def test_summary_counts_claims_and_pages():
    """``seeds.json``'s schema: holds/of per claim, finished/of and errors per page."""
    runs = {
        ("book/p", 1): (
            None,
            [{"id": "c-a", "holds": True}, {"id": "c-b", "holds": False}, {"id": "c-r", "holds": None}],
        ),
        ("book/p", 2): ("ValueError: x", [{"id": "c-a", "holds": True}]),
    }
    out = seeds.summarise([1, 2], runs)
    assert out == {
        "seeds": [1, 2],
        "claims": {"c-a": {"holds": 2, "of": 2}, "c-b": {"holds": 0, "of": 1}},
        "pages": {"book/p": {"finished": 1, "of": 2, "errors": ["seed 2: ValueError: x"]}},
    }


def test_seeds_tool_rejects_the_default_seed():
    with pytest.raises(SystemExit):
        seeds.main(["--seed-list", "0"])
