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
:class:`WishartBlockSampler`
    Blocks of exact minibatch covariances for a whole ensemble of replicas at once (each replica
    with its own batch size and a multiplier such as its learning rate), into reused buffers,
    in float64 or float32: the fast path of the batched SGD drivers.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .rng import spawn_rngs
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


def sample_covariance(rng: np.random.Generator, factor, batch_size: int, size: int, *,
                      dtype=np.float64, return_samples: bool = False):
    """Draw ``size`` minibatch covariances ``Σ̂ = X Xᵀ / B`` by drawing the ``B`` points.

    The reference sampler for :func:`wishart_covariance` (same law, ``d·B`` normals per draw).
    With ``return_samples=True`` also returns the points ``X`` of shape (size, d, B).
    """
    factor = check_array("factor", factor)
    batch_size = check_int("batch_size", batch_size, minimum=1)
    size = check_int("size", size, minimum=1, maximum=MAX_DRAWS)
    d = factor.shape[0]
    if size * d * batch_size > 10 * MAX_DRAWS:
        raise ValueError(f"size * d * batch_size = {size * d * batch_size} data entries exceeds {10 * MAX_DRAWS}: "
                         "draw in chunks")
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

    Attributes
    ----------
    step : int
        The first step at which the divergence was seen.
    replica : int
        Index of the first replica that diverged.
    params : dict
        The hyper-parameters of that replica (learning rate, batch size, ...).
    """

    def __init__(self, step: int, replica: int, params: dict, value: float, limit: float, method: str = "SGD"):
        self.step, self.replica, self.params, self.value, self.limit = step, replica, dict(params), value, limit
        self.method = method
        desc = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in self.params.items())
        super().__init__(
            f"{method} diverged at step {step} (replica {replica}; {desc}): weight magnitude "
            f"{value:.3g} exceeds {limit:.3g}. The learning rate is past the stability edge "
            "(eta * lambda_max(Hessian) > 2); lower eta or raise the batch size."
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
    """
    n_items = check_int("n_items", n_items, minimum=1)
    n_chunks = min(check_int("n_chunks", n_chunks, minimum=1, maximum=10_000), n_items)
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {fn!r}")
    bounds = np.linspace(0, n_items, n_chunks + 1).round().astype(int)
    slices = [slice(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]
    rngs = spawn_rngs(seed, n_chunks)
    workers = min(n_workers(), n_chunks)
    if workers == 1:
        return [fn(s, g) for s, g in zip(slices, rngs)]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(fn, slices, rngs))


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
        if self.max_steps * b.size * self.d * self.d > 10 * MAX_DRAWS:
            raise ValueError(f"max_steps * replicas * d² = {self.max_steps * b.size * self.d ** 2} buffer entries "
                             f"exceeds {10 * MAX_DRAWS}")
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
        n = self.max_steps * r
        rows, cols = np.tril_indices(d, -1)
        self._flat_lower = rows * d + cols
        self._a = np.zeros((n, d, d), dtype=dt)
        self._at = np.empty((n, d, d), dtype=dt)
        self._s = np.empty((n, d, d), dtype=dt)
        self._z = np.empty((n, rows.size), dtype=dt)
        self._g = np.empty((n, d), dtype=dt)
        # Bartlett: A_ii^2 ~ chi^2(B - i) = 2 Gamma((B - i) / 2); rows of the block are (step, replica)
        shape = np.maximum(batch_sizes[:, None] - np.arange(d)[None, :], 1) / 2.0
        self._shape = np.tile(shape, (self.max_steps, 1)).astype(dt)
        self._small = np.flatnonzero(batch_sizes < d)
        root = np.sqrt(scale / batch_sizes)
        if self.factor.ndim == 1:
            # fold sqrt(c_r / B_r) L into A: F = sqrt(c_r/B_r) L A, and c_r Σ̂ = F Fᵀ
            self._mz = (root[:, None] * self.factor[rows][None, :]).astype(dt)
            self._mg = (root[:, None] * np.sqrt(2.0) * self.factor[None, :]).astype(dt)
        else:
            self._mz = np.broadcast_to(root[:, None], (r, rows.size)).astype(dt)
            self._mg = np.broadcast_to(root[:, None] * np.sqrt(2.0), (r, d)).astype(dt)
            self._lf = self.factor.astype(dt)

    def keep(self, mask) -> None:
        """Keep only the replicas where ``mask`` is true (for ensembles whose replicas finish early)."""
        mask = np.asarray(mask)
        if mask.dtype != bool:
            raise TypeError(f"mask must be a boolean array, got dtype {mask.dtype}")
        if mask.shape != self.batch_sizes.shape or not mask.any():
            raise ValueError("mask must be a boolean array with one entry per replica, not all false")
        self._set(self.batch_sizes[mask], self.scale[mask])

    def draw(self, rng: np.random.Generator, n_steps: int) -> np.ndarray:
        """Draw ``n_steps`` steps for every replica.

        Returns
        -------
        numpy.ndarray, shape (n_steps, R, d, d)
            ``c_r Σ̂`` for step ``t`` and replica ``r``. A view of an internal buffer, overwritten
            by the next call.
        """
        n_steps = check_int("n_steps", n_steps, minimum=1, maximum=self.max_steps)
        r, d = self.n_replicas, self.d
        n = n_steps * r
        a2 = self._a.reshape(-1, d * d)[:n]
        z, g = self._z[:n], self._g[:n]
        rng.standard_normal(out=z, dtype=self.dtype)
        z.reshape(n_steps, r, -1)[...] *= self._mz
        a2[:, self._flat_lower] = z
        rng.standard_gamma(self._shape[:n], out=g, dtype=self.dtype)
        np.sqrt(g, out=g)
        g.reshape(n_steps, r, d)[...] *= self._mg
        a2[:, :: d + 1] = g
        a, at, s = self._a[:n], self._at[:n], self._s[:n]
        np.copyto(at, a.transpose(0, 2, 1))  # a contiguous Aᵀ: a plain product is faster than syrk here
        np.matmul(a, at, out=s)
        s4 = s.reshape(n_steps, r, d, d)
        if self.factor.ndim == 2:
            s4[...] = self._lf @ s4 @ self._lf.T
        for j in self._small:
            m = sample_covariance(rng, self.factor, int(self.batch_sizes[j]), n_steps, dtype=self.dtype)
            s4[:, j] = m * float(self.scale[j])
        return s4
