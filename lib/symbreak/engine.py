"""The shared simulation engine: what every chapter's SGD simulations are built from.

For linear networks trained on Gaussian data with the square loss, a minibatch enters the SGD
update only through its empirical second-moment matrix ``Σ̂ = X Xᵀ / B``. Since ``B Σ̂`` is
Wishart-distributed, ``W_d(B, Σ)``, it can be drawn *exactly* with the Bartlett decomposition:
``d(d+1)/2`` random numbers per step instead of ``d·B``, and no ``d×B`` data matrix. Chapters
run many replicas (seeds, learning rates, batch sizes) as one batched ensemble of stacked
matrices, split into a fixed number of chunks that a thread pool spreads over the cores (NumPy
releases the GIL inside its kernels), and check the ensemble for divergence as it goes.

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
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .rng import spawn_rngs
from .validation import check_array, check_int

__all__ = [
    "covariance_factor",
    "wishart_covariance",
    "sample_covariance",
    "record_steps",
    "DivergenceError",
    "check_divergence",
    "n_workers",
    "run_chunks",
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


def wishart_covariance(rng: np.random.Generator, factor, batch_size: int, size: int, *,
                       dtype=np.float64) -> np.ndarray:
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
    size = check_int("size", size, minimum=1)
    d = factor.shape[0]
    if batch_size < d:
        return sample_covariance(rng, factor, batch_size, size, dtype=dtype)
    a = np.zeros((size, d, d), dtype=dtype)
    rows, cols = np.tril_indices(d, -1)
    a[:, rows, cols] = rng.standard_normal((size, rows.size), dtype=dtype)
    diag = np.arange(d)
    a[:, diag, diag] = np.sqrt(rng.chisquare(batch_size - diag, size=(size, d))).astype(dtype, copy=False)
    m = a @ a.transpose(0, 2, 1)
    m *= 1.0 / batch_size
    return _apply_factor(factor.astype(dtype, copy=False), m)


def sample_covariance(rng: np.random.Generator, factor, batch_size: int, size: int, *,
                      dtype=np.float64, return_samples: bool = False):
    """Draw ``size`` minibatch covariances ``Σ̂ = X Xᵀ / B`` by drawing the ``B`` points.

    The reference sampler for :func:`wishart_covariance` (same law, ``d·B`` normals per draw).
    With ``return_samples=True`` also returns the points ``X`` of shape (size, d, B).
    """
    factor = check_array("factor", factor)
    batch_size = check_int("batch_size", batch_size, minimum=1)
    size = check_int("size", size, minimum=1)
    d = factor.shape[0]
    z = rng.standard_normal((size, d, batch_size), dtype=dtype)
    x = factor[:, None] * z if factor.ndim == 1 else np.einsum("ij,njb->nib", factor.astype(dtype), z)
    cov = x @ x.transpose(0, 2, 1) / batch_size
    return (cov, x) if return_samples else cov


def record_steps(steps: int, record_every: int) -> np.ndarray:
    """Steps at which an ensemble is recorded: ``0, r, 2r, ...`` and always the last step."""
    steps = check_int("steps", steps, minimum=0)
    record_every = check_int("record_every", record_every, minimum=1)
    grid = np.arange(0, steps + 1, record_every)
    if grid[-1] != steps:
        grid = np.append(grid, steps)
    return grid


class DivergenceError(RuntimeError):
    """SGD left every bounded region: the run is past its stability edge.

    Attributes
    ----------
    step : int
        The first step at which the divergence was seen.
    replica : int
        Index of the first replica that diverged.
    params : dict
        The hyper-parameters of that replica (learning rate, batch size, ...).
    """

    def __init__(self, step: int, replica: int, params: dict, value: float, limit: float):
        self.step, self.replica, self.params, self.value, self.limit = step, replica, dict(params), value, limit
        desc = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in self.params.items())
        super().__init__(
            f"SGD diverged at step {step} (replica {replica}; {desc}): weight magnitude "
            f"{value:.3g} exceeds {limit:.3g}. The learning rate is past the stability edge "
            "(eta * lambda_max(Hessian) > 2); lower eta or raise the batch size."
        )


def check_divergence(magnitude, *, step: int, limit: float, params=None) -> None:
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
    """
    mag = np.asarray(magnitude, dtype=float).reshape(-1)
    bad = ~np.isfinite(mag) | (mag > limit)
    if np.any(bad):
        r = int(np.flatnonzero(bad)[0])
        p = params(r) if callable(params) else (params or {})
        raise DivergenceError(step, r, p, float(mag[r]), float(limit))


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
    """
    n_items = check_int("n_items", n_items, minimum=1)
    n_chunks = min(check_int("n_chunks", n_chunks, minimum=1), n_items)
    bounds = np.linspace(0, n_items, n_chunks + 1).round().astype(int)
    slices = [slice(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]
    rngs = spawn_rngs(seed, n_chunks)
    workers = min(n_workers(), n_chunks)
    if workers == 1:
        return [fn(s, g) for s, g in zip(slices, rngs)]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(fn, slices, rngs))
