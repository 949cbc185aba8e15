"""Exact minibatch draws for whole ensembles: the Wishart block samplers behind every linear SGD run.

For linear networks on Gaussian data a minibatch enters SGD only through ``Σ̂ = X Xᵀ / B``, and
``B Σ̂ ~ W_d(B, Σ)`` is drawn exactly by the Bartlett decomposition. This module holds the batched
samplers (:class:`WishartBlockSampler` on the CPU, compiled with numba; :class:`TorchWishartBlockSampler`
on a torch device), the normal fill of per-replica streams (:func:`fill_normals`) and their compiled
kernels. :mod:`symbreak.engine` re-exports its public names, so ``symbreak.engine.WishartBlockSampler``
is the same class.

Pages: every page that runs a linear SGD simulation, through the chapters' trainers.

Extra: ``symbreak[torch]`` for :class:`TorchWishartBlockSampler` (PyTorch); the rest needs only the
core dependencies.
"""

from __future__ import annotations

import math

import numpy as np

from .validation import MAX_DRAWS, MAX_STEPS, check_array, check_int

__all__ = ["WishartBlockSampler", "fill_normals", "TorchWishartBlockSampler"]


def fill_normals(streams, out, rows=None) -> None:
    """Fill ``out[j]`` with standard normals from ``streams[j]``: what
    ``streams[j].standard_normal(out=out[j], dtype=out.dtype)`` gives, bit for bit.

    When every stream is a NumPy ``Generator`` on SFC64 (as :func:`~symbreak.engine.replica_streams` makes), one
    compiled loop draws them all from the streams' own states (``symbreak._sfc64``) with NumPy's
    algorithms, without a Python call per stream or an indirect call per variate; otherwise one
    NumPy call per stream.

    Parameters
    ----------
    streams : sequence of numpy.random.Generator
        One stream per leading index of ``out``.
    out : numpy.ndarray, float64 or float32, C-contiguous, writeable
        Leading axis one entry per stream.
    rows : array_like of int, optional
        Only these leading indices (default all).
    """
    streams = list(streams)
    if not all(isinstance(g, np.random.Generator) for g in streams):
        raise TypeError("streams must be a sequence of numpy.random.Generator")
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a numpy.ndarray, got {type(out).__name__}")
    if out.ndim == 0 or out.dtype not in (np.float64, np.float32) or not out.flags.c_contiguous:
        raise ValueError(
            f"out must be a C-contiguous float64 or float32 array with one row per stream, got dtype {out.dtype}, "
            f"shape {out.shape}{'' if out.ndim == 0 or out.flags.c_contiguous else ', not C-contiguous'}"
        )
    if len(out) != len(streams):
        raise ValueError(f"out must be an array with one row per stream ({len(streams)}), got shape {out.shape}")
    if not out.flags.writeable:
        raise ValueError("out must be writeable, got a read-only array")
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


