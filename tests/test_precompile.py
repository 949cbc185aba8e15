"""Tests of ``symbreak.precompile``: the kernels compiled ahead into numba's disk cache."""

import pathlib

import pytest

import symbreak
from symbreak import precompile as pc


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: pc.compile_kernels("autoencoder"), "group"),
        (lambda: pc.precompile(0), "jobs"),
        (lambda: pc.precompile(5), "jobs"),
        (lambda: pc.precompile(1.5), "jobs"),
        (lambda: pc.precompile(True), "jobs"),
        (lambda: pc.precompile(1, timeout=0.0), "timeout"),
        (lambda: pc.precompile(1, timeout=float("nan")), "timeout"),
    ],
)
def test_bad_arguments_name_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_precompile_leaves_every_kernel_in_the_disk_cache():
    """After :func:`precompile` (which the test session's start has run already), the disk cache holds
    the autoencoder's lane step in both precisions, the Platonic SGD step in both and its GD step, the
    Wishart draws and the edge map; a second call finds them there and loads them instead of
    compiling: no cache file is written again."""
    pc.precompile(2)
    root = pathlib.Path(symbreak.__file__).parent
    files = {p: p.stat().st_mtime_ns for p in root.rglob("__pycache__/*.nb[ic]")}
    pc.precompile(2)
    assert {p: p.stat().st_mtime_ns for p in root.rglob("__pycache__/*.nb[ic]")} == files
    counts = {
        "_ae_lanes._linear_sgd_lanes": (root / "__pycache__", 2),
        "wishart._bartlett_products": (root / "__pycache__", 2),
        "training._edln_sgd_block": (root / "platonic" / "__pycache__", 2),
        "training._edln_gd_block": (root / "platonic" / "__pycache__", 1),
        "sgd._samples_sgd_block": (root / "autoencoder" / "__pycache__", 2),
        "stability._edge_map_loop": (root / "autoencoder" / "__pycache__", 1),
    }
    for name, (folder, n) in counts.items():
        # numba names a kernel's files after its first line: the newest index is the current source's
        # (a working tree may keep those of an earlier version of the file)
        index = max(folder.glob(f"{name}-*.nbi"), key=lambda p: p.stat().st_mtime_ns)
        compiled = list(folder.glob(index.name[: -len(".nbi")] + ".*.nbc"))
        assert len(compiled) == n, (name, sorted(p.name for p in folder.glob("*.nb*")))
