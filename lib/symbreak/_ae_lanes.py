"""The linear autoencoder's compiled SGD step with replicas in SIMD lanes and the minibatch drawn
inside the step: the kernel behind :class:`symbreak.autoencoder.sgd._LaneLinearStepper`.

It sits beside the engine, outside the chapter package: a compiled kernel, with no mathematics of
its own beyond the chapter's update (the pages reach it through
:func:`symbreak.autoencoder.simulate_sgd`).
Imported on first use (it imports numba). The kernel is compiled on first use (10–20 s per
dtype) and cached on disk; numba's cache checks only this file's time stamp, so after editing
:mod:`symbreak._lanes` or :func:`symbreak._sfc64.bartlett_factor_lane` (which the kernel inlines)
touch this file or clear its ``__pycache__``.
"""

from __future__ import annotations

import numba
import numpy as np  # noqa: F401  (numba's typing of the kernel)

from . import _sfc64
from ._lanes import vacc, vcopy, vfma, vmul, vstore, vstore_sub, vsub_from

__all__ = ["_LANES", "_linear_sgd_lanes"]


@numba.njit(inline="always")
def _tri_right(H, F, out, e, nrows, d, a0, a1, a2, a3, w):  # pragma: no cover - run compiled
    """Rows ``e … e + nrows − 1`` (``nrows`` 4 or 2) of ``out = H F``, ``F`` lower triangular (packed):
    ``out[e, c] = Σ_{l ≥ c} H[e, l] F[l, c]``, summed in the order of ``l``; the rows share each load of ``F``."""
    for c in range(d):
        o = (c * (c + 1) // 2 + c) * w
        vmul(a0, H, (e * d + c) * w, F, o, w)
        vmul(a1, H, ((e + 1) * d + c) * w, F, o, w)
        if nrows == 4:
            vmul(a2, H, ((e + 2) * d + c) * w, F, o, w)
            vmul(a3, H, ((e + 3) * d + c) * w, F, o, w)
        for l in range(c + 1, d):
            o = (l * (l + 1) // 2 + c) * w
            vfma(a0, H, (e * d + l) * w, F, o, w)
            vfma(a1, H, ((e + 1) * d + l) * w, F, o, w)
            if nrows == 4:
                vfma(a2, H, ((e + 2) * d + l) * w, F, o, w)
                vfma(a3, H, ((e + 3) * d + l) * w, F, o, w)
        vstore(a0, out, (e * d + c) * w, w)
        vstore(a1, out, ((e + 1) * d + c) * w, w)
        if nrows == 4:
            vstore(a2, out, ((e + 2) * d + c) * w, w)
            vstore(a3, out, ((e + 3) * d + c) * w, w)


@numba.njit(inline="always")
def _tri_right_t(H, F, out, e, nrows, d, a0, a1, a2, a3, w):  # pragma: no cover - run compiled
    """Rows ``e … e + nrows − 1`` of ``out = H Fᵀ``: ``out[e, i] = Σ_{c ≤ i} H[e, c] F[i, c]``, summed in
    the order of ``c``; the rows share each load of ``F``."""
    for i in range(d):
        o = i * (i + 1) // 2
        vmul(a0, H, e * d * w, F, o * w, w)
        vmul(a1, H, (e + 1) * d * w, F, o * w, w)
        if nrows == 4:
            vmul(a2, H, (e + 2) * d * w, F, o * w, w)
            vmul(a3, H, (e + 3) * d * w, F, o * w, w)
        for c in range(1, i + 1):
            vfma(a0, H, (e * d + c) * w, F, (o + c) * w, w)
            vfma(a1, H, ((e + 1) * d + c) * w, F, (o + c) * w, w)
            if nrows == 4:
                vfma(a2, H, ((e + 2) * d + c) * w, F, (o + c) * w, w)
                vfma(a3, H, ((e + 3) * d + c) * w, F, (o + c) * w, w)
        vstore(a0, out, (e * d + i) * w, w)
        vstore(a1, out, ((e + 1) * d + i) * w, w)
        if nrows == 4:
            vstore(a2, out, ((e + 2) * d + i) * w, w)
            vstore(a3, out, ((e + 3) * d + i) * w, w)


@numba.njit(inline="always")
def _small_left(K, X, S, out, k, d, a0, a1, a2, a3, w):  # pragma: no cover - run compiled
    """``out = K X − S`` for ``K`` (k × k) and ``X``, ``S`` (k × d): ``out[a, c] = Σ_b K[a, b] X[b, c] − S[a, c]``,
    summed in the order of ``b``, four columns at a time (they share each load of ``K``)."""
    for a in range(k):
        c = 0
        while c + 4 <= d:
            x = a * k * w
            vmul(a0, K, x, X, c * w, w)
            vmul(a1, K, x, X, (c + 1) * w, w)
            vmul(a2, K, x, X, (c + 2) * w, w)
            vmul(a3, K, x, X, (c + 3) * w, w)
            for b in range(1, k):
                x = (a * k + b) * w
                vfma(a0, K, x, X, (b * d + c) * w, w)
                vfma(a1, K, x, X, (b * d + c + 1) * w, w)
                vfma(a2, K, x, X, (b * d + c + 2) * w, w)
                vfma(a3, K, x, X, (b * d + c + 3) * w, w)
            vstore_sub(a0, S, (a * d + c) * w, out, (a * d + c) * w, w)
            vstore_sub(a1, S, (a * d + c + 1) * w, out, (a * d + c + 1) * w, w)
            vstore_sub(a2, S, (a * d + c + 2) * w, out, (a * d + c + 2) * w, w)
            vstore_sub(a3, S, (a * d + c + 3) * w, out, (a * d + c + 3) * w, w)
            c += 4
        while c < d:
            vmul(a0, K, a * k * w, X, c * w, w)
            for b in range(1, k):
                vfma(a0, K, (a * k + b) * w, X, (b * d + c) * w, w)
            vstore_sub(a0, S, (a * d + c) * w, out, (a * d + c) * w, w)
            c += 1


#: Replicas that :func:`_linear_sgd_lanes` steps together, one SIMD lane each (the rest of a chunk
#: one at a time).
_LANES = 8


@numba.njit(inline="always")
def _group(
    zaddr,
    uaddr,
    gaddr,
    mt_d,
    mt_c,
    boost,
    inv_a,
    shape1,
    mz,
    mg,
    V,
    k,
    n_steps,
    f32,
    F,
    U,
    Wt,
    T,
    HF,
    K1,
    K2,
    zb,
    ub,
    gb,
    r0,
    w,
):  # pragma: no cover - run compiled
    """:func:`_linear_sgd_lanes` for the replicas ``r0 … r0 + w − 1``, one lane each (``w`` a literal)."""
    d = V.shape[2]
    acc, a1, a2, a3 = vacc(F, w), vacc(F, w), vacc(F, w), vacc(F, w)
    kd = k * d
    nz = d * (d - 1) // 2
    for a in range(k):
        for c in range(d):
            o = (a * d + c) * w
            for q in range(w):
                U[o + q] = V[r0 + q, a, c]
                Wt[o + q] = V[r0 + q, k + a, c]
    for _t in range(n_steps):
        for q in range(w):
            j = r0 + q
            zs, zh, zw = _sfc64._load(zaddr[j])
            us, uh, uw = _sfc64._load(uaddr[j])
            gs, gh, gw = _sfc64._load(gaddr[j])
            zs, zh, zw, us, gs = _sfc64.bartlett_factor_lane(
                zs, zh, zw, us, gs, j, nz, mt_d, mt_c, boost, inv_a, shape1, mz, mg, zb, ub, gb, F, q, w, f32
            )
            _sfc64._store(zaddr[j], zs, zh, zw)
            _sfc64._store(uaddr[j], us, uh, uw)
            _sfc64._store(gaddr[j], gs, gh, gw)
        # K1 = Wᵀ W (k × k, symmetric): rows of Wt
        for a in range(k):
            for b in range(a + 1):
                vmul(acc, Wt, a * d * w, Wt, b * d * w, w)
                for c in range(1, d):
                    vfma(acc, Wt, (a * d + c) * w, Wt, (b * d + c) * w, w)
                vstore(acc, K1, (a * k + b) * w, w)
                vstore(acc, K1, (b * k + a) * w, w)
        # T = [N; U] with N = K1 U − Wᵀ
        _small_left(K1, U, Wt, T, k, d, acc, a1, a2, a3, w)
        for x in range(kd):
            vcopy(T, (kd + x) * w, U, x * w, w)
        # HF = T F = [N F; U F], then T = HF Fᵀ (T[:k] = η∇_U L̂, T[k:] = U ηΣ̂): four rows at a time
        # (two in the last block when 2k = 4n + 2), both products of a block before the next, so that
        # its rows stay in the core's first cache (each row of either product needs only its own row)
        for e in range(0, 2 * k, 4):
            _tri_right(T, F, HF, e, min(4, 2 * k - e), d, acc, a1, a2, a3, w)
            _tri_right_t(HF, F, T, e, min(4, 2 * k - e), d, acc, a1, a2, a3, w)
        # K2 = (U F)(U F)ᵀ = U ηΣ̂ Uᵀ
        for a in range(k):
            for b in range(a + 1):
                vmul(acc, HF, (kd + a * d) * w, HF, (kd + b * d) * w, w)
                for c in range(1, d):
                    vfma(acc, HF, (kd + a * d + c) * w, HF, (kd + b * d + c) * w, w)
                vstore(acc, K2, (a * k + b) * w, w)
                vstore(acc, K2, (b * k + a) * w, w)
        # HF[:k] = η∇_{Wᵀ} L̂ = K2 Wᵀ − U ηΣ̂
        _small_left(K2, Wt, T[kd * w :], HF, k, d, acc, a1, a2, a3, w)
        for x in range(kd):
            vsub_from(U, x * w, T, x * w, w)
            vsub_from(Wt, x * w, HF, x * w, w)
    for a in range(k):
        for c in range(d):
            o = (a * d + c) * w
            for q in range(w):
                V[r0 + q, a, c] = U[o + q]
                V[r0 + q, k + a, c] = Wt[o + q]


def _linear_sgd_lanes(
    zaddr,
    uaddr,
    gaddr,
    mt_d,
    mt_c,
    boost,
    inv_a,
    shape1,
    mz,
    mg,
    V,
    k,
    n_steps,
    f32,
    F,
    U,
    Wt,
    T,
    HF,
    K1,
    K2,
    zb,
    ub,
    gb,
):  # pragma: no cover - run compiled
    """``n_steps`` SGD steps of every replica of the stack ``V = [U; Wᵀ]`` (R, 2k, d), drawing each
    step's minibatch inside the step (compiled, numba, ``nogil``).

    The replicas run in groups of ``_LANES`` (the last few one at a time), one SIMD lane
    each (:mod:`symbreak._lanes`: every quantity of the step is held as ``w`` consecutive numbers,
    one per replica of the group, and every operation is one vector operation over the group). A
    lane's arithmetic is the same sequence of IEEE operations whatever the group's width (no fused
    multiply-adds), so a replica's numbers do not depend on how many replicas run with it. At each
    step, for each replica of the group, :func:`symbreak._sfc64.bartlett_factor_lane` draws the
    Bartlett factor ``F`` (``F Fᵀ = ηΣ̂``)
    from the replica's own three streams (state addresses ``zaddr``, ``uaddr``, ``gaddr``): the same
    variates in the same order as :meth:`symbreak.engine.WishartBlockSampler.variates`, so the same
    minibatches as every other path, straight into the group's lane of ``F`` (packed lower
    triangle), with no block of variates written to memory. Then the update of
    :meth:`symbreak.autoencoder.sgd._LinearStepper.step` through the factor, without forming ``Σ̂``:

    ``η∇_U L̂ = Wᵀ(WU − I) ηΣ̂ = ((WᵀW U − Wᵀ) F) Fᵀ`` and
    ``η∇_{Wᵀ} L̂ = U ηΣ̂ (WU − I)ᵀ = (U ηΣ̂ Uᵀ) Wᵀ − U ηΣ̂`` with ``U ηΣ̂ = (U F) Fᵀ`` and
    ``U ηΣ̂ Uᵀ = (U F)(U F)ᵀ``:

    about ``2(2k)·d(d+1)/2 + 2k²d + k(k+1)d`` multiply-adds (14,600 at d = 20, k = 10, against
    17,540 for ``F Fᵀ`` then the four products). The same quantity as the NumPy step, summed in
    another order: the trajectories agree to rounding (tested), not bit for bit.

    Scratch (flat, C order, lanes innermost, ``L = _LANES``): ``F`` (d(d+1)/2 · L), ``U``, ``Wt``
    (k d L), ``T``, ``HF`` (2k d L), ``K1``, ``K2`` (k k L); ``zb`` (d(d+1)/2) and ``gb`` (d) of the
    dtype, ``ub`` (2d, float64)."""
    r_all = V.shape[0]
    r0 = 0
    while r0 + _LANES <= r_all:
        _group(
            zaddr,
            uaddr,
            gaddr,
            mt_d,
            mt_c,
            boost,
            inv_a,
            shape1,
            mz,
            mg,
            V,
            k,
            n_steps,
            f32,
            F,
            U,
            Wt,
            T,
            HF,
            K1,
            K2,
            zb,
            ub,
            gb,
            r0,
            8,
        )
        r0 += _LANES
    while r0 < r_all:  # the rest one at a time
        _group(
            zaddr,
            uaddr,
            gaddr,
            mt_d,
            mt_c,
            boost,
            inv_a,
            shape1,
            mz,
            mg,
            V,
            k,
            n_steps,
            f32,
            F,
            U,
            Wt,
            T,
            HF,
            K1,
            K2,
            zb,
            ub,
            gb,
            r0,
            1,
        )
        r0 += 1
