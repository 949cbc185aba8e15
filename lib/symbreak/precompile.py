"""Compile the library's numba kernels once, ahead of time, into numba's disk cache.

Every compiled kernel that the book's simulations use (the linear autoencoder's SIMD-lane step and
its ReLU step on data points, the Platonic networks' SGD and GD blocks, the exact Wishart draws, the
reduced edge-of-stability map) is compiled by numba on first use and cached on disk next to its
module, so that a later process loads it in a fraction of a second instead of compiling it. The first
compile is slow: about 16 s for the autoencoder's lane step in float64 and 20 s in float32 on the
reference machine, 14 s and 11 s for the Platonic networks' SGD step in float64 and float32, a few
seconds for each of the others. Processes that start together on an empty
cache (the workers of ``pytest -n auto``, the pages that ``make book`` runs side by side) would each
compile the same kernels at once. :func:`precompile` compiles them once, the groups side by side in
separate processes, before those start; it is what ``make test`` and ``make book`` do first, and
what a Binder image does when it is built. numba's cache is keyed by the CPU as well: a machine of
another kind than the one that filled it (a Binder image built elsewhere) compiles again on first
use.

Run it as ``python -m symbreak.precompile``.
"""

from __future__ import annotations

import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .validation import check_choice, check_int, check_positive

__all__ = ["BOOK_GROUPS", "GROUPS", "compile_kernels", "precompile"]

#: The groups of kernels, the slowest first (on the reference machine, 4 December 2026, about 25, 20,
#: 18, 14 and 4 s each; two processes finish them all in about 42 s).
GROUPS = ("autoencoder-f32", "autoencoder-f64", "platonic-f64", "platonic-f32", "others")
#: Each group's compile time in seconds on the reference machine (the bundling of :func:`precompile`).
_COST = {"autoencoder-f32": 25.0, "autoencoder-f64": 20.0, "platonic-f64": 18.0, "platonic-f32": 14.0, "others": 4.0}


def _autoencoder(dtype) -> None:
    from . import autoencoder as ae

    lam = ae.geometric_spectrum(6)
    kw = dict(seeds=2, record_every=10, seed=1, dtype=dtype)
    ae.simulate_sgd(lam, 2, 0.02, 8, 20, **kw)  # B >= d: the SIMD-lane step
    ae.simulate_sgd(lam, 2, 0.02, 4, 20, **kw)  # B < d: the Wishart block draw


def _platonic(dtype) -> None:
    from . import platonic as pl

    task = pl.random_task(5, n=4, m=5, noise=0.5)
    net = pl.random_edln(6, 4, 5, (4,), cond=2.0)
    w0 = pl.init_weights(net, 7, replicas=2)
    for batch in (4, 16):  # the minibatch of points, and its exact Wishart moments
        pl.train_sgd(net, task, w0, lr=0.01, batch_size=batch, steps=20, seed=1, record_every=10, dtype=dtype)
    if dtype == np.float64:
        pl.train_gd(net, task, w0, lr=0.01, steps=20, record_every=10)


def _others() -> None:
    from . import autoencoder as ae
    from .engine import WishartBlockSampler, replica_streams

    lam = ae.geometric_spectrum(6)
    for dtype in (np.float64, np.float32):
        ae.simulate_sgd(lam, 2, 0.02, 4, 20, seeds=2, record_every=10, seed=1, dtype=dtype,
                        activation="relu", sampler="samples")  # fmt: skip
        smp = WishartBlockSampler(np.sqrt(lam), np.array([2, 9]), scale=np.array([0.1, 0.1]), dtype=dtype)
        smp.draw(replica_streams(1, range(2)), 4)
    ae.eos_reduced_map(lam, 2, [0.05], [4], 0.01, seeds=2, n_records=2, seed=1)


def compile_kernels(group: str = "all") -> float:
    """Compile (or load from numba's disk cache) the kernels of one group, in this process.

    Each kernel is compiled by running the public simulation that uses it on a tiny problem, so
    the cached specialisations are exactly the ones the book's simulations call.

    Parameters
    ----------
    group : {"all", "autoencoder-f32", "autoencoder-f64", "platonic-f64", "platonic-f32", "others"}
        Which kernels (:data:`GROUPS`); ``"all"`` compiles every group in turn.

    Returns
    -------
    float
        The wall-clock seconds it took (about a second when every kernel is already cached).

    Raises
    ------
    ValueError
        If ``group`` is not one of the above.
    """
    check_choice("group", group, ("all", *GROUPS))
    t0 = time.perf_counter()
    for g in GROUPS if group == "all" else (group,):
        if g.startswith("platonic"):
            _platonic(np.float32 if g.endswith("32") else np.float64)
        elif g == "others":
            _others()
        else:
            _autoencoder(np.float32 if g.endswith("32") else np.float64)
    return time.perf_counter() - t0


