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
import math
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from . import engine
from .rng import _seed_sequence
from .validation import check_int

__all__ = ["grid_points", "point_seed", "sweep", "SweepResult", "SweepPointError", "MAX_POINTS"]

#: Largest number of points a grid may have: each point is a dict held in memory (about
#: ``_BYTES_PER_POINT`` bytes plus its values) and one call, so a larger grid is refused before any is built.
MAX_POINTS = 10**6
_BYTES_PER_POINT = 400
#: Seconds that the sweep waits, after Ctrl-C or a failing point, for the points still running to stop.
_STOP_GRACE = 0.5


def _value_list(name, values) -> list:
    """The values of grid parameter ``name`` as a list (a scalar is one value); sets are refused (no order)."""
    if isinstance(values, (set, frozenset, Mapping)) or (
        not isinstance(values, (str, bytes, Sequence, np.ndarray, range)) and hasattr(values, "__iter__")
    ):
        raise TypeError(
            f"grid[{name!r}] must be a sequence of values (list, tuple, range or array) or one value, "
            f"got {type(values).__name__} (unordered or one-shot: the grid's order would not be defined)"
        )
    if (
        isinstance(values, (str, bytes))
        or not isinstance(values, (Sequence, np.ndarray))
        or (isinstance(values, np.ndarray) and values.ndim == 0)
    ):
        return [values.item() if isinstance(values, np.generic) else values]
    n = len(values)  # a range or an array: its length, before any list is made
    if n > MAX_POINTS:
        raise ValueError(f"grid[{name!r}] holds {n} values, more than MAX_POINTS = {MAX_POINTS} points")
    return [x.item() if isinstance(x, np.generic) else x for x in (values if n else [])]


def _check_size(n_points):
    if n_points > MAX_POINTS:
        raise ValueError(
            f"grid has {n_points:.4g} points, more than MAX_POINTS = {MAX_POINTS}: building them would "
            f"take about {n_points * _BYTES_PER_POINT / 2**30:.3g} GiB and {n_points:.4g} calls; split the sweep"
        )


def grid_points(grid) -> tuple[list[dict], tuple[int, ...]]:
    """The points of ``grid`` in order, and the grid's shape.

    Parameters
    ----------
    grid : dict of sequences, or sequence of dict
        ``{"eta": [0.01, 0.02], "batch_size": [32, 64]}`` gives the Cartesian product (the last
        name varies fastest), shape ``(2, 2)``; a sequence of dicts gives those points, shape
        ``(n,)``. A value that is not a sequence (a number, a string) is one value; sets and other
        unordered or one-shot iterables are refused. At most :data:`MAX_POINTS` points: the size
        is checked before any point is built.

    Raises
    ------
    ValueError
        If the grid is empty, a value list is empty, or the grid has more than ``MAX_POINTS`` points.
    TypeError
        If ``grid`` is neither a dict nor a sequence of dicts, a parameter name is not a string, or
        a value list is a set (or another unordered or one-shot iterable).
    """
    if isinstance(grid, Mapping):
        if not grid:
            raise ValueError("grid must name at least one parameter")
        names = list(grid)
        for name in names:
            if not isinstance(name, str) or not name.isidentifier():
                raise TypeError(f"grid's parameter names must be identifiers (keyword arguments), got {name!r}")
        values = []
        for name in names:
            v = _value_list(name, grid[name])
            if not v:
                raise ValueError(f"grid[{name!r}] must hold at least one value")
            values.append(v)
        _check_size(math.prod(len(v) for v in values))
        points = [dict(zip(names, combo)) for combo in itertools.product(*values)]
        return points, tuple(len(v) for v in values)
    if isinstance(grid, (list, tuple)) and not grid:
        raise ValueError("grid must hold at least one point")
    if isinstance(grid, (list, tuple)):
        _check_size(len(grid))
        if all(isinstance(p, Mapping) for p in grid):
            for i, p in enumerate(grid):
                bad = [k for k in p if not isinstance(k, str) or not k.isidentifier()]
                if bad:
                    raise TypeError(f"grid[{i}]'s parameter names must be identifiers, got {bad[0]!r}")
            return [dict(p) for p in grid], (len(grid),)
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


class SweepPointError(RuntimeError):
    """A point of a sweep failed: the message names the point's index and parameters, the original
    exception is chained (``__cause__``).

    The error raised is also an instance of the original exception's type (when that type can be
    subclassed), so that ``except ValueError`` still catches a point's ``ValueError``; the original
    exception's attributes are copied onto it (a :class:`~symbreak.engine.DivergenceError`'s ``step``).

    Attributes
    ----------
    index : int
        The point's index in the grid (row-major order of :func:`grid_points`).
    point : dict
        The point's parameters (without the fixed arguments and the seed).
    """

    def __init__(self, message, index=None, point=None):
        super().__init__(message)
        self.index, self.point = index, point

    def __str__(self):
        return self.args[0] if self.args else ""


def _point_error(exc: BaseException, index: int, point: dict) -> BaseException:
    msg = f"sweep point {index} {point!r} failed: {type(exc).__name__}: {exc}"
    base = type(exc)
    try:
        cls = (
            base
            if issubclass(base, SweepPointError)
            else type(f"SweepPointError[{base.__name__}]", (SweepPointError, base), {})
        )
        err = cls.__new__(cls, msg)
        err.__dict__.update(getattr(exc, "__dict__", {}))
        BaseException.__init__(err, msg)
        err.index, err.point = index, dict(point)
    except Exception:  # noqa: BLE001 - an exception type that cannot be combined: the plain wrapper
        err = SweepPointError(msg, index, dict(point))
    return err


