"""The shared simulation engine: what every chapter's SGD simulations are built from.

For linear networks trained on Gaussian data with the square loss, a minibatch enters the SGD
update only through its empirical second-moment matrix ``Σ̂ = X Xᵀ / B``. Since ``B Σ̂`` is
Wishart-distributed, ``W_d(B, Σ)``, it can be drawn *exactly* with the Bartlett decomposition:
``d(d+1)/2`` random numbers per step instead of ``d·B``, and no ``d×B`` data matrix. Chapters
run many replicas (seeds, learning rates, batch sizes) as one batched ensemble of stacked
matrices, split into chunks that a thread pool spreads over the cores (NumPy releases the GIL
inside its kernels), and check the ensemble for divergence as it goes; :func:`run_ensemble` is
that loop, shared by every chapter's trainer.

Contents
--------
:func:`wishart_covariance`
    Exact minibatch covariances ``Σ̂`` by the Bartlett decomposition.
:func:`sample_covariance`
    The same distribution by drawing the data points (reference sampler, and ``B < d``).
:func:`record_steps`
    The steps at which an ensemble is recorded.
:class:`DivergenceError`, :func:`check_divergence`
    Detection and clear reporting of SGD run past its stability edge.
:func:`n_workers`, :func:`run_chunks`
    Deterministic chunked execution on a thread pool.
:func:`concurrently`
    Independent runs (of two networks, two tasks) side by side on the same thread pool.
:class:`WishartBlockSampler`
    Blocks of exact minibatch covariances for a whole ensemble of replicas at once (each replica
    with its own batch size and a multiplier such as its learning rate, and its own random
    stream), into reused buffers, in float64 or float32: the fast path of the batched SGD drivers.
:func:`replica_streams`
    One random stream per replica, depending only on ``(seed, replica)``.
:func:`run_ensemble`, :class:`Configuration`, :class:`EnsembleResult`
    The one training loop of the book: a chapter's step, run for every replica of several
    configurations, with chunking over cores, record grids, divergence checks, Ctrl-C
    (:func:`check_interrupt`) and a progress bar.
:class:`TorchWishartBlockSampler`
    The minibatch draws on a torch device (the GPU path).

Extra: ``symbreak[torch]`` for :class:`TorchWishartBlockSampler` (PyTorch); the rest needs only the
core dependencies (NumPy, and numba for the compiled sampler in ``symbreak._sfc64``).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

import numpy as np

from .progress import ProgressCounter
from .rng import _seed_sequence, spawn_rngs
from .validation import MAX_DRAWS, MAX_STEPS, check_array, check_int, check_positive, finite_result
from .wishart import (  # noqa: F401  (the samplers moved to symbreak.wishart; these names stay here too)
    TorchWishartBlockSampler,
    WishartBlockSampler,
    _aligned_zeros,
    _bartlett_kernel,
    _bartlett_products_reference,
    _check_keep_mask,
    _compiled,
    _torch_gamma,
    fill_normals,
)

__all__ = [
    "covariance_factor",
    "wishart_covariance",
    "sample_covariance",
    "record_steps",
    "DivergenceError",
    "check_divergence",
    "n_workers",
    "run_chunks",
    "concurrently",
    "WishartBlockSampler",
    "replica_streams",
    "fill_normals",
    "check_interrupt",
    "Configuration",
    "EnsembleResult",
    "run_ensemble",
    "TorchWishartBlockSampler",
]


def covariance_factor(cov) -> np.ndarray:
    """Return a factor ``L`` with ``L Lᵀ = Σ``: the square root of a diagonal given as a 1-D array
    of variances, or the lower Cholesky factor of a full symmetric positive-definite matrix.

    Raises
    ------
    ValueError
        If a variance is negative, or the matrix is not symmetric positive definite.
    """
    arr = check_array("cov", cov)
    if arr.ndim == 1:
        if np.any(arr < 0):
            raise ValueError("cov: variances must lie in [0, inf)")
        return np.sqrt(arr)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise ValueError(f"cov must be a 1-D array of variances or a square matrix, got shape {arr.shape}")
    if np.abs(arr - arr.T).max() > 1e-10 * max(np.abs(arr).max(), 1e-300):
        raise ValueError("cov must be symmetric")
    try:
        return np.linalg.cholesky(0.5 * (arr + arr.T))
    except np.linalg.LinAlgError:
        raise ValueError("cov must be positive definite") from None


def _apply_factor(factor: np.ndarray, m: np.ndarray) -> np.ndarray:
    """``L M Lᵀ`` for a stack ``M`` of symmetric matrices (diagonal ``L`` given as a vector)."""
    if factor.ndim == 1:
        return m * factor[:, None] * factor[None, :]
    return factor @ m @ factor.T


def _check_factor(factor) -> np.ndarray:
    """A covariance factor: a non-empty 1-D vector of standard deviations or a square matrix."""
    factor = check_array("factor", factor)
    if factor.ndim not in (1, 2) or factor.shape[0] == 0 or (factor.ndim == 2 and factor.shape[0] != factor.shape[1]):
        raise ValueError(
            "factor must be a non-empty vector of standard deviations (d,) or a square matrix (d, d), "
            f"got shape {factor.shape}"
        )
    return factor


def wishart_covariance(rng: np.random.Generator, factor, batch_size: int, size: int, *, dtype=np.float64) -> np.ndarray:
    """Draw ``size`` exact minibatch covariances ``Σ̂ = X Xᵀ / B`` of ``B`` Gaussian points.

    Uses the Bartlett decomposition: if ``A`` is lower triangular with ``A_ii² ~ χ²(B − i)``
    (``i = 0 .. d−1``) and ``A_ij ~ N(0, 1)`` below the diagonal, then ``A Aᵀ ~ W_d(B, I)`` and
    ``L A Aᵀ Lᵀ / B`` has exactly the law of the empirical covariance of ``B`` i.i.d.
    ``N(0, L Lᵀ)`` points. Needs ``B ≥ d``; for ``B < d`` the Wishart law is singular and the
    points are drawn instead (:func:`sample_covariance`, the same law).

    Parameters
    ----------
    rng : numpy.random.Generator
        Seeded generator.
    factor : array_like
        ``L`` with ``L Lᵀ = Σ``: a 1-D array of standard deviations (diagonal ``Σ``) or a
        lower-triangular matrix (see :func:`covariance_factor`).
    batch_size : int
        ``B ≥ 1``.
    size : int
        Number of independent draws.
    dtype : numpy dtype
        ``float64`` (default) or ``float32``.

    Returns
    -------
    numpy.ndarray, shape (size, d, d)
        Symmetric positive semi-definite matrices with mean ``Σ`` and
        ``Cov(Σ̂_ij, Σ̂_kl) = (Σ_ik Σ_jl + Σ_il Σ_jk) / B``.
    """
    factor = _check_factor(factor)
    batch_size = check_int("batch_size", batch_size, minimum=1)
    size = check_int("size", size, minimum=1, maximum=MAX_DRAWS)
    d = factor.shape[0]
    if size * d * d > 10 * MAX_DRAWS:
        raise ValueError(f"size * d² = {size * d * d} matrix entries exceeds {10 * MAX_DRAWS}: draw in chunks")
    if batch_size < d:
        return sample_covariance(rng, factor, batch_size, size, dtype=dtype)
    a = np.zeros((size, d, d), dtype=dtype)
    rows, cols = np.tril_indices(d, -1)
    a[:, rows, cols] = rng.standard_normal((size, rows.size), dtype=dtype)
    diag = np.arange(d)
    a[:, diag, diag] = np.sqrt(rng.chisquare(batch_size - diag, size=(size, d))).astype(dtype, copy=False)
    m = a @ a.transpose(0, 2, 1)
    m *= 1.0 / batch_size
    with np.errstate(over="ignore", invalid="ignore"):
        out = _apply_factor(factor.astype(dtype, copy=False), m)
    return finite_result("wishart_covariance", out)


def sample_covariance(
    rng: np.random.Generator, factor, batch_size: int, size: int, *, dtype=np.float64, return_samples: bool = False
):
    """Draw ``size`` minibatch covariances ``Σ̂ = X Xᵀ / B`` by drawing the ``B`` points.

    The reference sampler for :func:`wishart_covariance` (same law, ``d·B`` normals per draw).
    With ``return_samples=True`` also returns the points ``X`` of shape (size, d, B).
    """
    factor = _check_factor(factor)
    batch_size = check_int("batch_size", batch_size, minimum=1)
    size = check_int("size", size, minimum=1, maximum=MAX_DRAWS)
    d = factor.shape[0]
    if size * d * batch_size > 10 * MAX_DRAWS:
        raise ValueError(
            f"size * d * batch_size = {size * d * batch_size} data entries exceeds {10 * MAX_DRAWS}: draw in chunks"
        )
    z = rng.standard_normal((size, d, batch_size), dtype=dtype)
    x = factor[:, None] * z if factor.ndim == 1 else np.einsum("ij,njb->nib", factor.astype(dtype), z)
    with np.errstate(over="ignore", invalid="ignore"):
        cov = x @ x.transpose(0, 2, 1) / batch_size
    finite_result("sample_covariance", cov)
    return (cov, x) if return_samples else cov


def record_steps(steps: int, record_every: int) -> np.ndarray:
    """Steps at which an ensemble is recorded: ``0, r, 2r, ...`` and always the last step."""
    steps = check_int("steps", steps, minimum=0, maximum=MAX_STEPS)
    record_every = check_int("record_every", record_every, minimum=1)
    if steps // record_every > MAX_DRAWS:
        raise ValueError(f"steps / record_every = {steps // record_every} records exceeds {MAX_DRAWS}")
    grid = np.arange(0, steps + 1, record_every)
    if grid[-1] != steps:
        grid = np.append(grid, steps)
    return grid


class DivergenceError(RuntimeError):
    """SGD (or gradient descent) left every bounded region: the run is past its stability edge.

    The constructor checks that ``step`` and ``replica`` are integers ``>= 0`` and records ``value``
    and ``limit`` as given (it is raised by ``check_divergence``, which validates ``limit``).

    Attributes
    ----------
    step : int
        The first step at which the divergence was seen.
    replica : int
        Index of the first replica that diverged.
    params : dict
        The hyper-parameters of that replica (learning rate, batch size, ...).
    value : float
        The weight magnitude that triggered the error, recorded as seen: ``inf`` or ``NaN`` when the
        weights overflowed (the usual case), by design; the error reports it, it is never a result.
    limit : float
        The bound that ``value`` exceeded (``inf`` when only non-finite magnitudes count).
    method : str
        ``"SGD"``, or the name of the other method that diverged.
    """

    def __init__(self, step: int, replica: int, params: dict, value: float, limit: float, method: str = "SGD"):
        step, replica = check_int("step", step, minimum=0), check_int("replica", replica, minimum=0)
        self.step, self.replica, self.params, self.value, self.limit = step, replica, dict(params), value, limit
        self.method = method
        desc = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in self.params.items())
        hint = (
            "The learning rate is past the stability edge (eta * lambda_max(Hessian) > 2); lower eta or raise "
            "the batch size."
            if method == "SGD"
            else "The step size is past the stability edge; lower it."
        )
        super().__init__(
            f"{method} diverged at step {step} (replica {replica}; {desc}): weight magnitude "
            f"{value:.3g} exceeds {limit:.3g}. {hint}"
        )


def check_divergence(magnitude, *, step: int, limit: float, params=None, method: str = "SGD") -> None:
    """Raise :class:`DivergenceError` if any replica's magnitude is non-finite or above ``limit``.

    Parameters
    ----------
    magnitude : array_like, shape (R,)
        A per-replica size of the state (e.g. the largest absolute weight).
    step : int
        Current step, for the report.
    limit : float
        Magnitude regarded as divergent.
    params : callable or dict, optional
        ``params(r)`` (or ``params`` itself) gives the hyper-parameters of replica ``r`` for the report.
    method : str
        Name of the algorithm in the report (``"SGD"``, ``"gradient descent"``, ...).
    """
    limit = check_positive("limit", limit, allow_inf=True)
    step = check_int("step", step)
    mag = check_array("magnitude", magnitude, finite=False).reshape(-1)
    bad = ~np.isfinite(mag) | (mag > limit)
    if np.any(bad):
        r = int(np.flatnonzero(bad)[0])
        p = params(r) if callable(params) else (params or {})
        raise DivergenceError(step, r, p, float(mag[r]), float(limit), method)


def n_workers() -> int:
    """Threads used by :func:`run_chunks`: ``SYMBREAK_THREADS`` if set, else the CPU count."""
    raw = os.environ.get("SYMBREAK_THREADS")
    if raw:
        return check_int("SYMBREAK_THREADS", int(raw) if raw.strip().isdigit() else raw, minimum=1)
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


def run_chunks(fn, n_items: int, *, n_chunks: int = 2, seed=None):
    """Run ``fn(index_slice, rng)`` over ``n_chunks`` fixed chunks of ``range(n_items)`` in threads.

    The chunking and each chunk's random stream depend only on ``n_items``, ``n_chunks`` and
    ``seed``, never on the number of cores, so results are reproducible on any machine; the
    chunks run concurrently on :func:`n_workers` threads. Returns the list of ``fn`` results in
    chunk order.

    Ctrl-C (``KeyboardInterrupt``) stops every chunk at its next :func:`check_interrupt` and
    returns only when no worker thread is left running; an exception in one chunk stops the others
    the same way and is re-raised.
    """
    n_items = check_int("n_items", n_items, minimum=1)
    n_chunks = min(check_int("n_chunks", n_chunks, minimum=1, maximum=10_000), n_items)
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {fn!r}")
    bounds = np.linspace(0, n_items, n_chunks + 1).round().astype(int)
    slices = [slice(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]
    rngs = spawn_rngs(seed, n_chunks)
    return _map_threads(fn, list(zip(slices, rngs)), min(n_workers(), n_chunks))


def concurrently(calls, *, workers: int | None = None) -> list:
    """Call each of ``calls`` (callables without arguments) on worker threads; their results, in order.

    For independent runs whose steps are compiled without the GIL (the SGD and gradient-descent steps
    of the engine's models): two of them, e.g. the same trainer on two networks, then run on two
    cores. A call's numbers are those it returns when called alone (its random streams are its
    own; the engine never draws from a shared stream). An exception in one call stops the others
    (within one block of steps) and is raised; so is Ctrl-C.

    Parameters
    ----------
    calls : sequence of callable
        The runs, each called as ``call()``.
    workers : int, optional
        Threads (default :func:`n_workers`, at most one per call).

    Returns
    -------
    list
        ``[call() for call in calls]``.
    """
    if isinstance(calls, (str, bytes)) or not hasattr(calls, "__iter__"):
        raise TypeError(f"calls must be a sequence of callables, got {type(calls).__name__}")
    calls = list(calls)
    bad = [c for c in calls if not callable(c)]
    if bad:
        raise TypeError(f"calls must be callables without arguments, got {bad[0]!r}")
    workers = n_workers() if workers is None else check_int("workers", workers, minimum=1)
    return _map_threads(lambda c: c(), [(c,) for c in calls], min(workers, max(len(calls), 1)))


class _Stopped(Exception):
    """Raised inside a worker thread that was asked to stop (Ctrl-C or another chunk failed)."""


_local = threading.local()


def check_interrupt() -> None:
    """Stop the calling worker thread if its run was interrupted (call it once per block of steps).

    Worker threads started by :func:`run_chunks` or :func:`run_ensemble` call it between blocks
    of steps; in the main thread it does nothing (Ctrl-C raises ``KeyboardInterrupt`` there
    directly).
    """
    ev = getattr(_local, "stop", None)
    if ev is not None and ev.is_set():
        raise _Stopped()


def _map_threads(fn, args, workers):
    """``[fn(*a) for a in args]`` on ``workers`` threads, interruptible, leaving no thread behind."""
    if workers <= 1 or len(args) <= 1:
        return [fn(*a) for a in args]
    stop = threading.Event()

    def call(a):
        _local.stop = stop
        try:
            return fn(*a)
        finally:
            _local.stop = None

    pool = ThreadPoolExecutor(max_workers=workers)
    futures = [pool.submit(call, a) for a in args]
    try:
        pending = futures
        while pending:
            # short timeouts keep the main thread responsive to Ctrl-C
            done, pending = wait(pending, timeout=0.05, return_when=FIRST_EXCEPTION)
            if any(f.exception() is not None for f in done):
                break
        errors = [f.exception() for f in futures if f.done() and f.exception() is not None]
        real = [e for e in errors if not isinstance(e, _Stopped)]
        if real:
            raise real[0]
        return [f.result() for f in futures]
    finally:
        stop.set()
        for f in futures:
            f.cancel()
        pool.shutdown(wait=True)


#: Memory of one replica's stream (a Generator on SFC64 and its SeedSequence), for the size check.
_STREAM_BYTES = 1200


def replica_streams(seed, replicas) -> list[np.random.Generator]:
    """Independent random streams, one per replica, where replica ``r``'s stream depends only on
    ``(seed, r)``.

    Stream ``r`` is the ``r``-th child of the seed's :class:`~numpy.random.SeedSequence` (what
    ``SeedSequence(seed).spawn(n)[r]`` gives for any ``n > r``), driving the SFC64 bit generator
    (NumPy's fastest). So a replica's trajectory never depends on how many replicas run, how
    they are chunked or how many threads run them.

    Parameters
    ----------
    seed : int, tuple of int, numpy.random.SeedSequence or None
        As in :func:`symbreak.rng.make_rng`.
    replicas : iterable of int
        Replica indices (at most ``MAX_DRAWS`` of them).
    """
    ss = _seed_sequence(seed)
    if isinstance(replicas, (str, bytes)) or not hasattr(replicas, "__iter__"):
        raise TypeError(
            f"replicas must be an iterable of replica indices (e.g. range(n)), "
            f"got {type(replicas).__name__} {replicas!r}"
        )
    if hasattr(replicas, "__len__") and len(replicas) > MAX_DRAWS:
        raise ValueError(
            f"replicas holds {len(replicas)} indices, more than MAX_DRAWS = {MAX_DRAWS}: the streams would take "
            f"about {len(replicas) * _STREAM_BYTES / 2**30:.3g} GiB"
        )
    out = []
    for r in replicas:
        r = check_int("replica", r, minimum=0)
        child = np.random.SeedSequence(ss.entropy, spawn_key=tuple(ss.spawn_key) + (r,), pool_size=ss.pool_size)
        out.append(np.random.Generator(np.random.SFC64(child)))
    return out


# --------------------------------------------------------------------------------------------
# the ensemble runner
# --------------------------------------------------------------------------------------------
@dataclass
class Configuration:
    """One configuration of an ensemble: its replicas share a record grid and hyper-parameters.

    Attributes
    ----------
    replicas : int
        Number of replicas (seeds) of this configuration.
    record_at : numpy.ndarray of int
        Steps at which the state is recorded, increasing, starting at 0; the last is the number of
        steps the configuration runs.
    params : dict
        Hyper-parameters (reported by :class:`DivergenceError` and kept in the result).
    """

    replicas: int
    record_at: np.ndarray
    params: dict = field(default_factory=dict)

    def __post_init__(self):
        self.replicas = check_int("replicas", self.replicas, minimum=1)
        if not isinstance(self.params, dict):
            raise TypeError(f"params must be a dict of hyper-parameters, got {type(self.params).__name__}")
        grid = np.asarray(self.record_at)
        if (
            grid.ndim != 1
            or grid.size == 0
            or not np.issubdtype(grid.dtype, np.integer)
            or grid[0] != 0
            or np.any(np.diff(grid) <= 0)
        ):
            raise ValueError("record_at must be a 1-D increasing array of integer steps starting at 0")
        self.record_at = grid.astype(np.int64)


@dataclass
class EnsembleResult:
    """What :func:`run_ensemble` returns for one configuration.

    Attributes
    ----------
    steps : numpy.ndarray, shape (T,)
        Recorded steps.
    records : dict of numpy.ndarray
        Each recorded quantity, axes ``[replica, record, ...]``.
    final : dict of numpy.ndarray
        The final state, axes ``[replica, ...]`` (what the model's ``final`` returns).
    params : dict
        The configuration's hyper-parameters.
    tau : numpy.ndarray, shape (T,) or None
        The slow time of each record, when the chapter defines one.
    """

    steps: np.ndarray
    records: dict
    final: dict
    params: dict
    tau: np.ndarray | None = None

    def __post_init__(self):
        steps = np.asarray(self.steps)
        if steps.ndim != 1 or not np.issubdtype(steps.dtype, np.integer) or np.any(np.diff(steps) <= 0):
            raise TypeError("steps must be a 1-D increasing array of integer steps")
        for name in ("records", "final", "params"):
            if not isinstance(getattr(self, name), dict):
                raise TypeError(f"{name} must be a dict, got {type(getattr(self, name)).__name__}")
        if self.tau is not None:
            self.tau = check_array("tau", self.tau, ndim=1, shape=(steps.size,))
        self.steps = steps

    def __getattr__(self, name):
        records = self.__dict__.get("records", {})
        if name in records:
            return records[name]
        raise AttributeError(name)


def _balanced_groups(work, n_groups):
    """Split indices into ``n_groups`` groups of nearly equal total work (greedy, deterministic)."""
    groups = [[] for _ in range(n_groups)]
    loads = np.zeros(n_groups)
    for r in sorted(range(len(work)), key=lambda i: (-work[i], i)):
        g = int(np.argmin(loads))
        groups[g].append(r)
        loads[g] += work[r]
    return [np.array(sorted(g), dtype=np.int64) for g in groups if g]


def _divergence(mag, limit):
    mag = np.asarray(mag, dtype=float)
    bad = ~np.isfinite(mag) | (mag > limit)
    return int(np.flatnonzero(bad)[0]) if bad.any() else None


def _run_group(model_factory, reps, grids, params, streams, *, check_every, block, limit, method, counter):
    """Run the replicas ``reps`` (global indices) as one batched ensemble; one thread's share."""
    n = len(reps)
    model = model_factory(reps, streams)
    fused = callable(getattr(model, "steps", None))
    active = np.arange(n)
    ptr = np.zeros(n, dtype=np.int64)
    out = [[] for _ in range(n)]
    finals = [None] * n
    step = 0
    block = max(check_every, (block // check_every) * check_every)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        while active.size:
            stop = min(int(grids[r][ptr[r]]) for r in active)
            while step < stop:
                m = min(block, stop - step)
                noise = model.draw(m)
                for t0 in range(0, m, check_every):
                    t1 = min(t0 + check_every, m)
                    if fused:
                        model.steps(noise, t0, t1, step + t0)
                    else:
                        for t in range(t0, t1):
                            model.step(noise, t, step + t)
                    j = _divergence(model.magnitude(), limit)
                    if j is not None:
                        r = int(reps[active[j]])
                        raise DivergenceError(
                            step + t1, r, params[r], float(np.asarray(model.magnitude())[j]), float(limit), method
                        )
                    check_interrupt()
                step += m
                counter.advance(m * active.size)
            due = np.array([int(grids[r][ptr[r]]) == step for r in active], dtype=bool)
            rec = model.record(due)
            for i, jj in enumerate(np.flatnonzero(due)):
                out[active[jj]].append(tuple(x[i] for x in rec))
                ptr[active[jj]] += 1
            done = np.array([ptr[r] >= len(grids[r]) for r in active], dtype=bool)
            if done.any():
                fin = model.final(done)
                for i, jj in enumerate(np.flatnonzero(done)):
                    finals[active[jj]] = tuple(x[i] for x in fin)
                keep = ~done
                active = active[keep]
                if active.size:
                    model.keep(keep)
    return out, finals


def run_ensemble(
    model_factory,
    configurations,
    *,
    seed=None,
    record_names,
    final_names=(),
    n_chunks=None,
    check_every: int = 8,
    block_steps: int = 64,
    block_draws: int = 1024,
    divergence_limit: float = 1e6,
    method: str = "SGD",
    work=None,
    desc=None,
):
    """Run an ensemble of replicas of a chapter's training step; the one training loop of the book.

    The chapter supplies its step as a *model*: ``model_factory(replicas, streams)`` builds the
    batched state of the given replicas (global indices, with one random stream each from
    :func:`replica_streams`) and returns an object with

    * ``draw(m)``: the minibatch statistics of the next ``m`` steps of every active replica (or
      ``None`` for a deterministic method),
    * ``step(noise, t, step)``: apply step ``t`` of that block (``step`` is the global step count,
      for schedules),
    * optionally ``steps(noise, t0, t1, step)``: apply steps ``t0 … t1 − 1`` of the block at once
      (``step`` the global count of step ``t0``), the same as calling ``step`` for each; the runner
      uses it where present (one call, e.g. into compiled code, between two divergence checks),
    * ``magnitude()``: a size of each active replica's state (``(n_active,)``),
    * ``record(mask)``: a tuple of arrays (leading axis: the masked active replicas),
    * ``final(mask)``: a tuple of arrays, the final state of the masked replicas,
    * ``keep(mask)``: drop the other active replicas (those that have finished).

    The runner handles the rest: replicas of several :class:`Configuration` s in one batch; the
    chunking of replicas over threads (:func:`n_workers` of them, the work balanced), blocks of
    steps whose minibatches are drawn together, the record grids, divergence checks every
    ``check_every`` steps, Ctrl-C, and the progress bar (:class:`symbreak.progress.ProgressCounter`).
    Replica ``r`` draws only from its own stream (``seed``, ``r``), so its trajectory is the same
    however many replicas, chunks or threads run.

    Parameters
    ----------
    model_factory : callable
        ``(replicas: ndarray of int, streams: list of Generator) -> model``.
    configurations : list of Configuration
        The replicas, record grids and hyper-parameters; replicas are numbered configuration by
        configuration.
    seed : int, tuple of int or None
        Seed of the replicas' streams.
    record_names, final_names : sequence of str
        Names of the arrays that ``record`` and ``final`` return, in order.
    n_chunks : int, optional
        Number of chunks the replicas are split into (default: one per worker thread, at most one
        per replica). Results do not depend on it.
    check_every : int
        Divergence (a non-finite or above-``divergence_limit`` magnitude) is checked every this many steps.
    block_steps, block_draws : int
        A block draws at most ``block_steps`` steps and about ``block_draws`` minibatches at once.
    method : str
        Name of the algorithm in a :class:`DivergenceError`.
    work : array_like, optional
        Relative cost of one step of each replica (for balancing chunks).
    desc : str, optional
        Label of the progress bar.

    Returns
    -------
    list of EnsembleResult
        One per configuration, arrays ``[replica, record, ...]``.

    Raises
    ------
    DivergenceError
        Naming the step, the replica and its hyper-parameters.
    KeyboardInterrupt
        On Ctrl-C, after every worker thread has stopped (within one block of steps).
    """
    if isinstance(configurations, (str, bytes, Configuration)) or not hasattr(configurations, "__iter__"):
        raise TypeError("configurations must be a sequence of Configuration")
    configurations = list(configurations)
    if not configurations:
        raise ValueError("configurations must not be empty")
    if not all(isinstance(c, Configuration) for c in configurations):
        raise TypeError("configurations must be a sequence of Configuration")
    for label, names in (("record_names", record_names), ("final_names", final_names)):
        if isinstance(names, str) or not isinstance(names, (tuple, list)) or not all(isinstance(n, str) for n in names):
            raise TypeError(f"{label} must be a tuple of names (str), got {names!r}")
    check_every = check_int("check_every", check_every, minimum=1)
    block_steps = check_int("block_steps", block_steps, minimum=1)
    block_draws = check_int("block_draws", block_draws, minimum=1)
    limit = check_positive("divergence_limit", divergence_limit)
    if not callable(model_factory):
        raise TypeError(f"model_factory must be a callable (replicas, streams) -> model, got {model_factory!r}")
    grids, params, owner = [], [], []
    for c, conf in enumerate(configurations):
        for _ in range(conf.replicas):
            grids.append(conf.record_at)
            params.append(conf.params)
            owner.append(c)
    n_rep = len(grids)
    cost = np.ones(n_rep) if work is None else np.broadcast_to(np.asarray(work, dtype=float), (n_rep,))
    total = np.array([g[-1] for g in grids], dtype=float)
    chunks = min(n_workers() if n_chunks is None else check_int("n_chunks", n_chunks, minimum=1), n_rep)
    groups = _balanced_groups(list(total * cost), chunks)
    streams = replica_streams(seed, range(n_rep))

    with ProgressCounter(int(total.sum()), desc=desc) as counter:

        def one(reps):
            block = max(1, min(block_steps, block_draws // len(reps)))
            return _run_group(
                model_factory,
                reps,
                [grids[r] for r in reps],
                params,
                [streams[r] for r in reps],
                check_every=check_every,
                block=block,
                limit=limit,
                method=method,
                counter=counter,
            )

        outs = _map_threads(one, [(g,) for g in groups], min(n_workers(), len(groups)))
    per_rec = [None] * n_rep
    per_fin = [None] * n_rep
    for reps, (out, fin) in zip(groups, outs):
        for j, r in enumerate(reps):
            per_rec[r], per_fin[r] = out[j], fin[j]
    results, start = [], 0
    for conf in configurations:
        sl = range(start, start + conf.replicas)
        start += conf.replicas
        records = {name: np.array([[rec[i] for rec in per_rec[r]] for r in sl]) for i, name in enumerate(record_names)}
        final = {name: np.array([per_fin[r][i] for r in sl]) for i, name in enumerate(final_names)}
        results.append(
            EnsembleResult(steps=conf.record_at.copy(), records=records, final=final, params=dict(conf.params))
        )
    return results
