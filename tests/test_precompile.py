"""Tests of ``symbreak.precompile``: the kernels compiled ahead into numba's disk cache."""

import ast
import json
import subprocess
import sys

import pytest

from symbreak import precompile as pc


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: pc.compile_kernels("autoencoder"), "group"),
        (lambda: pc.precompile(0), "jobs"),
        (lambda: pc.precompile(len(pc.GROUPS) + 1), "jobs"),
        (lambda: pc.precompile(1.5), "jobs"),
        (lambda: pc.precompile(True), "jobs"),
        (lambda: pc.precompile(1, timeout=0.0), "timeout"),
        (lambda: pc.precompile(1, timeout=float("nan")), "timeout"),
        (lambda: pc.precompile(1, timeout=None), "timeout"),
        (lambda: pc.precompile(1, timeout=1e300), "timeout"),
        (lambda: pc.precompile(1, groups=()), "groups"),
        (lambda: pc.precompile(1, groups=("others", "others")), "groups"),
        (lambda: pc.precompile(1, groups=("autoencoder",)), "groups"),
        (lambda: pc.precompile(1, groups=[None]), "groups"),
        (lambda: pc.precompile(1, groups=5), "groups"),
    ],
)
def test_bad_arguments_name_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_a_group_past_its_time_limit_is_an_error():
    with pytest.raises(RuntimeError, match="took over"):
        pc.precompile(1, timeout=0.01)  # a fresh interpreter alone takes longer


# every kernel that precompile compiles, and its number of signatures (float64, float32)
_KERNELS = {
    "_linear_sgd_lanes": 2,
    "_bartlett_products": 2,
    "_samples_sgd_block": 2,
    "_edln_sgd_lanes": 2,
    "_edln_gd_block": 1,
    "_edge_map_loop": 1,
    "fill_normal_rows": 2,
    "wishart_variates": 2,
}

_STATS = """
import ast
import json
from symbreak.precompile import compile_kernels
compile_kernels("all")
from symbreak import _sfc64, wishart
kernels = {fn.__name__: d for fn, d in wishart._COMPILED.items()}
kernels.update(fill_normal_rows=_sfc64.fill_normal_rows, wishart_variates=_sfc64.wishart_variates)
print(json.dumps({name: [sum(d.stats.cache_hits.values()), sum(d.stats.cache_misses.values()),
                         len(d.signatures)] for name, d in kernels.items()}))
"""


def test_precompile_leaves_every_kernel_in_the_disk_cache():
    """After :func:`precompile`, a fresh process that runs :func:`compile_kernels` finds every kernel
    in numba's disk cache, in each of its precisions: each signature a cache hit, none compiled (a
    group that stopped compiling a kernel, or a cache that did not keep it, fails this)."""
    pc.precompile(2)
    out = subprocess.run([sys.executable, "-c", _STATS], capture_output=True, text=True, check=True, timeout=600)
    stats = json.loads(out.stdout.strip().splitlines()[-1])
    for name, n in _KERNELS.items():
        hits, misses, signatures = stats[name]
        assert (misses, signatures) == (0, n), (name, stats[name])
        assert hits >= n, (name, stats[name])


def test_the_groups_asked_for_are_dealt_to_the_processes_slowest_first(monkeypatch):
    """``groups`` picks which groups compile, each exactly once; they are dealt to at most ``jobs``
    processes, the slowest first to the least loaded, and a process compiles its groups in the order
    of GROUPS. The book's groups are the float64 ones."""
    ran = []

    def fake_run(cmd, **kwargs):
        ran.append(ast.literal_eval(cmd[-1].split("for g in ")[1].split(":")[0]))  # the bundle: a tuple of names
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(pc.subprocess, "run", fake_run)
    pc.precompile(1, groups=("others", "autoencoder-f64"))
    assert ran == [("autoencoder-f64", "others")]
    ran.clear()
    pc.precompile(2, groups=pc.GROUPS)  # 25 + 14 and 20 + 18 + 4 seconds
    assert sorted(ran) == [("autoencoder-f32", "platonic-f32"), ("autoencoder-f64", "platonic-f64", "others")]
    ran.clear()
    pc.precompile(5, groups=pc.BOOK_GROUPS)
    assert sorted(ran) == [("autoencoder-f64",), ("others",), ("platonic-f64",)]
    ran.clear()
    pc.precompile(2, groups="platonic-f32")
    assert ran == [("platonic-f32",)]
    assert set(pc.BOOK_GROUPS) < set(pc.GROUPS) and not any(g.endswith("f32") for g in pc.BOOK_GROUPS)


def test_a_failing_process_names_its_groups(monkeypatch):
    monkeypatch.setattr(pc.subprocess, "run", lambda cmd, **kw: subprocess.CompletedProcess(cmd, 1, "", "boom"))
    with pytest.raises(RuntimeError, match="'autoencoder-f64' and 'others' failed:\\nboom"):
        pc.precompile(1, groups=("others", "autoencoder-f64"))


@pytest.mark.parametrize("argv, groups", [([], pc.GROUPS), (["--book"], pc.BOOK_GROUPS)])
def test_the_command_line_compiles_every_group_or_the_books(monkeypatch, capsys, argv, groups):
    """``python -m symbreak.precompile`` compiles every group; ``--book`` (what a Binder image's
    postBuild runs) only the kernels of the book's pages."""
    asked = []
    monkeypatch.setattr(pc, "precompile", lambda jobs, *, groups: asked.append((jobs, groups)) or 1.5)
    pc.main(["--jobs", "2", *argv])
    assert asked == [(2, groups)]
    assert "numba kernels compiled or loaded from the cache in 1.5 s" in capsys.readouterr().out