#: The groups that the book's pages use: every simulation of the book runs in float64 (the float32
#: kernels serve the tests, the benchmark and readers who ask for ``dtype=np.float32``).
BOOK_GROUPS = ("autoencoder-f64", "platonic-f64", "others")


def _bundles(groups, jobs: int) -> list:
    """The ``groups`` dealt to at most ``jobs`` processes, the slowest first, each to the process with
    the least work so far (``_COST``); within a process in the order of :data:`GROUPS`."""
    bundles: list = [[] for _ in range(min(jobs, len(groups)))]
    load = [0.0] * len(bundles)
    for g in sorted(groups, key=lambda g: (-_COST[g], GROUPS.index(g))):
        i = load.index(min(load))
        bundles[i].append(g)
        load[i] += _COST[g]
    return [sorted(b, key=GROUPS.index) for b in bundles]


def precompile(jobs: int = 2, *, groups=GROUPS, timeout: float = 600.0) -> float:
    """Compile kernels into the disk cache, the ``groups`` side by side in ``jobs`` processes.

    The groups are dealt to the processes before they start, the slowest first, each to the process
    with the least work so far: each process imports the library and numba once, however many
    groups it compiles (five processes for five groups paid those imports five times).

    Parameters
    ----------
    jobs : int
        Processes, ``1 ≤ jobs ≤ 5`` (at most one per group; 2, one per core of the reference machine).
    groups : sequence of str
        Which of :data:`GROUPS` to compile (all by default; :data:`BOOK_GROUPS` for the book's pages),
        non-empty, each at most once; within a process in the order of :data:`GROUPS`.
    timeout : float
        Seconds, ``0 < timeout ≤ 86400``, after which a process is stopped and a ``RuntimeError`` raised.

    Returns
    -------
    float
        The wall-clock seconds it took.

    Raises
    ------
    ValueError
        If ``jobs`` or ``timeout`` is out of range (a ``TypeError`` if not a number), or ``groups``
        is empty, repeats a group or names one not in :data:`GROUPS`.
    RuntimeError
        If a process fails (its groups and error output are in the message) or runs past ``timeout``.
    """
    jobs = check_int("jobs", jobs, minimum=1, maximum=len(GROUPS))
    timeout = check_positive("timeout", timeout)
    if timeout > 86_400:
        raise ValueError(f"timeout must lie in (0, 86400] seconds, got {timeout!r}")
    if isinstance(groups, str):
        groups = (groups,)
    try:
        groups = tuple(groups)
    except TypeError:
        raise ValueError(f"groups must be a sequence of names from {GROUPS}, got {groups!r}") from None
    for g in groups:
        check_choice("groups", g, GROUPS)
    if not groups or len(set(groups)) != len(groups):
        raise ValueError(f"groups must name each of {GROUPS} at most once, and at least one, got {groups!r}")
    t0 = time.perf_counter()

    def run(bundle):
        code = f"from symbreak.precompile import compile_kernels\nfor g in {tuple(bundle)!r}:\n    compile_kernels(g)"
        names = " and ".join(repr(g) for g in bundle)
        try:
            p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"compiling the kernels of group {names} took over {timeout} s") from None
        if p.returncode != 0:
            raise RuntimeError(f"compiling the kernels of group {names} failed:\n{p.stderr[-4000:]}")

    bundles = _bundles(groups, jobs)
    with ThreadPoolExecutor(len(bundles)) as pool:
        list(pool.map(run, bundles))
    return time.perf_counter() - t0


def main(argv=None) -> None:
    """``python -m symbreak.precompile [--jobs N] [--book]``: compile the kernels (every group, or
    with ``--book`` those of :data:`BOOK_GROUPS`, the book's pages), print the seconds taken."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m symbreak.precompile", description="Compile the numba kernels into the disk cache."
    )
    parser.add_argument("--jobs", type=int, default=2, choices=range(1, len(GROUPS) + 1),
                        help=f"processes at a time, 1 to {len(GROUPS)} (default 2)")  # fmt: skip
    parser.add_argument("--book", action="store_true",
                        help=f"only the kernels the book's pages use: {', '.join(BOOK_GROUPS)}")  # fmt: skip
    args = parser.parse_args(argv)
    seconds = precompile(args.jobs, groups=BOOK_GROUPS if args.book else GROUPS)
    print(f"numba kernels compiled or loaded from the cache in {seconds:.1f} s")


if __name__ == "__main__":  # pragma: no cover
    main()
