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

import math
import os
import threading
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

import numpy as np

from .progress import ProgressCounter
from .rng import _seed_sequence, spawn_rngs
from .validation import MAX_DRAWS, MAX_STEPS, check_array, check_int, check_positive, finite_result

__all__ = [
    "covariance_factor",
    "wishart_covariance",
    "sample_covariance",
    "record_steps",
    "DivergenceError",
    "check_divergence",
    "n_workers",
    "run_chunks",
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
    factor = check_array("factor", factor)
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
    factor = check_array("factor", factor)
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
        Replica indices.
    """
    ss = _seed_sequence(seed)
    out = []
    for r in replicas:
        r = check_int("replica", r, minimum=0)
        child = np.random.SeedSequence(ss.entropy, spawn_key=tuple(ss.spawn_key) + (r,), pool_size=ss.pool_size)
        out.append(np.random.Generator(np.random.SFC64(child)))
    return out


def fill_normals(streams, out, rows=None) -> None:
    """Fill ``out[j]`` with standard normals from ``streams[j]``: what
    ``streams[j].standard_normal(out=out[j], dtype=out.dtype)`` gives, bit for bit.

    When every stream is a NumPy ``Generator`` on SFC64 (as :func:`replica_streams` makes), one
    compiled loop draws them all from the streams' own states (``symbreak._sfc64``) with NumPy's
    algorithms, without a Python call per stream or an indirect call per variate; otherwise one
    NumPy call per stream.

    Parameters
    ----------
    streams : sequence of numpy.random.Generator
        One stream per leading index of ``out``.
    out : numpy.ndarray, float64 or float32, C-contiguous
        Leading axis one entry per stream.
    rows : array_like of int, optional
        Only these leading indices (default all).
    """
    streams = list(streams)
    if not all(isinstance(g, np.random.Generator) for g in streams):
        raise TypeError("streams must be a sequence of numpy.random.Generator")
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a numpy.ndarray, got {type(out).__name__}")
    if out.dtype not in (np.float64, np.float32) or not out.flags.c_contiguous or len(out) != len(streams):
        raise ValueError("out must be a C-contiguous float64 or float32 array with one row per stream")
    if rows is None:
        rows = np.arange(len(streams))
    else:
        rows = np.asarray(rows)
        if rows.ndim != 1 or rows.dtype == bool or not np.issubdtype(rows.dtype, np.integer):
            raise ValueError(f"rows must be a 1-D array of integer row indices, got {rows!r}")
        if rows.size and (rows.min() < 0 or rows.max() >= len(streams)):
            raise ValueError(f"rows must lie in [0, {len(streams) - 1}], got {rows!r}")
        rows = rows.astype(np.int64)
    from . import _sfc64

    addr = np.empty(len(streams), np.int64)
    for j in rows:
        a = _sfc64.state_address(streams[j])
        if a is None:
            for jj in rows:
                streams[jj].standard_normal(out=out[jj], dtype=out.dtype)
            return
        addr[j] = a
    _sfc64.fill_normal_rows(addr, rows, out.reshape(len(out), -1), out.dtype == np.float32)


def _check_keep_mask(mask, batch_sizes) -> np.ndarray:
    """The boolean replica mask of a sampler's ``keep``: one entry per replica, not all false."""
    mask = np.asarray(mask)
    if mask.dtype != bool:
        raise TypeError(f"mask must be a boolean array, got dtype {mask.dtype}")
    if mask.shape != batch_sizes.shape or not mask.any():
        raise ValueError("mask must be a boolean array with one entry per replica, not all false")
    return mask


def _scratch(bufs: dict, name: str, shape, dtype) -> np.ndarray:
    """A scratch array kept in ``bufs`` under ``name``, reallocated only when its shape changes."""
    x = bufs.get(name)
    if x is None or x.shape != tuple(shape) or x.dtype != dtype:
        x = bufs[name] = np.empty(shape, dtype)
    return x


_COMPILED: dict = {}


def _compiled(fn):
    """``fn`` compiled by numba without the GIL (on first use; cached on disk next to this module
    where that is writable, so later processes load it instead of compiling)."""
    if fn not in _COMPILED:
        import numba

        try:
            _COMPILED[fn] = numba.njit(cache=True, nogil=True)(fn)
        except RuntimeError:  # no writable cache location: compile in memory
            _COMPILED[fn] = numba.njit(nogil=True)(fn)
    return _COMPILED[fn]


def _bartlett_kernel():
    """The compiled Bartlett products of :class:`WishartBlockSampler` (numba, ``nogil``; compiled
    on first use and cached on disk next to this module).

    ``kernel(z, g, mz, mg, reps, t0, t1, out)`` writes, for every replica ``r`` in ``reps`` and step
    ``t`` in ``t0 … t1 − 1``, ``out[r, t − t0] = F Fᵀ`` where ``F`` is lower triangular with
    ``F_ij = z[r, t, n(i, j)] · mz[r, n(i, j)]`` below the diagonal (``n`` the row-major order of
    ``numpy.tril_indices(d, -1)``) and ``F_ii = sqrt(g[r, t, i]) · mg[r, i]``. The same
    multiplications as :func:`_bartlett_products_reference` (the NumPy reference); each
    ``(F Fᵀ)_ij = Σ_{l ≤ min(i, j)} F_il F_jl`` is summed in the order of ``l`` (the result exactly
    symmetric), the only difference from the reference's BLAS product being the order of the sums.
    A replica's numbers depend only on its own variates. Without the GIL, so chunks run in parallel.
    """
    return _compiled(_bartlett_products)


def _bartlett_products(z, g, mz, mg, reps, t0, t1, out):  # pragma: no cover - run compiled
    d = out.shape[2]
    F = np.empty((d, d), out.dtype)
    for r in reps:
        for t in range(t0, t1):
            idx = 0
            for i in range(d):
                for j in range(i):
                    F[i, j] = z[r, t, idx] * mz[r, idx]
                    idx += 1
                F[i, i] = math.sqrt(g[r, t, i]) * mg[r, i]
            o = out[r, t - t0]
            for i in range(d):
                # four entries (i, j … j + 3) at a time: four independent sums share the loads of
                # row i, each still summed in the order of l (so the same numbers as one at a time)
                j = 0
                while j + 3 <= i:
                    f = F[i, 0]
                    a0 = f * F[j, 0]
                    a1 = f * F[j + 1, 0]
                    a2 = f * F[j + 2, 0]
                    a3 = f * F[j + 3, 0]
                    for l in range(1, j + 1):
                        f = F[i, l]
                        a0 += f * F[j, l]
                        a1 += f * F[j + 1, l]
                        a2 += f * F[j + 2, l]
                        a3 += f * F[j + 3, l]
                    f = F[i, j + 1]
                    a1 += f * F[j + 1, j + 1]
                    a2 += f * F[j + 2, j + 1]
                    a3 += f * F[j + 3, j + 1]
                    f = F[i, j + 2]
                    a2 += f * F[j + 2, j + 2]
                    a3 += f * F[j + 3, j + 2]
                    a3 += F[i, j + 3] * F[j + 3, j + 3]
                    o[i, j] = o[j, i] = a0
                    o[i, j + 1] = o[j + 1, i] = a1
                    o[i, j + 2] = o[j + 2, i] = a2
                    o[i, j + 3] = o[j + 3, i] = a3
                    j += 4
                while j <= i:
                    acc = F[i, 0] * F[j, 0]
                    for l in range(1, j + 1):
                        acc += F[i, l] * F[j, l]
                    o[i, j] = o[j, i] = acc
                    j += 1


def _gamma_mt_kernel():
    """The compiled Marsaglia–Tsang step of :meth:`WishartBlockSampler._gamma_mt`
    (:func:`symbreak._sfc64.gamma_mt_proposals`, numba, ``nogil``, compiled on first use).

    ``kernel(z, nz, u, mt_d, mt_c, boost, inv_a, reps, out, bad)``: for each replica ``r`` in
    ``reps`` and each step ``t`` and diagonal entry ``i``, the proposal from the normal
    ``z[r, t, nz + i]`` and the uniform ``u[r, t, i]`` (and ``u[r, t, d + i]`` for a boosted shape
    below 1), written to ``out[r, t, i]``; ``bad[r, t, i]`` is set where it is rejected (the caller
    replaces those by exact draws, in the order of ``(r, t, i)``). The same operations in the same
    order and precision as the NumPy reference :meth:`WishartBlockSampler._gamma_mt`.
    """
    from . import _sfc64

    return _sfc64.gamma_mt_proposals


def _bartlett_products_reference(z, g, mz, mg, reps, t0, t1, out):
    """NumPy reference of :func:`_bartlett_kernel` (the same arguments and result, BLAS products)."""
    d = out.shape[2]
    nz = d * (d - 1) // 2
    rows, cols = np.tril_indices(d, -1)
    reps = np.asarray(reps)
    a = np.zeros((reps.size, t1 - t0, d, d), out.dtype)
    a[:, :, rows, cols] = z[reps, t0:t1, :nz] * mz[reps, None, :]
    diag = np.arange(d)
    a[:, :, diag, diag] = np.sqrt(g[reps, t0:t1]) * mg[reps, None, :]
    out[reps] = a @ a.transpose(0, 1, 3, 2)


def _libm_log(x):
    """``log`` of every entry by the C library, as compiled code calls it (``-inf`` at 0, NaN below).
    NumPy's own ``log`` may take SIMD paths (AVX-512) that differ from it in the last bits."""
    x = np.asarray(x, dtype=np.float64)
    return np.array([math.log(v) if v > 0 else (-math.inf if v == 0 else math.nan) for v in x.ravel()]).reshape(x.shape)


def _libm_pow(x, y):
    """``x ** y`` of every (broadcast) pair by the C library's ``pow``, as compiled code calls it."""
    x, y = np.broadcast_arrays(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64))
    return np.array([math.pow(a, b) for a, b in zip(x.ravel(), y.ravel())]).reshape(x.shape)