def _aligned_zeros(shape, dtype, align: int = 64) -> np.ndarray:
    """Zeros of ``shape`` (C order) whose data start on an ``align``-byte boundary: scratch for the
    compiled lane kernels, whose vectors of one cache line (64 bytes) then never straddle two (NumPy
    aligns only to 16 bytes; a straddling 512-bit load costs about two)."""
    dtype = np.dtype(dtype)
    shape = (shape,) if np.ndim(shape) == 0 else tuple(shape)
    size = int(np.prod(shape, dtype=np.int64))
    buf = np.zeros(size + align // dtype.itemsize, dtype)
    off = (-buf.ctypes.data % align) // dtype.itemsize
    return buf[off : off + size].reshape(shape)


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
    decomposition of :func:`~symbreak.engine.wishart_covariance` (``d(d+1)/2`` random numbers per draw); the others
    draw their points (:func:`~symbreak.engine.sample_covariance`); both are the exact law. Drawing a whole block of
    steps for the whole ensemble in a few large NumPy calls, into buffers allocated once, is what
    makes it fast: the per-draw cost is the random numbers and one ``d×d`` product.

    A multiplier is useful because an update that is linear in ``Σ̂`` (like the gradient of a linear
    network's square loss) can absorb the learning rate into the draw.

    Parameters
    ----------
    factor : array_like
        ``L`` with ``L Lᵀ = Σ``: 1-D standard deviations (diagonal ``Σ``) or a lower-triangular
        matrix (see :func:`~symbreak.engine.covariance_factor`).
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
        if isinstance(rng, np.random.Generator):
            return None
        try:
            streams = list(rng)
        except TypeError:
            raise ValueError(
                f"rng must be a numpy.random.Generator or one per replica ({self.n_replicas}), got {type(rng).__name__}"
            ) from None
        if len(streams) != self.n_replicas:
            raise ValueError(f"rng must be one generator or one per replica ({self.n_replicas}), got {len(streams)}")
        if not all(isinstance(st, np.random.Generator) for st in streams):
            raise ValueError("rng must be a numpy.random.Generator or a list of them, one per replica")
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
            :func:`~symbreak.engine.replica_streams`); with one per replica, replica ``r``'s draws depend only on
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
        return (x, *self._point_constants())

    def _point_constants(self):
        """``(L, c)`` of :meth:`points` without drawing: the factor as a matrix (diagonal for a 1-D
        ``factor``, of the sampler's dtype) and ``c_r / B`` per replica."""
        if not self.points_only:
            raise ValueError("points needs one batch size B < d for every replica; use draw")
        lf = np.diag(self.factor) if self.factor.ndim == 1 else self._lf
        bsz = int(self.batch_sizes[0])
        return np.ascontiguousarray(lf, dtype=self.dtype), (self.scale / bsz).astype(self.dtype)

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

    def lane_arguments(self, rng):
        """What a compiled step needs to draw each step's Bartlett variates itself, from the replicas'
        own streams (``symbreak._sfc64.bartlett_factor_lane``): the same variates, in the same
        order, as :meth:`variates` and :meth:`draw` take from them, so the same minibatches.

        Only where :attr:`bartlett_only`, with one stream per replica.

        Returns
        -------
        tuple or None
            ``(zaddr, uaddr, gaddr, mt_d, mt_c, boost, inv_a, shape1, mz, mg)``: the state addresses
            of each replica's three streams (normals, uniforms, fallback gammas), the Marsaglia–Tsang
            constants, and the multipliers of :meth:`variates`. ``None`` when a stream is not NumPy's
            SFC64, or when a stream serves two replicas or two roles (a compiled step holds a SIMD
            group's streams side by side, each as its own copy): then use :meth:`variates`. The
            compiled step advances the streams in place.
        """
        if not self.bartlett_only:
            raise ValueError("lane_arguments needs a 1-D factor and batch sizes >= d for every replica")
        streams = self._check_streams(rng)
        if streams is None:
            return None
        addr = self._addresses(streams, [self._aux_streams(st) for st in streams])
        if addr is None or np.unique(np.concatenate(addr)).size != 3 * len(streams):
            return None
        return (*addr, self._mt_d, self._mt_c, self._boost, self._inv_a, self._shape1, self._mz, self._mg)

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
# the same draws on a torch device (GPU path)
# --------------------------------------------------------------------------------------------
class TorchWishartBlockSampler:
    """:class:`WishartBlockSampler` on a torch device: ``c_r Σ̂`` for every replica and step of a
    block, drawn by the Bartlett decomposition with torch's generator on ``device``.

    The law is the same as on the CPU (exact); the random stream is one per ensemble (a GPU draws
    all replicas in one call), so on a device replica ``r``'s draws depend on ``(seed, r)`` *and*
    the ensemble, unlike :func:`~symbreak.engine.replica_streams`. Needs ``B ≥ d`` for every replica.

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
