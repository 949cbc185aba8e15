"""Settings shared by every test module."""

from __future__ import annotations

import os

# Under pytest-xdist (``make test`` runs ``-n auto``) every core already runs its own worker, and a
# page test's kernel runs while its worker waits. A thread pool per process on top (OpenBLAS,
# OpenMP, torch's intra-op threads) oversubscribes the cores, and those threads spin while they wait
# for each other. Measured with `pytest tests/test_runner.py -n 2` on a busy two-core machine: 104 s
# of CPU and 627 s of wall time without this (the torch device-path test alone 563 s), 30 s and
# 92 s with it. One thread per process; a value set by the user is kept. This module is imported
# before any test module imports NumPy or torch, and the page tests' kernels inherit the environment.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, "1")


#: The controller's precompile report, for the summary.
_PRECOMPILED: list = []


def pytest_sessionstart(session):
    """Before the workers start, the library's numba kernels are compiled once into the disk cache
    (:func:`symbreak.precompile.precompile`, the groups side by side), so that the workers and the
    page tests' kernels load them instead of each compiling the same kernels at once on an empty
    cache (in a clean clone that cost about a minute of the two cores' time). In the controller of
    xdist workers only (it runs before xdist starts them); not for ``-n 0`` (one process: nothing
    compiles twice) nor ``--collect-only``; a second or two once the cache is full. Compiling
    while the workers start and collect instead was slower (190 s against 173 s for a clean clone's
    suite): collecting the test modules compiles some kernels too, so they were compiled twice.
    A failure is reported in the summary; the tests then compile what they use themselves."""
    opt = session.config.option
    if os.environ.get("PYTEST_XDIST_WORKER") or opt.collectonly or not getattr(opt, "numprocesses", None):
        return
    from symbreak.precompile import precompile

    try:
        _PRECOMPILED.append(precompile(jobs=min(2, os.cpu_count() or 1)))
    except RuntimeError as exc:
        _PRECOMPILED.append(str(exc))


def pytest_terminal_summary(terminalreporter):
    if not _PRECOMPILED:
        return
    if isinstance(_PRECOMPILED[0], str):
        terminalreporter.write_line(f"precompiling the numba kernels failed: {_PRECOMPILED[0]}", red=True)
    elif _PRECOMPILED[0] > 5:
        terminalreporter.write_line(
            f"numba kernels compiled into the disk cache before the tests, in {_PRECOMPILED[0]:.0f} s"
        )


def pytest_collection_modifyitems(config, items):
    """The book pages first, the largest page source first (a proxy for its cost in quick mode), then
    every other test in its usual order: under ``--dist worksteal`` the longest tests start early and
    the workers finish together, instead of one of them starting a page while the others run out."""

    def key(item):
        if item.get_closest_marker("book") is None or not hasattr(item, "callspec"):
            return (1, 0)
        return (0, -item.callspec.params["page"].stat().st_size)

    items.sort(key=key)  # stable: the rest keeps its order