class WishartBlockSampler:
    """Exact minibatch covariances for an ensemble, drawn many steps at a time into reused buffers.

    For every replica ``r`` (with batch size ``B_r`` and multiplier ``c_r``) and every step of a
    block, :meth:`draw` returns ``c_r · Σ̂`` where ``Σ̂ = X Xᵀ / B_r`` is the empirical covariance of
    ``B_r`` fresh i.i.d. ``N(0, Σ)`` points. Replicas with ``B_r ≥ d`` use the Bartlett
    decomposition of :func:`wishart_covariance` (``d(d+1)/2`` random numbers per draw); the others
    draw their points (:func:`sample_covariance`); both are the exact law. Drawing a whole block of
    steps for the whole ensemble in a few large NumPy calls, into buffers allocated once, is what
    makes it fast: the per-draw cost is the random numbers and one ``d×d`` product.

    A multiplier is useful because an update that is linear in ``Σ̂`` (like the gradient of a linear
    network's square loss) can absorb the learning rate into the draw.

    Parameters
    ----------
    factor : array_like
        ``L`` with ``L Lᵀ = Σ``: 1-D standard deviations (diagonal ``Σ``) or a lower-triangular
        matrix (see :func:`covariance_factor`).
    batch_sizes : array_like of int, shape (R,)
        Batch size of each replica, ``≥ 1``.
    scale : array_like, shape (R,), optional
        Multiplier ``c_r > 0`` of each replica's draws (default 1).
    dtype : numpy dtype
        ``float64`` (default) or ``float32``.
    max_steps : int
        Largest block :meth:`draw` is asked for (sets the buffer size).
    """

    def __init__(self, factor, batch_sizes, *, scale=None, dtype=np.float64, max_steps: int = 64):
        self.factor = check_array("factor", factor)
        if self.factor.ndim not in (1, 2):
            raise ValueError(f"factor must be 1-D or a square matrix, got shape {self.factor.shape}")
        self.d = self.factor.shape[0]
        self.dtype = np.dtype(dtype)
        if self.dtype not in (np.dtype(np.float64), np.dtype(np.float32)):
            raise ValueError(f"dtype must be float64 or float32, got {self.dtype}")
        self.max_steps = check_int("max_steps", max_steps, minimum=1, maximum=MAX_DRAWS)
        b = np.asarray(batch_sizes)
        if b.ndim != 1 or b.size == 0 or not np.issubdtype(b.dtype, np.integer) or np.any(b < 1):
            raise ValueError(f"batch_sizes must be a non-empty 1-D array of integers >= 1, got {batch_sizes!r}")
        if self.max_steps * b.size * self.d * self.d > 20 * MAX_DRAWS:
            raise ValueError(
                f"max_steps * replicas * d² = {self.max_steps * b.size * self.d**2} buffer entries "
                f"exceeds {20 * MAX_DRAWS}"
            )
        c = np.ones(b.size) if scale is None else check_array("scale", scale, ndim=1)
        if c.shape != b.shape or np.any(c <= 0):
            raise ValueError("scale must have one entry > 0 per replica")
        if self.factor.size and np.abs(self.factor).max() ** 2 * c.max() * max(self.d, 1) > 1e300:
            raise ValueError("factor (squared) times scale is too large for float64 draws (above 1e300)")
        self._set(b.astype(np.int64), c.astype(float))

    @property
    def n_replicas(self) -> int:
        return self.batch_sizes.size

    def _set(self, batch_sizes, scale):
        d, dt = self.d, self.dtype
        self.batch_sizes, self.scale = batch_sizes, scale
        r = batch_sizes.size
        rows, cols = np.tril_indices(d, -1)
        self._nz = rows.size
        self._bufs = {}
        if not hasattr(self, "_aux"):
            self._aux = {}
        # Bartlett: A_ii^2 ~ chi^2(B - i) = 2 Gamma((B - i) / 2)
        self._shape1 = (np.maximum(batch_sizes[:, None] - np.arange(d)[None, :], 1) / 2.0).astype(dt)  # (R, d)
        # Marsaglia–Tsang constants for Gamma(a) (a < 1 boosted to a + 1, then times U^(1/a))
        a = self._shape1.astype(np.float64)
        self._boost = a < 1.0
        self._mt_d = a + self._boost - 1.0 / 3.0
        self._mt_c = 1.0 / np.sqrt(9.0 * self._mt_d)
        self._inv_a = 1.0 / a
        self._small = np.flatnonzero(batch_sizes < d)
        self._big = np.flatnonzero(batch_sizes >= d)
        root = np.sqrt(scale / batch_sizes)
        if self.factor.ndim == 1:
            # fold sqrt(c_r / B_r) L into A: F = sqrt(c_r/B_r) L A, and c_r Σ̂ = F Fᵀ
            self._mz = (root[:, None] * self.factor[rows][None, :]).astype(dt)
            self._mg = (root[:, None] * np.sqrt(2.0) * self.factor[None, :]).astype(dt)
        else:
            self._mz = np.broadcast_to(root[:, None], (r, rows.size)).astype(dt)
            self._mg = np.broadcast_to(root[:, None] * np.sqrt(2.0), (r, d)).astype(dt)
            self._lf = self.factor.astype(dt)

    def _buffers(self, m):
        """Buffers for blocks of ``m`` steps, laid out [replica, step, ...] (allocated once per ``m``)."""
        if m not in self._bufs:
            d, dt, r = self.d, self.dtype, self.n_replicas
            self._bufs[m] = dict(
                s=np.empty((r, m, d, d), dt),
                z=np.empty((r, m, self._nz + d), dt),
                g=np.empty((r, m, d), dt),
                u=np.empty((r, m, 2 * d)),
                shape=np.repeat(self._shape1[:, None, :], m, axis=1),
            )
        return self._bufs[m]

    def keep(self, mask) -> None:
        """Keep only the replicas where ``mask`` is true (for ensembles whose replicas finish early)."""
        mask = _check_keep_mask(mask, self.batch_sizes)
        self._set(self.batch_sizes[mask], self.scale[mask])

    def _aux_streams(self, stream):
        """Two further streams of a replica (uniforms, fallback gammas), children of its seed."""
        key = id(stream)
        if key not in self._aux:
            ss = stream.bit_generator.seed_seq
            self._aux[key] = tuple(
                np.random.Generator(
                    np.random.SFC64(
                        np.random.SeedSequence(ss.entropy, spawn_key=tuple(ss.spawn_key) + (c,), pool_size=ss.pool_size)
                    )
                )
                for c in (1, 2)
            )
        return self._aux[key]

    def _gamma_mt(self, zn, u, out, streams, reps, work=None):
        """Gamma variates of the Bartlett diagonal by Marsaglia & Tsang's exact rejection method,
        vectorised over the ensemble (the NumPy reference of the compiled :func:`_gamma_mt_kernel`
        that the sampler runs; its logarithms and powers by the C library, as the compiled code's,
        so that the two agree bit for bit also where NumPy's own take SIMD paths): ``zn`` normals
        and ``u`` uniforms of shape (R, m, d) (and (R, m, 2d)); each rare rejected proposal is
        replaced by an independent exact draw from the same replica's stream (the mixture is
        exactly Gamma).

        The proposal ``x = d(1 + cz)³`` is accepted when ``log u < z²/2 + d − dv + d log v``;
        Marsaglia & Tsang's squeeze ``u < 1 − 0.0331 z⁴`` implies that test and settles about 90%
        of the proposals without a logarithm, so the logarithms are taken only for the rest (the
        accepted set, and so the variates, are the same). ``work`` holds float64 scratch arrays
        of ``zn``'s shape (allocated when absent)."""
        d_, c_ = self._mt_d[reps, None, :], self._mt_c[reps, None, :]
        sh = zn.shape
        if work is None or work["x"].shape != sh:
            work = {k: np.empty(sh) for k in ("x", "v", "z2", "q")}
        x = np.multiply(zn, c_, out=work["x"])
        x += 1.0
        v = np.multiply(x, x, out=work["v"])
        v *= x
        z2 = np.multiply(zn, zn, out=work["z2"])
        q = np.multiply(z2, z2, out=work["q"])
        q *= -0.0331
        q += 1.0
        u1 = u[..., : self.d]
        ok = u1 < q
        ok &= x > 0
        bad = np.nonzero(~ok)
        if bad[0].size:
            zb, vb, ub = z2[bad], v[bad], u1[bad]
            db = np.broadcast_to(d_, sh)[bad]
            with np.errstate(invalid="ignore", divide="ignore"):
                okb = (vb > 0) & (_libm_log(ub) < 0.5 * zb + db - db * vb + db * _libm_log(vb))
            bad = tuple(ix[~okb] for ix in bad)
        gam = v
        gam *= d_
        boost = self._boost[reps]
        if boost.any():
            gam = np.where(boost[:, None, :], gam * _libm_pow(u[..., self.d :], self._inv_a[reps][:, None, :]), gam)
        for j, t, i in zip(*bad):
            rep = reps[j]
            gam[j, t, i] = streams[rep].standard_gamma(float(self._shape1[rep, i]))
        out[...] = gam

    def _addresses(self, streams, aux):
        """The state addresses of each replica's three streams (normals, uniforms, fallback
        gammas) as three int64 arrays, when every stream is SFC64 (see ``symbreak._sfc64``);
        else ``None``. Cached for the same stream objects (the cache keeps them alive)."""
        ids = tuple(map(id, streams))
        hit = self._aux.get("addresses")
        if hit is not None and hit[0] == ids:
            return hit[2]
        from . import _sfc64

        out = np.empty((3, len(streams)), np.int64)
        for j, (st, (su, sg)) in enumerate(zip(streams, aux)):
            for row, gen in enumerate((st, su, sg)):
                a = _sfc64.state_address(gen)
                if a is None:
                    return None
                out[row, j] = a
        self._aux["addresses"] = (ids, list(streams), tuple(out))
        return self._aux["addresses"][2]

    def _check_streams(self, rng):
        streams = None if isinstance(rng, np.random.Generator) else list(rng)
        if streams is not None and len(streams) != self.n_replicas:
            raise ValueError(f"rng must be one generator or one per replica ({self.n_replicas}), got {len(streams)}")
        return streams

    def _variates(self, rng, streams, n_steps):
        """Draw a block's random variates into the buffers: the normals ``z`` and the Bartlett
        diagonal's gamma variates ``g`` (the B < d replicas draw their points in :meth:`draw`)."""
        b = self._buffers(n_steps)
        zfull, g = b["z"], b["g"]
        if streams is None:
            rng.standard_normal(out=zfull, dtype=self.dtype)
            rng.standard_gamma(b["shape"], out=g, dtype=self.dtype)
        elif self._big.size:  # (replicas with B < d draw their points below)
            u = b["u"]
            # normals, uniforms and the rare fallback gammas come from three streams per replica,
            # each consumed in step order, so a step's draws never depend on how steps are blocked
            aux = [self._aux_streams(st) for st in streams]
            addr = self._addresses(streams, aux)
            if addr is not None:
                # SFC64 streams: one compiled loop over the ensemble draws everything below, from
                # the streams' own states, with NumPy's algorithms (the same numbers, bit for bit)
                from . import _sfc64

                _sfc64.wishart_variates(
                    *addr, self._big, zfull, u, self._nz, self._mt_d, self._mt_c, self._boost,
                    self._inv_a, self._shape1, g, self.dtype == np.float32,
                )  # fmt: skip
                return b
            # other bit generators: per replica, one NumPy call for the normals (off-diagonal and
            # Marsaglia–Tsang), one for the uniforms; the gamma variates for the whole ensemble at once
            for j in self._big:
                streams[j].standard_normal(out=zfull[j], dtype=self.dtype)
                aux[j][0].random(out=u[j])
            fallback = [a[1] for a in aux]
            bad = _scratch(b, "bad", g.shape, np.bool_)
            bad[...] = False
            _gamma_mt_kernel()(zfull, self._nz, u, self._mt_d, self._mt_c, self._boost, self._inv_a, self._big, g, bad)
            for j, t, i in zip(*np.nonzero(bad)):  # rare rejections: exact draws, in step order
                g[j, t, i] = fallback[j].standard_gamma(float(self._shape1[j, i]))
        return b

    def draw(self, rng, n_steps: int) -> np.ndarray:
        """Draw ``n_steps`` steps for every replica.

        Parameters
        ----------
        rng : numpy.random.Generator or sequence of numpy.random.Generator
            One generator for the whole ensemble, or one per replica (see
            :func:`replica_streams`); with one per replica, replica ``r``'s draws depend only on
            its own stream, never on the other replicas.
        n_steps : int
            Steps to draw, ``1 ≤ n_steps ≤ max_steps``.

        Returns
        -------
        numpy.ndarray, shape (n_steps, R, d, d)
            ``c_r Σ̂`` for step ``t`` and replica ``r``. A view of an internal buffer, overwritten
            by the next call.
        """
        n_steps = check_int("n_steps", n_steps, minimum=1, maximum=self.max_steps)
        streams = self._check_streams(rng)
        b = self._variates(rng, streams, n_steps)
        r, d, g = self.n_replicas, self.d, b["g"]
        s = b["s"]
        if self._big.size:  # (when every replica has B < d, the Bartlett matrices are not needed)
            # F = sqrt(c_r / B_r) L A (or sqrt(c_r / B_r) A for a full L) and F Fᵀ, compiled
            _bartlett_kernel()(b["z"], g, self._mz, self._mg, self._big, 0, n_steps, s)
            if self.factor.ndim == 2:
                t = _scratch(b, "t", s.shape, self.dtype)
                np.matmul(self._lf, s, out=t)
                np.matmul(t, self._lf.T, out=s)
        for bsz in np.unique(self.batch_sizes[self._small]) if self._small.size else ():
            # B < d: the Wishart law is singular; draw the B points (as sample_covariance does)
            idx = self._small[self.batch_sizes[self._small] == bsz]
            whole = idx.size == r  # every replica has this batch size: work in place, in reused buffers
            shape = (idx.size, n_steps, d, int(bsz))
            x = _scratch(b, "x", shape, self.dtype) if whole else np.empty(shape, dtype=self.dtype)
            if streams is None:
                rng.standard_normal(out=x, dtype=self.dtype)
            else:
                fill_normals([streams[j] for j in idx], x)
            if self.factor.ndim == 1:
                x = self.factor.astype(self.dtype)[:, None] * x
            elif whole:
                x = np.matmul(self._lf, x, out=_scratch(b, "y", shape, self.dtype))
            else:
                x = self._lf @ x
            cov = np.matmul(x, x.swapaxes(-1, -2), out=s if whole else None)
            cov *= (self.scale[idx] / bsz).astype(self.dtype)[:, None, None, None]
            if not whole:
                s[idx] = cov
        return s.transpose(1, 0, 2, 3)

    @property
    def points_only(self) -> bool:
        """Whether every replica draws its ``B`` data points, with one ``B < d`` for all: the case
        where :meth:`points` gives everything a step needs."""
        return self._small.size == self.n_replicas and np.unique(self.batch_sizes).size == 1

    def points(self, rng, n_steps: int):
        """The standard normals of a block of ``n_steps`` steps, for a compiled step that forms the
        minibatch moments itself: replica ``r``'s ``B`` points at step ``t`` are ``L X[r, t]`` and
        its draw is ``c_r (L X[r, t]) (L X[r, t])ᵀ``.

        Only where :attr:`points_only`. The same calls as :meth:`draw`, so the same numbers (with
        one generator for the whole ensemble too: it first takes the variates :meth:`draw` takes).

        Parameters
        ----------
        rng : numpy.random.Generator or sequence of numpy.random.Generator
            As in :meth:`draw`.
        n_steps : int
            Steps to draw, ``1 ≤ n_steps ≤ max_steps``.

        Returns
        -------
        X : numpy.ndarray, shape (R, n_steps, d, B)
            Standard normals; a view of an internal buffer, overwritten by the next call.
        L : numpy.ndarray, shape (d, d)
            The factor as a matrix (diagonal for a 1-D ``factor``).
        c : numpy.ndarray, shape (R,)
            ``c_r / B``.

        Raises
        ------
        ValueError
            Unless every replica has the same batch size ``B < d``; for ``n_steps`` out of range.
        """
        if not self.points_only:
            raise ValueError("points needs one batch size B < d for every replica; use draw")
        n_steps = check_int("n_steps", n_steps, minimum=1, maximum=self.max_steps)
        streams = self._check_streams(rng)
        if streams is None:  # draw takes these first from a single generator
            self._variates(rng, None, n_steps)
        bsz = int(self.batch_sizes[0])
        x = _scratch(self._buffers(n_steps), "x", (self.n_replicas, n_steps, self.d, bsz), self.dtype)
        if streams is None:
            rng.standard_normal(out=x, dtype=self.dtype)
        else:
            fill_normals(streams, x)
        lf = np.diag(self.factor) if self.factor.ndim == 1 else self._lf
        return x, np.ascontiguousarray(lf, dtype=self.dtype), (self.scale / bsz).astype(self.dtype)

    @property
    def bartlett_only(self) -> bool:
        """Whether every replica draws by the Bartlett decomposition with a diagonal ``Σ`` (``B_r ≥ d``,
        1-D ``factor``): the case where :meth:`variates` gives everything a step needs."""
        return self.factor.ndim == 1 and not self._small.size

    def variates(self, rng, n_steps: int):
        """The random variates of a block of ``n_steps`` steps, for a compiled step that builds the
        Bartlett factor itself (``F`` assembled as the sampler's compiled Bartlett kernel does).

        Only where :attr:`bartlett_only`. The same calls as :meth:`draw`, so the same numbers.

        Returns
        -------
        z : numpy.ndarray, shape (R, n_steps, d(d−1)/2 + d)
            Normals; the first ``d(d−1)/2`` of a step are the off-diagonal of ``A``.
        g : numpy.ndarray, shape (R, n_steps, d)
            Gamma variates of the diagonal: ``A_ii² = 2 g``.
        mz, mg : numpy.ndarray, shapes (R, d(d−1)/2) and (R, d)
            Multipliers: ``F_ij = z · mz`` below the diagonal, ``F_ii = sqrt(g) · mg``, and
            ``F Fᵀ = c_r Σ̂``.

        The arrays are views of internal buffers, overwritten by the next call.
        """
        if not self.bartlett_only:
            raise ValueError("variates needs a 1-D factor and batch sizes >= d for every replica; use draw")
        n_steps = check_int("n_steps", n_steps, minimum=1, maximum=self.max_steps)
        b = self._variates(rng, self._check_streams(rng), n_steps)
        return b["z"], b["g"], self._mz, self._mg

    def draw_steps(self, rng, n_steps: int):
        """The same draws as :meth:`draw`, each step's ``c_r Σ̂`` built only when it is indexed.

        The random variates of the whole block are drawn at once (the same calls, so the same
        numbers as :meth:`draw`); ``draws[t]`` then builds step ``t``'s Bartlett matrices and
        their products for every replica into one small reused buffer, which stays in cache for
        the SGD step that reads it next, instead of the whole block's ``(n_steps, R, d, d)`` array
        being written and read back from memory. Index the steps in order, each once, and use
        ``draws[t]`` before indexing the next step (it is overwritten).

        Returns
        -------
        sequence of numpy.ndarray, each of shape (R, d, d)
            ``draws[t]`` equals ``draw(rng, n_steps)[t]`` bit for bit. Where every replica has
            ``B ≥ d`` and ``Σ`` is diagonal; otherwise the array of :meth:`draw` itself.
        """
        if self._small.size or self.factor.ndim != 1:
            return self.draw(rng, n_steps)
        n_steps = check_int("n_steps", n_steps, minimum=1, maximum=self.max_steps)
        b = self._variates(rng, self._check_streams(rng), n_steps)
        return _StepDraws(self, b, n_steps)


