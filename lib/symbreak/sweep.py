"""Sweeps: one run per point of a parameter grid, mapped through any executor.

A phase diagram (the EoS ceiling over a grid of learning rates and batch sizes), a learning-rate
sweep or a study of thousands of seeds is a set of independent runs. :func:`sweep` maps a function
over the points of a grid through any :class:`concurrent.futures.Executor`:

* by default a local pool of processes (one per core, each running its simulation on one thread);
* a thread pool, or no pool at all (``executor="serial"``);
* a Dask cluster: ``Client(...).get_executor()`` from the optional extra ``symbreak[distributed]``
  (``pip install "symbreak[distributed]"``), which spreads the points over the cluster's workers.

Each point's seed is derived from the sweep's ``seed`` and the point's index in the grid, never
from the worker that runs it, so the results are the same on any executor and any number of
workers (and a point's result does not change when other points are added after it).

Contents
--------
:func:`grid_points`
    The points of a grid (the Cartesian product of named value lists), in order.
:func:`point_seed`
    The seed of point ``i`` of a sweep.
:func:`sweep`, :class:`SweepResult`
    Map a function over a grid; results in grid order, with a helper to shape them as the grid.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import multiprocessing
import os
from dataclasses import dataclass

import numpy as np

from .rng import _seed_sequence
from .validation import check_int

__all__ = ["grid_points", "point_seed", "sweep", "SweepResult"]


def grid_points(grid) -> tuple[list[dict], tuple[int, ...]]:
    """The points of ``grid`` in order, and the grid's shape.

    Parameters
    ----------
    grid : dict of sequences, or sequence of dict
        ``{"eta": [0.01, 0.02], "batch_size": [32, 64]}`` gives the Cartesian product (the last
        name varies fastest), shape ``(2, 2)``; a sequence of dicts gives those points, shape
        ``(n,)``.

    Raises
    ------
    ValueError
        If the grid is empty or a value list is empty.
    TypeError
        If ``grid`` is neither a dict nor a sequence of dicts.
    """
    if isinstance(grid, dict):
        if not grid:
            raise ValueError("grid must name at least one parameter")
        names = list(grid)
        values = []
        for name in names:
            v = list(np.atleast_1d(grid[name])) if np.ndim(grid[name]) <= 1 else list(grid[name])
            if not v:
                raise ValueError(f"grid[{name!r}] must hold at least one value")
            values.append([x.item() if isinstance(x, np.generic) else x for x in v])
        points = [dict(zip(names, combo)) for combo in itertools.product(*values)]
        return points, tuple(len(v) for v in values)
    if isinstance(grid, (list, tuple)) and grid and all(isinstance(p, dict) for p in grid):
        return [dict(p) for p in grid], (len(grid),)
    if isinstance(grid, (list, tuple)) and not grid:
        raise ValueError("grid must hold at least one point")
    raise TypeError("grid must be a dict of value lists or a list of dicts")


def point_seed(seed, index: int) -> np.random.SeedSequence:
    """The seed of point ``index`` of a sweep with seed ``seed``: the ``index``-th child of the seed's
    :class:`~numpy.random.SeedSequence` (accepted wherever :func:`symbreak.rng.make_rng` takes a
    seed), depending only on ``(seed, index)``."""
    ss = _seed_sequence(seed)
    index = check_int("index", index, minimum=0)
    return np.random.SeedSequence(ss.entropy, spawn_key=tuple(ss.spawn_key) + (index,), pool_size=ss.pool_size)


@dataclass
class SweepResult:
    """Results of a sweep, in grid order.

    Attributes
    ----------
    points : list of dict
        The parameters of each point (without the fixed arguments).
    results : list
        ``fn``'s return value at each point.
    shape : tuple of int
        The grid's shape (``len(points) == prod(shape)``).
    """

    points: list
    results: list
    shape: tuple

    def __len__(self) -> int:
        return len(self.results)

    def __iter__(self):
        return iter(zip(self.points, self.results))

    def array(self, key=None) -> np.ndarray:
        """The results (or ``key(result)`` of each) as an array of the grid's shape (plus the
        shape of each value)."""
        vals = [r if key is None else key(r) for r in self.results]
        arr = np.asarray(vals)
        return arr.reshape(self.shape + arr.shape[1:])


def _one_thread():
    """Initializer of local worker processes: each simulation on one thread (the processes are the parallelism)."""
    os.environ["SYMBREAK_THREADS"] = "1"
    os.environ["OMP_NUM_THREADS"] = "1"


def _call(fn, kwargs):
    return fn(**kwargs)


def _default_executor(max_workers):
    try:
        ctx = multiprocessing.get_context("fork")  # notebook-defined functions work in forked workers
    except ValueError:  # pragma: no cover - platforms without fork
        ctx = multiprocessing.get_context("spawn")
    return concurrent.futures.ProcessPoolExecutor(max_workers=max_workers, mp_context=ctx, initializer=_one_thread)


def sweep(
    fn, grid, *, seed=None, seed_arg: str | None = "seed", executor=None, max_workers: int | None = None, **fixed
) -> SweepResult:
    """Run ``fn(**point, **fixed)`` at every point of ``grid`` through an executor.

    Parameters
    ----------
    fn : callable
        The run, e.g. :func:`symbreak.autoencoder.simulate_sgd`. For process pools and clusters it
        must be picklable (a module-level function, or ``functools.partial`` of one).
    grid : dict of sequences, or sequence of dict
        See :func:`grid_points`.
    seed : int, tuple of int or None
        If given (and ``seed_arg`` is not None), point ``i`` is called with
        ``seed_arg=point_seed(seed, i)``: independent streams per point, the same on any executor.
    seed_arg : str or None
        Name of ``fn``'s seed argument.
    executor : concurrent.futures.Executor, "serial" or None
        Where the points run. ``None``: a local process pool of ``max_workers`` processes (default:
        the number of cores), shut down afterwards; ``"serial"``: in this process, in order; any
        executor (a thread pool, ``dask.distributed.Client(...).get_executor()``, ...) is used as
        given and left open.
    max_workers : int, optional
        Size of the default process pool.
    **fixed
        Arguments passed unchanged to every call.

    Returns
    -------
    SweepResult
        The results in grid order.

    Raises
    ------
    ValueError, TypeError
        On a bad grid or executor; any exception of a run is re-raised (the remaining points are
        cancelled).
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    points, shape = grid_points(grid)
    calls = []
    for i, p in enumerate(points):
        kw = dict(fixed)
        kw.update(p)
        if seed is not None and seed_arg is not None:
            if seed_arg in p or seed_arg in fixed:
                raise ValueError(f"seed is given, so {seed_arg!r} must not be a grid parameter or a fixed argument")
            kw[seed_arg] = point_seed(seed, i)
        calls.append(kw)
    if isinstance(executor, str):
        if executor != "serial":
            raise ValueError(f"executor must be an Executor, 'serial' or None, got {executor!r}")
        return SweepResult(points, [fn(**kw) for kw in calls], shape)
    own = executor is None
    if own:
        workers = None if max_workers is None else check_int("max_workers", max_workers, minimum=1)
        executor = _default_executor(
            workers
            or max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))
        )
    elif not hasattr(executor, "submit"):
        raise TypeError("executor must be a concurrent.futures.Executor (something with .submit)")
    futures = []
    try:
        futures = [executor.submit(_call, fn, kw) for kw in calls]
        results = [f.result() for f in futures]
    except BaseException:
        for f in futures:
            f.cancel()
        raise
    finally:
        if own:
            executor.shutdown(wait=True, cancel_futures=True)
    return SweepResult(points, results, shape)
