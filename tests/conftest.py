"""Settings shared by every test module."""

from __future__ import annotations

import os

import pytest

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


#: The file that the controller writes when the kernels are compiled (its path in this variable,
#: which the xdist workers inherit): "ok <seconds>" or "failed: <error>".
_PRECOMPILED = "SYMBREAK_TEST_PRECOMPILED"


def pytest_sessionstart(session):
    """The library's numba kernels are compiled once into the disk cache
    (:func:`symbreak.precompile.precompile`, the groups side by side) while the workers start and
    collect, and no test runs before that is done (:func:`pytest_runtestloop`): the workers and the
    page tests' kernels then load the kernels instead of each compiling the same ones at once on an
    empty cache (in a clean clone that cost about a minute of the two cores' time). In the
    controller only; well under a second once the cache is full."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    import tempfile
    import threading

    marker = os.path.join(tempfile.mkdtemp(prefix="symbreak-precompile-"), "done")
    os.environ[_PRECOMPILED] = marker

    def run():
        from symbreak.precompile import precompile

        try:
            text = f"ok {precompile(jobs=min(2, os.cpu_count() or 1)):.1f}"
        except Exception as exc:  # noqa: BLE001 - reported in the summary; the tests then compile
            text = f"failed: {exc}"
        with open(marker + ".part", "w") as f:
            f.write(text)
        os.replace(marker + ".part", marker)

    threading.Thread(target=run, name="precompile", daemon=True).start()


def _precompiled(timeout: float = 900.0) -> str:
    """Wait for the controller's precompile (see :func:`pytest_sessionstart`); its report."""
    import time

    marker = os.environ.get(_PRECOMPILED)
    if not marker:
        return ""
    deadline = time.monotonic() + timeout
    while not os.path.exists(marker):
        if time.monotonic() > deadline:
            return f"failed: not done after {timeout:.0f} s"
        time.sleep(0.1)
    with open(marker) as f:
        return f.read()


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    """In a worker (or a run without workers): no test before the kernels are compiled."""
    if session.config.pluginmanager.has_plugin("dsession"):
        return  # the controller of xdist workers: it runs no test itself
    _precompiled()


def pytest_terminal_summary(terminalreporter):
    if os.environ.get("PYTEST_XDIST_WORKER") or not os.environ.get(_PRECOMPILED):
        return
    report = _precompiled()
    if report.startswith("ok"):
        seconds = float(report.split()[1])
        if seconds > 5:
            terminalreporter.write_line(f"numba kernels compiled into the disk cache first, in {seconds:.0f} s")
    else:
        terminalreporter.write_line(f"precompiling the numba kernels {report}", red=True)


def pytest_collection_modifyitems(config, items):
    """The book pages first, the largest page source first (a proxy for its cost in quick mode), then
    every other test in its usual order: under ``--dist worksteal`` the longest tests start early and
    the workers finish together, instead of one of them starting a page while the others run out."""

    def key(item):
        if item.get_closest_marker("book") is None or not hasattr(item, "callspec"):
            return (1, 0)
        return (0, -item.callspec.params["page"].stat().st_size)

    items.sort(key=key)  # stable: the rest keeps its order