def _one_thread():
    """Initializer of local worker processes: each simulation on one thread (the processes are the
    parallelism); Ctrl-C is the parent's to handle (it terminates the workers), not each worker's."""
    os.environ["SYMBREAK_THREADS"] = "1"
    os.environ["OMP_NUM_THREADS"] = "1"
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _call(fn, kwargs, stop=None):
    if stop is None:
        return fn(**kwargs)
    # in a thread: symbreak's simulations stop at their next engine.check_interrupt() once the sweep stops
    old = getattr(engine._local, "stop", None)
    engine._local.stop = stop
    try:
        if stop.is_set():
            raise engine._Stopped()
        return fn(**kwargs)
    finally:
        engine._local.stop = old


def _default_executor(max_workers):
    try:
        ctx = multiprocessing.get_context("fork")  # notebook-defined functions work in forked workers
    except ValueError:  # pragma: no cover - platforms without fork
        ctx = multiprocessing.get_context("spawn")
    return concurrent.futures.ProcessPoolExecutor(max_workers=max_workers, mp_context=ctx, initializer=_one_thread)


def _terminate_workers(procs) -> None:
    """Terminate the worker processes of a local process pool (points still running are abandoned)."""
    for p in procs:
        if p.is_alive():
            p.terminate()
    deadline = time.monotonic() + 2.0
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
        if p.is_alive():  # pragma: no cover - a worker that ignores SIGTERM
            p.kill()
    # a worker can still be listed as running for a moment (seen: one of 2 at about 1 run in 6); wait
    # until multiprocessing has reaped every one, terminating again, within the same deadline
    while time.monotonic() < deadline:
        alive = [c for c in multiprocessing.active_children() if c in procs]
        if not alive:
            break
        for c in alive:
            c.terminate()
        time.sleep(0.01)


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
        Size of the default process pool (1 to 4096); must be None when an executor is given.
    **fixed
        Arguments passed unchanged to every call.

    Returns
    -------
    SweepResult
        The results in grid order.

    Raises
    ------
    ValueError, TypeError
        On a bad grid or executor (:func:`grid_points`).
    SweepPointError
        When a point fails: the message names the point's index and parameters, the point's exception
        is chained, and the error is also an instance of that exception's type. The remaining points
        are cancelled.
    KeyboardInterrupt
        On Ctrl-C, within about a second: the queued points are cancelled; the default process pool's
        workers are terminated (they ignore SIGINT themselves, so the same happens when only this
        process gets the signal, as in a notebook); on a thread pool the running points stop at their
        next :func:`symbreak.engine.check_interrupt` (every simulation of symbreak calls it) and the
        sweep waits for them at most half a second; any other executor's running points are left to
        finish (its queued points are cancelled).
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    if seed_arg is not None and (not isinstance(seed_arg, str) or not seed_arg.isidentifier()):
        raise TypeError(f"seed_arg must be an argument name (a str) or None, got {seed_arg!r}")
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
        results = []
        for i, kw in enumerate(calls):
            try:
                results.append(fn(**kw))
            except Exception as exc:
                raise _point_error(exc, i, points[i]) from exc
        return SweepResult(points, results, shape)
    own = executor is None
    children_before = set(multiprocessing.active_children()) if own else set()
    if own:
        workers = None if max_workers is None else check_int("max_workers", max_workers, minimum=1, maximum=4096)
        executor = _default_executor(
            workers
            or max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))
        )
    elif not hasattr(executor, "submit"):
        raise TypeError("executor must be a concurrent.futures.Executor (something with .submit)")
    elif max_workers is not None:
        raise ValueError("max_workers sizes the default process pool: it must be None when an executor is given")
    threads = isinstance(executor, concurrent.futures.ThreadPoolExecutor)
    stop = threading.Event() if threads else None
    futures = []
    clean = False
    try:
        futures = [executor.submit(_call, fn, kw, stop) if threads else executor.submit(_call, fn, kw) for kw in calls]
        pending = set(futures)
        while pending:
            # short waits keep the main thread responsive to Ctrl-C; the first failure stops the sweep
            done, pending = concurrent.futures.wait(
                pending, timeout=0.1, return_when=concurrent.futures.FIRST_EXCEPTION
            )
            if any(not f.cancelled() and f.exception() is not None for f in done):
                break
        for i, f in enumerate(futures):
            if f.done() and not f.cancelled() and f.exception() is not None:
                exc = f.exception()
                if isinstance(exc, engine._Stopped):
                    continue
                raise _point_error(exc, i, points[i]) from exc
        results = [f.result() for f in futures]
        clean = True
    finally:
        if not clean and own:
            # Ctrl-C or a failing point: the pool's own thread cancels the queued points (cancelling them
            # here races with it: it would set BrokenProcessPool on a cancelled future), the workers go
            procs = list((getattr(executor, "_processes", None) or {}).values())  # shutdown forgets them
            executor.shutdown(wait=False, cancel_futures=True)
            # and any worker the pool started that its table no longer lists (seen once: one worker
            # left alive after Ctrl-C): every child process started since this sweep began
            procs += [c for c in multiprocessing.active_children() if c not in children_before and c not in procs]
            _terminate_workers(procs)
        elif not clean:  # an executor we do not own: cancel the queued points, stop the running ones
            for f in futures:
                f.cancel()
            if stop is not None:
                stop.set()
            concurrent.futures.wait(futures, timeout=_STOP_GRACE)  # briefly: never for the queued points
        elif own:
            executor.shutdown(wait=True)
    return SweepResult(points, results, shape)
