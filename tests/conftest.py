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


def pytest_collection_modifyitems(config, items):
    """The book pages first, the largest page source first (a proxy for its cost in quick mode), then
    every other test in its usual order: under ``--dist worksteal`` the longest tests start early and
    the workers finish together, instead of one of them starting a page while the others run out."""

    def key(item):
        if item.get_closest_marker("book") is None or not hasattr(item, "callspec"):
            return (1, 0)
        return (0, -item.callspec.params["page"].stat().st_size)

    items.sort(key=key)  # stable: the rest keeps its order