class _StepDraws:
    """Step ``t`` of a block of :class:`WishartBlockSampler` variates, assembled on indexing."""

    def __init__(self, sampler: WishartBlockSampler, bufs: dict, n_steps: int):
        r, d, dt = sampler.n_replicas, sampler.d, sampler.dtype
        self.n_steps = n_steps
        self.z, self.g, self.mz, self.mg = bufs["z"], bufs["g"], sampler._mz, sampler._mg
        self.reps = np.arange(r)
        self.s = _scratch(sampler._bufs, "one", (r, 1, d, d), dt)
        self.kernel = _bartlett_kernel()

    def __len__(self):
        return self.n_steps

    def __getitem__(self, t):
        if not isinstance(t, (int, np.integer)) or not 0 <= t < self.n_steps:
            raise IndexError(f"step index must be an integer in [0, {self.n_steps}), got {t!r}")
        # the same compiled products as WishartBlockSampler.draw, for step t alone
        self.kernel(self.z, self.g, self.mz, self.mg, self.reps, int(t), int(t) + 1, self.s)
        return self.s[:, 0]


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


# --------------------------------------------------------------------------------------------
# the same draws on a torch device (GPU path)
# --------------------------------------------------------------------------------------------
class TorchWishartBlockSampler:
    """:class:`WishartBlockSampler` on a torch device: ``c_r Σ̂`` for every replica and step of a
    block, drawn by the Bartlett decomposition with torch's generator on ``device``.

    The law is the same as on the CPU (exact); the random stream is one per ensemble (a GPU draws
    all replicas in one call), so on a device replica ``r``'s draws depend on ``(seed, r)`` *and*
    the ensemble, unlike :func:`replica_streams`. Needs ``B ≥ d`` for every replica.

    Parameters
    ----------
    std : array_like, shape (d,)
        Standard deviations of the data (diagonal ``Σ``).
    batch_sizes, scale : array_like, shape (R,)
        As in :class:`WishartBlockSampler`.
    dtype : numpy.float64 or numpy.float32
    device : str or torch.device
    generator : torch.Generator
        Seeded generator on ``device``.
    """

    def __init__(self, std, batch_sizes, *, scale, dtype, device, generator):
        import torch

        self.torch, self.device, self.gen = torch, torch.device(device), generator
        if np.dtype(dtype) not in (np.dtype(np.float64), np.dtype(np.float32)):
            raise ValueError(f"dtype must be float64 or float32, got {np.dtype(dtype)}")
        self.tdt = torch.float64 if np.dtype(dtype) == np.float64 else torch.float32
        std = check_array("std", std, ndim=1)
        d = std.size
        if d == 0 or np.any(std <= 0):
            raise ValueError("std must be a non-empty array of standard deviations > 0")
        b = np.asarray(batch_sizes)
        if b.ndim != 1 or b.size == 0 or not np.issubdtype(b.dtype, np.integer):
            raise TypeError(f"batch_sizes must be a non-empty 1-D array of integers, got {batch_sizes!r}")
        if np.any(b < d):
            raise ValueError(f"batch_sizes must all be >= d = {d} on a torch device")
        b = b.astype(np.int64)
        scale = check_array("scale", scale, ndim=1, shape=b.shape)
        if np.any(scale <= 0) or 2 * np.log(std.max()) + np.log(scale.max()) + np.log(d) > np.log(1e300):
            raise ValueError("scale must hold one multiplier > 0 per replica, with std² · scale · d below 1e300")
        self.d = d
        rows, cols = np.tril_indices(d, -1)
        self.rows, self.cols = torch.as_tensor(rows, device=self.device), torch.as_tensor(cols, device=self.device)
        self._set(std, b, scale)

    def _set(self, std, b, scale):
        torch, d = self.torch, self.d
        self.std, self.batch_sizes, self.scale = std, b, scale
        root = np.sqrt(scale / b)
        rows = self.rows.cpu().numpy()
        self.mz = torch.as_tensor(root[:, None] * std[rows][None, :], dtype=self.tdt, device=self.device)
        self.mg = torch.as_tensor(root[:, None] * np.sqrt(2.0) * std[None, :], dtype=self.tdt, device=self.device)
        shape = np.maximum(b[:, None] - np.arange(d)[None, :], 1) / 2.0
        self.shape = torch.as_tensor(shape, dtype=self.tdt, device=self.device)

    def keep(self, mask) -> None:
        """Keep only the replicas where ``mask`` is true."""
        mask = _check_keep_mask(mask, self.batch_sizes)
        self._set(self.std, self.batch_sizes[mask], self.scale[mask])

    def draw(self, n_steps: int):
        """``c_r Σ̂``, a torch tensor of shape (n_steps, R, d, d) on the device."""
        n_steps = check_int("n_steps", n_steps, minimum=1, maximum=MAX_STEPS)
        torch, d = self.torch, self.d
        r = self.batch_sizes.size
        z = torch.randn((n_steps, r, self.rows.numel()), generator=self.gen, dtype=self.tdt, device=self.device)
        shape = self.shape.expand(n_steps, r, d)
        # Gamma variates from the device generator: Marsaglia–Tsang with a boost for shape < 1
        g = _torch_gamma(torch, shape, self.gen)
        a = torch.zeros((n_steps, r, d, d), dtype=self.tdt, device=self.device)
        a[:, :, self.rows, self.cols] = z * self.mz
        idx = torch.arange(d, device=self.device)
        a[:, :, idx, idx] = torch.sqrt(g) * self.mg
        return a @ a.transpose(-1, -2)


def _torch_gamma(torch, shape, gen):
    """Exact Gamma(shape) variates on shape's device with the generator ``gen`` (Marsaglia & Tsang;
    rejected proposals are redrawn until every entry is accepted)."""
    boost = shape < 1
    a = shape + boost.to(shape.dtype)
    d = a - 1.0 / 3.0
    c = 1.0 / torch.sqrt(9.0 * d)
    out = torch.empty_like(shape)
    todo = torch.ones_like(shape, dtype=torch.bool)
    while bool(todo.any()):
        z = torch.randn(shape.shape, generator=gen, dtype=shape.dtype, device=shape.device)
        u = torch.rand(shape.shape, generator=gen, dtype=shape.dtype, device=shape.device)
        v = (1.0 + c * z) ** 3
        ok = (v > 0) & (torch.log(u) < 0.5 * z * z + d - d * v + d * torch.log(v.clamp_min(1e-300)))
        take = todo & ok
        out = torch.where(take, d * v, out)
        todo = todo & ~ok
    u = torch.rand(shape.shape, generator=gen, dtype=shape.dtype, device=shape.device)
    return torch.where(boost, out * u ** (1.0 / shape), out)
