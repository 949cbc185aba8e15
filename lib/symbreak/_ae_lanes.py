"""The linear autoencoder's compiled SGD step with replicas in SIMD lanes and the minibatch drawn
inside the step: the kernel behind :class:`symbreak.autoencoder.sgd._LaneLinearStepper`.

It sits beside the engine, outside the chapter package: a compiled kernel, with no mathematics of
its own beyond the chapter's update (the pages reach it through
:func:`symbreak.autoencoder.simulate_sgd`).
Imported on first use (it imports numba). The kernel is compiled on first use (about 16 s in
float64, 21 s in float32 on the reference machine; :mod:`symbreak.precompile` does it ahead) and
cached on disk. The large pieces of the step (:func:`_group`, :func:`_single`, and the products of
:func:`_group`: :func:`_tri_right`, :func:`_tri_right_t`, :func:`_gram`, :func:`_small_left`) are
functions of their own, compiled for each vector width ``w`` (a literal, by ``numba.literally``;
:func:`_gram` also for each of its two constant row offsets), not inlined by numba (whose inlining
copies the callee's IR at each call site: that copying took two thirds of the compile time); LLVM
still inlines where it pays. numba's cache checks only this file's time stamp, so after editing
:mod:`symbreak._lanes`, :mod:`symbreak._sfc64_lanes` or the Bartlett draws of :mod:`symbreak._sfc64`
(which the kernel inlines) touch this file or clear its ``__pycache__``."""

from __future__ import annotations

import math

import numba
import numba.extending
import numpy as np  # noqa: F401  (numba's typing of the kernel)

from . import _sfc64
from ._lanes import vacc, vcopy, vfma, vfmab, vmul, vmulb, vstore, vstore_sub, vsub_from
from ._sfc64_lanes import load_lanes, normal_lanes, store_lanes, uniform_lanes

__all__ = ["_LANES", "_linear_sgd_lanes"]


@numba.njit
def _tri_right(H, F, out, e, nrows, d, w):  # pragma: no cover - run compiled
    """Rows ``e … e + nrows − 1`` (``nrows`` 4 or 2) of ``out = H F``, ``F`` lower triangular (packed):
    ``out[e, c] = Σ_{l ≥ c} H[e, l] F[l, c]``, summed in the order of ``l``; two columns ``c``, ``c + 1``
    at a time (eight independent sums for four rows, in the accumulators ``a`` and ``b``: twice the
    independent additions of one column at a time), sharing each load of ``H``, and the rows sharing
    each load of ``F``."""
    numba.literally(w)
    a0, a1, a2, a3 = vacc(F, w), vacc(F, w), vacc(F, w), vacc(F, w)
    b0, b1, b2, b3 = vacc(F, w), vacc(F, w), vacc(F, w), vacc(F, w)
    c = 0
    while c < d:
        o = (c * (c + 1) // 2 + c) * w  # F[c, c]
        vmul(a0, H, (e * d + c) * w, F, o, w)
        vmul(a1, H, ((e + 1) * d + c) * w, F, o, w)
        if nrows == 4:
            vmul(a2, H, ((e + 2) * d + c) * w, F, o, w)
            vmul(a3, H, ((e + 3) * d + c) * w, F, o, w)
        if c + 1 < d:
            for l in range(c + 1, d):
                o = (l * (l + 1) // 2 + c) * w  # F[l, c], then F[l, c + 1] at o + w
                h = (e * d + l) * w
                vfma(a0, H, h, F, o, w)
                vfma(a1, H, h + d * w, F, o, w)
                if nrows == 4:
                    vfma(a2, H, h + 2 * d * w, F, o, w)
                    vfma(a3, H, h + 3 * d * w, F, o, w)
                if l == c + 1:
                    vmul(b0, H, h, F, o + w, w)
                    vmul(b1, H, h + d * w, F, o + w, w)
                    if nrows == 4:
                        vmul(b2, H, h + 2 * d * w, F, o + w, w)
                        vmul(b3, H, h + 3 * d * w, F, o + w, w)
                else:
                    vfma(b0, H, h, F, o + w, w)
                    vfma(b1, H, h + d * w, F, o + w, w)
                    if nrows == 4:
                        vfma(b2, H, h + 2 * d * w, F, o + w, w)
                        vfma(b3, H, h + 3 * d * w, F, o + w, w)
            vstore(b0, out, (e * d + c + 1) * w, w)
            vstore(b1, out, ((e + 1) * d + c + 1) * w, w)
            if nrows == 4:
                vstore(b2, out, ((e + 2) * d + c + 1) * w, w)
                vstore(b3, out, ((e + 3) * d + c + 1) * w, w)
        vstore(a0, out, (e * d + c) * w, w)
        vstore(a1, out, ((e + 1) * d + c) * w, w)
        if nrows == 4:
            vstore(a2, out, ((e + 2) * d + c) * w, w)
            vstore(a3, out, ((e + 3) * d + c) * w, w)
        c += 2


@numba.njit
def _tri_right_t(H, F, out, e, nrows, d, w):  # pragma: no cover - run compiled
    """Rows ``e … e + nrows − 1`` of ``out = H Fᵀ``: ``out[e, i] = Σ_{c ≤ i} H[e, c] F[i, c]``, summed in
    the order of ``c``; two columns ``i``, ``i + 1`` at a time (eight independent sums for four rows),
    sharing each load of ``H``, and the rows sharing each load of ``F``."""
    numba.literally(w)
    a0, a1, a2, a3 = vacc(F, w), vacc(F, w), vacc(F, w), vacc(F, w)
    b0, b1, b2, b3 = vacc(F, w), vacc(F, w), vacc(F, w), vacc(F, w)
    i = 0
    while i < d:
        o = i * (i + 1) // 2  # F[i, 0]; F[i + 1, 0] at o + i + 1
        p = o + i + 1
        two = i + 1 < d
        h = e * d * w
        vmul(a0, H, h, F, o * w, w)
        vmul(a1, H, h + d * w, F, o * w, w)
        if nrows == 4:
            vmul(a2, H, h + 2 * d * w, F, o * w, w)
            vmul(a3, H, h + 3 * d * w, F, o * w, w)
        if two:
            vmul(b0, H, h, F, p * w, w)
            vmul(b1, H, h + d * w, F, p * w, w)
            if nrows == 4:
                vmul(b2, H, h + 2 * d * w, F, p * w, w)
                vmul(b3, H, h + 3 * d * w, F, p * w, w)
        for c in range(1, i + 1):
            h = (e * d + c) * w
            vfma(a0, H, h, F, (o + c) * w, w)
            vfma(a1, H, h + d * w, F, (o + c) * w, w)
            if nrows == 4:
                vfma(a2, H, h + 2 * d * w, F, (o + c) * w, w)
                vfma(a3, H, h + 3 * d * w, F, (o + c) * w, w)
            if two:
                vfma(b0, H, h, F, (p + c) * w, w)
                vfma(b1, H, h + d * w, F, (p + c) * w, w)
                if nrows == 4:
                    vfma(b2, H, h + 2 * d * w, F, (p + c) * w, w)
                    vfma(b3, H, h + 3 * d * w, F, (p + c) * w, w)
        vstore(a0, out, (e * d + i) * w, w)
        vstore(a1, out, ((e + 1) * d + i) * w, w)
        if nrows == 4:
            vstore(a2, out, ((e + 2) * d + i) * w, w)
            vstore(a3, out, ((e + 3) * d + i) * w, w)
        if two:
            h = (e * d + i + 1) * w  # the last term of column i + 1: c = i + 1
            vfma(b0, H, h, F, (p + i + 1) * w, w)
            vfma(b1, H, h + d * w, F, (p + i + 1) * w, w)
            if nrows == 4:
                vfma(b2, H, h + 2 * d * w, F, (p + i + 1) * w, w)
                vfma(b3, H, h + 3 * d * w, F, (p + i + 1) * w, w)
            vstore(b0, out, (e * d + i + 1) * w, w)
            vstore(b1, out, ((e + 1) * d + i + 1) * w, w)
            if nrows == 4:
                vstore(b2, out, ((e + 2) * d + i + 1) * w, w)
                vstore(b3, out, ((e + 3) * d + i + 1) * w, w)
        i += 2


@numba.njit
def _gram(X, xo, out, k, d, w):  # pragma: no cover - run compiled
    """``out = X Xᵀ`` for the ``k`` rows of ``X`` from row ``xo`` (each ``d`` long): for ``b ≤ a``,
    ``out[a, b] = out[b, a] = Σ_c X[a, c] X[b, c]``, summed in the order of ``c``; four ``b`` of a row at
    a time (four independent sums that share each load of row ``a``, instead of one chain of
    dependent additions), the last ones of the row one at a time."""
    numba.literally(w)
    a0, a1, a2, a3 = vacc(X, w), vacc(X, w), vacc(X, w), vacc(X, w)
    for a in range(k):
        ra = (xo + a) * d * w
        b = 0
        while b + 4 <= a + 1:
            rb = (xo + b) * d * w
            vmul(a0, X, ra, X, rb, w)
            vmul(a1, X, ra, X, rb + d * w, w)
            vmul(a2, X, ra, X, rb + 2 * d * w, w)
            vmul(a3, X, ra, X, rb + 3 * d * w, w)
            for c in range(1, d):
                x = ra + c * w
                y = rb + c * w
                vfma(a0, X, x, X, y, w)
                vfma(a1, X, x, X, y + d * w, w)
                vfma(a2, X, x, X, y + 2 * d * w, w)
                vfma(a3, X, x, X, y + 3 * d * w, w)
            vstore(a0, out, (a * k + b) * w, w)
            vstore(a0, out, (b * k + a) * w, w)
            vstore(a1, out, (a * k + b + 1) * w, w)
            vstore(a1, out, ((b + 1) * k + a) * w, w)
            vstore(a2, out, (a * k + b + 2) * w, w)
            vstore(a2, out, ((b + 2) * k + a) * w, w)
            vstore(a3, out, (a * k + b + 3) * w, w)
            vstore(a3, out, ((b + 3) * k + a) * w, w)
            b += 4
        while b <= a:
            rb = (xo + b) * d * w
            vmul(a0, X, ra, X, rb, w)
            for c in range(1, d):
                vfma(a0, X, ra + c * w, X, rb + c * w, w)
            vstore(a0, out, (a * k + b) * w, w)
            vstore(a0, out, (b * k + a) * w, w)
            b += 1


@numba.njit
def _small_left(K, X, S, out, k, d, w):  # pragma: no cover - run compiled
    """``out = K X − S`` for ``K`` (k × k) and ``X``, ``S`` (k × d): ``out[a, c] = Σ_b K[a, b] X[b, c] − S[a, c]``,
    summed in the order of ``b``; two rows and four columns at a time (eight independent sums: each
    load of ``K`` shared by four columns, each load of ``X`` by two rows)."""
    numba.literally(w)
    a0, a1, a2, a3 = vacc(K, w), vacc(K, w), vacc(K, w), vacc(K, w)
    b0, b1, b2, b3 = vacc(K, w), vacc(K, w), vacc(K, w), vacc(K, w)
    a = 0
    while a < k:
        two = a + 1 < k
        c = 0
        while c + 4 <= d:
            x = a * k * w
            y = x + k * w  # K[a + 1, 0]
            vmul(a0, K, x, X, c * w, w)
            vmul(a1, K, x, X, (c + 1) * w, w)
            vmul(a2, K, x, X, (c + 2) * w, w)
            vmul(a3, K, x, X, (c + 3) * w, w)
            if two:
                vmul(b0, K, y, X, c * w, w)
                vmul(b1, K, y, X, (c + 1) * w, w)
                vmul(b2, K, y, X, (c + 2) * w, w)
                vmul(b3, K, y, X, (c + 3) * w, w)
            for b in range(1, k):
                x = (a * k + b) * w
                y = x + k * w
                z = (b * d + c) * w
                vfma(a0, K, x, X, z, w)
                vfma(a1, K, x, X, z + w, w)
                vfma(a2, K, x, X, z + 2 * w, w)
                vfma(a3, K, x, X, z + 3 * w, w)
                if two:
                    vfma(b0, K, y, X, z, w)
                    vfma(b1, K, y, X, z + w, w)
                    vfma(b2, K, y, X, z + 2 * w, w)
                    vfma(b3, K, y, X, z + 3 * w, w)
            o = (a * d + c) * w
            vstore_sub(a0, S, o, out, o, w)
            vstore_sub(a1, S, o + w, out, o + w, w)
            vstore_sub(a2, S, o + 2 * w, out, o + 2 * w, w)
            vstore_sub(a3, S, o + 3 * w, out, o + 3 * w, w)
            if two:
                o += d * w
                vstore_sub(b0, S, o, out, o, w)
                vstore_sub(b1, S, o + w, out, o + w, w)
                vstore_sub(b2, S, o + 2 * w, out, o + 2 * w, w)
                vstore_sub(b3, S, o + 3 * w, out, o + 3 * w, w)
            c += 4
        while c < d:
            vmul(a0, K, a * k * w, X, c * w, w)
            if two:
                vmul(b0, K, (a + 1) * k * w, X, c * w, w)
            for b in range(1, k):
                vfma(a0, K, (a * k + b) * w, X, (b * d + c) * w, w)
                if two:
                    vfma(b0, K, ((a + 1) * k + b) * w, X, (b * d + c) * w, w)
            vstore_sub(a0, S, (a * d + c) * w, out, (a * d + c) * w, w)
            if two:
                vstore_sub(b0, S, ((a + 1) * d + c) * w, out, ((a + 1) * d + c) * w, w)
            c += 1
        a += 2


@numba.njit(inline="always")
def _cols4(X, xo, xs, Y, yo, ys, ysg, t0, t1, out, oo, nb, S, so, sub, a0, a1, a2, a3, n):  # pragma: no cover
    """Row blocks ``i < nb`` (``nb`` ≤ 4) of one column: ``out[oo + i n : + n] = Σ_t X[xo + t·xs + i n : + n] · Y[y_t]``
    (``− S[so + i n : + n]`` where ``sub``), ``t`` from ``t0`` to ``t1 − 1`` in order, ``y_{t0} = yo`` and
    ``y_t = y_{t−1} + ys + (t − 1)·ysg``; the blocks share each load of ``Y``."""
    x = xo + t0 * xs
    vmulb(a0, X, x, Y, yo, n)
    if nb > 1:
        vmulb(a1, X, x + n, Y, yo, n)
    if nb > 2:
        vmulb(a2, X, x + 2 * n, Y, yo, n)
    if nb > 3:
        vmulb(a3, X, x + 3 * n, Y, yo, n)
    y = yo
    for t in range(t0 + 1, t1):
        y += ys + (t - 1) * ysg
        x = xo + t * xs
        vfmab(a0, X, x, Y, y, n)
        if nb > 1:
            vfmab(a1, X, x + n, Y, y, n)
        if nb > 2:
            vfmab(a2, X, x + 2 * n, Y, y, n)
        if nb > 3:
            vfmab(a3, X, x + 3 * n, Y, y, n)
    if sub:
        vstore_sub(a0, S, so, out, oo, n)
        if nb > 1:
            vstore_sub(a1, S, so + n, out, oo + n, n)
        if nb > 2:
            vstore_sub(a2, S, so + 2 * n, out, oo + 2 * n, n)
        if nb > 3:
            vstore_sub(a3, S, so + 3 * n, out, oo + 3 * n, n)
    else:
        vstore(a0, out, oo, n)
        if nb > 1:
            vstore(a1, out, oo + n, n)
        if nb > 2:
            vstore(a2, out, oo + 2 * n, n)
        if nb > 3:
            vstore(a3, out, oo + 3 * n, n)


@numba.njit(inline="always")
def _col(X, xo, xs, Y, yo, ys, ysg, t0, t1, out, oo, nb, S, so, sub, a0, a1, a2, a3, n):  # pragma: no cover
    """:func:`_cols4` for the ``nb`` row blocks of a column, four at a time."""
    for i in range(0, nb, 4):
        m = i * n
        _cols4(X, xo + m, xs, Y, yo, ys, ysg, t0, t1, out, oo + m, min(4, nb - i), S, so + m, sub, a0, a1, a2, a3, n)


@numba.njit(inline="always")
def _rect2(X, xo, xs, Y, yo, yd, ys, t1, out, oo, od, nb, S, so, sd, sub, a0, a1, a2, a3, n):  # pragma: no cover
    """Row blocks ``i < nb`` (``nb`` ≤ 2) of two columns at once (four independent sums): column ``p``
    (``p`` = 0, 1) is ``out[oo + p·od + i n : + n] = Σ_{t < t1} X[xo + t·xs + i n : + n] · Y[yo + p·yd + t·ys]``
    (``− S[so + p·sd + i n : + n]`` where ``sub``), summed in the order of ``t``: :func:`_cols4`'s
    sums, two columns sharing each load of ``X``."""
    y2 = yo + yd
    vmulb(a0, X, xo, Y, yo, n)
    vmulb(a2, X, xo, Y, y2, n)
    if nb > 1:
        vmulb(a1, X, xo + n, Y, yo, n)
        vmulb(a3, X, xo + n, Y, y2, n)
    for t in range(1, t1):
        x = xo + t * xs
        vfmab(a0, X, x, Y, yo + t * ys, n)
        vfmab(a2, X, x, Y, y2 + t * ys, n)
        if nb > 1:
            vfmab(a1, X, x + n, Y, yo + t * ys, n)
            vfmab(a3, X, x + n, Y, y2 + t * ys, n)
    o2 = oo + od
    if sub:
        vstore_sub(a0, S, so, out, oo, n)
        vstore_sub(a2, S, so + sd, out, o2, n)
        if nb > 1:
            vstore_sub(a1, S, so + n, out, oo + n, n)
            vstore_sub(a3, S, so + sd + n, out, o2 + n, n)
    else:
        vstore(a0, out, oo, n)
        vstore(a2, out, o2, n)
        if nb > 1:
            vstore(a1, out, oo + n, n)
            vstore(a3, out, o2 + n, n)


@numba.njit(inline="always")
def _rect(X, xo, xs, Y, yo, yd, ys, t1, out, od, ncol, nb, S, so, sd, sub, a0, a1, a2, a3, n):  # pragma: no cover
    """Columns ``p < ncol`` of ``out[p·od + i n : + n] = Σ_{t < t1} X[xo + t·xs + i n : + n] · Y[yo + p·yd + t·ys]``
    (``− S[so + p·sd + i n : + n]`` where ``sub``), for the ``nb`` row blocks: two columns and
    two blocks at a time (:func:`_rect2`), an odd last column by :func:`_col`."""
    p = 0
    while p + 2 <= ncol:
        for i in range(0, nb, 2):
            m = i * n
            _rect2(X, xo + m, xs, Y, yo + p * yd, yd, ys, t1, out, p * od + m, od, min(2, nb - i), S,
                   so + p * sd + m, sd, sub, a0, a1, a2, a3, n)  # fmt: skip
        p += 2
    if p < ncol:
        _col(X, xo, xs, Y, yo + p * yd, ys, 0, 0, t1, out, p * od, nb, S, so + p * sd, sub, a0, a1, a2, a3, n)


@numba.njit
def _single(
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
    Ut,
    W,
    T,
    HF,
    K1,
    K2,
    zb,
    ub,
    gb,
    j,
    n,
):  # pragma: no cover - run compiled
    """:func:`_linear_sgd_lanes` for the one replica ``j``, vectorised over the rows of its matrices
    (``n`` rows per SIMD vector, a literal) instead of over replicas: every entry of every product is
    the same sequence of IEEE operations as in a lane of :func:`_group` (the same products, summed in
    the same order, never fused), so the replica's numbers are those it has in a group, bit for bit.

    The matrices are held transposed, a column's rows contiguous and padded with zeros to ``kp``
    (a multiple of ``n``): ``Ut``, ``W`` (d × kp: ``Ut[c, a] = U[a, c]``, ``W[c, a] = Wᵀ[a, c]``),
    ``T``, ``HF`` (d × 2kp: the k rows of ``N`` or ``η∇_U L̂``, then from row k those of ``U``, the
    products over their first 2k rows rounded up to whole vectors), ``K1``, ``K2`` (k × kp,
    symmetric). Each product is a sum over columns of a matrix times one number of another (the
    number broadcast to every row); a padded row only ever meets padded rows, never a real one."""
    numba.literally(n)
    d = V.shape[2]
    kp = (k + n - 1) // n * n
    nk = kp // n
    nt = (2 * k + n - 1) // n  # vectors of the 2k rows of T and HF
    k2 = 2 * kp
    a0, a1, a2, a3 = vacc(F, n), vacc(F, n), vacc(F, n), vacc(F, n)
    nz = d * (d - 1) // 2
    for x in range(d * kp):
        Ut[x] = 0.0
        W[x] = 0.0
    for a in range(k):
        for c in range(d):
            Ut[c * kp + a] = V[j, a, c]
            W[c * kp + a] = V[j, k + a, c]
    zs, zh, zw = _sfc64._load(zaddr[j])
    us, uh, uw = _sfc64._load(uaddr[j])
    gs, gh, gw = _sfc64._load(gaddr[j])
    for _t in range(n_steps):
        zs, zh, zw, us, gs = _sfc64.bartlett_factor_lane(
            zs, zh, zw, us, gs, j, nz, mt_d, mt_c, boost, inv_a, shape1, mz, mg, zb, ub, gb, F, 0, 1, f32
        )
        # K1 = Wᵀ W: column b is Σ_c W[c, :] W[c, b]
        _rect(W, 0, kp, W, 0, 1, kp, d, K1, kp, k, nk, K1, 0, 0, False, a0, a1, a2, a3, n)
        # T = [N; U], N = K1 U − Wᵀ: column c of N is Σ_b K1[:, b] U[b, c] − Wᵀ[:, c]
        _rect(K1, 0, kp, Ut, 0, kp, 1, k, T, k2, d, nk, W, 0, kp, True, a0, a1, a2, a3, n)
        for c in range(d):
            for i in range(0, kp, n):
                vcopy(T, c * k2 + k + i, Ut, c * kp + i, n)
        # HF = T F: column c is Σ_{l ≥ c} T[:, l] F[l, c] (F[l, c] at l(l+1)/2 + c)
        for c in range(d):
            _col(T, 0, k2, F, c * (c + 1) // 2 + c, 1, 1, c, d, HF, c * k2, nt, HF, 0, False, a0, a1, a2, a3, n)
        # T = HF Fᵀ: column i is Σ_{c ≤ i} HF[:, c] F[i, c]
        for i in range(d):
            _col(HF, 0, k2, F, i * (i + 1) // 2, 1, 0, 0, i + 1, T, i * k2, nt, T, 0, False, a0, a1, a2, a3, n)
        # K2 = (U F)(U F)ᵀ
        _rect(HF, k, k2, HF, k, 1, k2, d, K2, kp, k, nk, K2, 0, 0, False, a0, a1, a2, a3, n)
        # HF[:k] = K2 Wᵀ − U ηΣ̂
        _rect(K2, 0, kp, W, 0, kp, 1, k, HF, k2, d, nk, T, k, k2, True, a0, a1, a2, a3, n)
        for c in range(d):
            for i in range(0, kp, n):
                vsub_from(Ut, c * kp + i, T, c * k2 + i, n)
                vsub_from(W, c * kp + i, HF, c * k2 + i, n)
            for a in range(k, kp):  # (Ut's padding took rows of U ηΣ̂: cleared for the next copy into T)
                Ut[c * kp + a] = 0.0
    _sfc64._store(zaddr[j], zs, zh, zw)
    _sfc64._store(uaddr[j], us, uh, uw)
    _sfc64._store(gaddr[j], gs, gh, gw)
    for a in range(k):
        for c in range(d):
            V[j, a, c] = Ut[c * kp + a]
            V[j, k + a, c] = W[c * kp + a]


def _grp(zaddr, uaddr, gaddr, mt_d, mt_c, boost, inv_a, shape1, mz, mg, V, k, n_steps, f32,
         F, U, Wt, T, HF, K1, K2, zb, ub, gb, r0):  # fmt: skip
    """:func:`_group` with :data:`_LANES` lanes (16 in float32, 8 in float64), chosen by the dtype when
    the kernel is compiled (only that width is compiled)."""


@numba.extending.overload(_grp)
def _grp_overload(zaddr, uaddr, gaddr, mt_d, mt_c, boost, inv_a, shape1, mz, mg, V, k, n_steps, f32,
                  F, U, Wt, T, HF, K1, K2, zb, ub, gb, r0):  # fmt: skip
    if F.dtype == numba.types.float32:

        def impl(zaddr, uaddr, gaddr, mt_d, mt_c, boost, inv_a, shape1, mz, mg, V, k, n_steps, f32,
                 F, U, Wt, T, HF, K1, K2, zb, ub, gb, r0):  # fmt: skip  # pragma: no cover
            _group(zaddr, uaddr, gaddr, mt_d, mt_c, boost, inv_a, shape1, mz, mg, V, k, n_steps, f32,
                   F, U, Wt, T, HF, K1, K2, zb, ub, gb, r0, 16)  # fmt: skip

    else:

        def impl(zaddr, uaddr, gaddr, mt_d, mt_c, boost, inv_a, shape1, mz, mg, V, k, n_steps, f32,
                 F, U, Wt, T, HF, K1, K2, zb, ub, gb, r0):  # fmt: skip  # pragma: no cover
            _group(zaddr, uaddr, gaddr, mt_d, mt_c, boost, inv_a, shape1, mz, mg, V, k, n_steps, f32,
                   F, U, Wt, T, HF, K1, K2, zb, ub, gb, r0, 8)  # fmt: skip

    return impl


def _grp8(zaddr, uaddr, gaddr, mt_d, mt_c, boost, inv_a, shape1, mz, mg, V, k, n_steps, f32,
          F, U, Wt, T, HF, K1, K2, zb, ub, gb, r0):  # fmt: skip
    """:func:`_group` with 8 lanes in float32 (compiled only there; nothing in float64)."""


@numba.extending.overload(_grp8)
def _grp8_overload(zaddr, uaddr, gaddr, mt_d, mt_c, boost, inv_a, shape1, mz, mg, V, k, n_steps, f32,
                   F, U, Wt, T, HF, K1, K2, zb, ub, gb, r0):  # fmt: skip
    if F.dtype == numba.types.float32:

        def impl(zaddr, uaddr, gaddr, mt_d, mt_c, boost, inv_a, shape1, mz, mg, V, k, n_steps, f32,
                 F, U, Wt, T, HF, K1, K2, zb, ub, gb, r0):  # fmt: skip  # pragma: no cover
            _group(zaddr, uaddr, gaddr, mt_d, mt_c, boost, inv_a, shape1, mz, mg, V, k, n_steps, f32,
                   F, U, Wt, T, HF, K1, K2, zb, ub, gb, r0, 8)  # fmt: skip

    else:

        def impl(zaddr, uaddr, gaddr, mt_d, mt_c, boost, inv_a, shape1, mz, mg, V, k, n_steps, f32,
                 F, U, Wt, T, HF, K1, K2, zb, ub, gb, r0):  # fmt: skip  # pragma: no cover
            pass

    return impl


def _one(zaddr, uaddr, gaddr, mt_d, mt_c, boost, inv_a, shape1, mz, mg, V, k, n_steps, f32,
         F, Ut, W, T, HF, K1, K2, zb, ub, gb, j):  # fmt: skip
    """:func:`_single` with one 512-bit vector of rows (:data:`_ROWS`: 16 in float32, 8 in float64),
    chosen by the dtype when the kernel is compiled (only that width is compiled)."""


@numba.extending.overload(_one)
def _one_overload(zaddr, uaddr, gaddr, mt_d, mt_c, boost, inv_a, shape1, mz, mg, V, k, n_steps, f32,
                  F, Ut, W, T, HF, K1, K2, zb, ub, gb, j):  # fmt: skip
    if F.dtype == numba.types.float32:

        def impl(zaddr, uaddr, gaddr, mt_d, mt_c, boost, inv_a, shape1, mz, mg, V, k, n_steps, f32,
                 F, Ut, W, T, HF, K1, K2, zb, ub, gb, j):  # fmt: skip  # pragma: no cover
            _single(zaddr, uaddr, gaddr, mt_d, mt_c, boost, inv_a, shape1, mz, mg, V, k, n_steps, f32,
                    F, Ut, W, T, HF, K1, K2, zb, ub, gb, j, 16)  # fmt: skip

    else:

        def impl(zaddr, uaddr, gaddr, mt_d, mt_c, boost, inv_a, shape1, mz, mg, V, k, n_steps, f32,
                 F, Ut, W, T, HF, K1, K2, zb, ub, gb, j):  # fmt: skip  # pragma: no cover
            _single(zaddr, uaddr, gaddr, mt_d, mt_c, boost, inv_a, shape1, mz, mg, V, k, n_steps, f32,
                    F, Ut, W, T, HF, K1, K2, zb, ub, gb, j, 8)  # fmt: skip

    return impl


#: Replicas that :func:`_linear_sgd_lanes` steps together, one SIMD lane each, by dtype (one 512-bit
#: vector; in float32 then one group of 8 where 8–15 are left; the rest of a chunk one at a time).
_LANES = {"float64": 8, "float32": 16}
#: Rows per SIMD vector in :func:`_single` (a chunk's last replicas, one at a time), by dtype.
_ROWS = {"float64": 8, "float32": 16}


@numba.njit
def _draw_factor(
    S, H, R, US, Z, Ub, mzl, gaddr, mt_d, mt_c, boost, inv_a, shape1, mg, nz, F, gb, r0, w
):  # pragma: no cover
    """One step's Bartlett factor of each replica ``r0 … r0 + w − 1`` into its lane of ``F``: the
    variates of :func:`symbreak._sfc64.bartlett_factor_lane` (the same streams, order and numbers),
    drawn for the ``w`` lanes at once (:mod:`symbreak._sfc64_lanes`): the normals (``Z``, nz + d
    positions of ``w`` lanes) from the lanes' normal streams ``S``, ``H``, the uniforms (``Ub``, 2d
    positions) from their uniform streams ``US``, then each lane's gamma variates from its normals
    and uniforms (its fallback stream at ``gaddr``), and the factor: ``F_ab = z_n · mz[j, n]`` below
    the diagonal (one vector product per entry, ``mzl`` holding ``mz`` lane by lane) and
    ``F_aa = sqrt(g_a) · mg[j, a]``, with the same operations and precision."""
    numba.literally(w)
    d = gb.shape[0]
    normal_lanes(S, H, Z, 0, nz + d, R, w)
    uniform_lanes(US, Ub, 0, 2 * d, w)
    for q in range(w):
        j = r0 + q
        gs, gh, gw = _sfc64._load(gaddr[j])
        gs = _sfc64.bartlett_gammas(gs, j, Z, nz * w + q, Ub, q, w, mt_d, mt_c, boost, inv_a, shape1, gb)
        _sfc64._store(gaddr[j], gs, gh, gw)
        for a in range(d):
            F[(a * (a + 1) // 2 + a) * w + q] = math.sqrt(gb[a]) * mg[j, a]
    acc = vacc(F, w)
    n = 0
    for a in range(d):
        row = a * (a + 1) // 2
        for b in range(a):
            vmul(acc, Z, n * w, mzl, n * w, w)
            vstore(acc, F, (row + b) * w, w)
            n += 1


@numba.njit
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
    numba.literally(w)
    d = V.shape[2]
    kd = k * d
    nz = d * (d - 1) // 2
    for a in range(k):
        for c in range(d):
            o = (a * d + c) * w
            for q in range(w):
                U[o + q] = V[r0 + q, a, c]
                Wt[o + q] = V[r0 + q, k + a, c]
    # two factors: step t + 1's is drawn (its diagonal lane by lane, by scalar stores) before step t's
    # products read step t's (whole vectors), so that no vector load waits on the scalar stores just made
    nf = F.size // 2
    # the lanes' normal and uniform streams, held side by side for the whole call
    S, H, R = np.empty(4 * w, np.uint64), np.empty(2 * w, np.uint32), np.empty(w, np.uint64)
    US, UH = np.empty(4 * w, np.uint64), np.empty(2 * w, np.uint32)
    Z, Ub = np.empty((nz + d) * w, F.dtype), np.empty(2 * d * w, np.float64)
    mzl = np.empty(nz * w, mz.dtype)
    for x in range(nz):
        for q in range(w):
            mzl[x * w + q] = mz[r0 + q, x]
    load_lanes(zaddr, r0, S, H, w)
    load_lanes(uaddr, r0, US, UH, w)
    if n_steps > 0:
        _draw_factor(S, H, R, US, Z, Ub, mzl, gaddr, mt_d, mt_c, boost, inv_a, shape1, mg, nz, F[:nf], gb, r0, w)
    for _t in range(n_steps):
        Fc = F[(_t % 2) * nf : (_t % 2 + 1) * nf]
        if _t + 1 < n_steps:
            Fn = F[((_t + 1) % 2) * nf : ((_t + 1) % 2 + 1) * nf]
            _draw_factor(S, H, R, US, Z, Ub, mzl, gaddr, mt_d, mt_c, boost, inv_a, shape1, mg, nz, Fn, gb, r0, w)
        # K1 = Wᵀ W (k × k, symmetric): rows of Wt
        _gram(Wt, 0, K1, k, d, w)
        # T = [N; U] with N = K1 U − Wᵀ
        _small_left(K1, U, Wt, T, k, d, w)
        for x in range(kd):
            vcopy(T, (kd + x) * w, U, x * w, w)
        # HF = T F = [N F; U F], then T = HF Fᵀ (T[:k] = η∇_U L̂, T[k:] = U ηΣ̂): four rows at a time
        # (two in the last block when 2k = 4n + 2), both products of a block before the next, so that
        # its rows stay in the core's first cache (each row of either product needs only its own row)
        for e in range(0, 2 * k, 4):
            _tri_right(T, Fc, HF, e, min(4, 2 * k - e), d, w)
            _tri_right_t(HF, Fc, T, e, min(4, 2 * k - e), d, w)
        # K2 = (U F)(U F)ᵀ = U ηΣ̂ Uᵀ (rows k … 2k − 1 of HF)
        _gram(HF, k, K2, k, d, w)
        # HF[:k] = η∇_{Wᵀ} L̂ = K2 Wᵀ − U ηΣ̂
        _small_left(K2, Wt, T[kd * w :], HF, k, d, w)
        for x in range(kd):
            vsub_from(U, x * w, T, x * w, w)
            vsub_from(Wt, x * w, HF, x * w, w)
    store_lanes(zaddr, r0, S, H, w)
    store_lanes(uaddr, r0, US, UH, w)
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
    Ut1,
    W1,
    T1,
    HF1,
    K11,
    K21,
):  # pragma: no cover - run compiled
    """``n_steps`` SGD steps of every replica of the stack ``V = [U; Wᵀ]`` (R, 2k, d), drawing each
    step's minibatch inside the step (compiled, numba, ``nogil``).

    The replicas run in groups of ``_LANES``, one SIMD lane each (:mod:`symbreak._lanes`: every
    quantity of the step is held as ``w`` consecutive numbers, one per replica of the group, and
    every operation is one vector operation over the group); the last few (a chunk of the book's two
    seeds is all last few) one at a time, vectorised over the rows of the replica's matrices instead
    (:func:`_single`). Every entry is the same sequence of IEEE operations on either path (the same
    products summed in the same order, no fused multiply-adds), so a replica's numbers do not depend
    on how many replicas run with it, nor on which path it takes. At each step, each replica draws
    its Bartlett factor ``F`` (``F Fᵀ = ηΣ̂``) from its own three streams (state addresses
    ``zaddr``, ``uaddr``, ``gaddr``): the same variates in the same order as
    :meth:`symbreak.engine.WishartBlockSampler.variates`, so the same minibatches as every other
    path. A group draws its normals and uniforms for all its lanes at once
    (:func:`_draw_factor`, :mod:`symbreak._sfc64_lanes`), the streams held side by side for the
    whole call; a replica alone draws them one after another
    (:func:`symbreak._sfc64.bartlett_factor_lane`). Either way the factor goes straight into the
    replica's lane of ``F`` (packed lower triangle), with no block of variates written to memory. Then the update of
    :meth:`symbreak.autoencoder.sgd._LinearStepper.step` through the factor, without forming ``Σ̂``:

    ``η∇_U L̂ = Wᵀ(WU − I) ηΣ̂ = ((WᵀW U − Wᵀ) F) Fᵀ`` and
    ``η∇_{Wᵀ} L̂ = U ηΣ̂ (WU − I)ᵀ = (U ηΣ̂ Uᵀ) Wᵀ − U ηΣ̂`` with ``U ηΣ̂ = (U F) Fᵀ`` and
    ``U ηΣ̂ Uᵀ = (U F)(U F)ᵀ``:

    about ``2(2k)·d(d+1)/2 + 2k²d + k(k+1)d`` multiply-adds (14,600 at d = 20, k = 10, against
    17,540 for ``F Fᵀ`` then the four products). The same quantity as the NumPy step, summed in
    another order: the trajectories agree to rounding (tested), not bit for bit.

    Scratch (flat, C order, lanes innermost, ``L`` = :data:`_LANES` of the dtype): ``F`` (d(d+1) · L:
    two packed factors, this step's and the next one's, in :func:`_group`), ``U``, ``Wt`` (k d L),
    ``T``, ``HF`` (2k d L), ``K1``, ``K2`` (k k L); ``zb`` (d(d+1)/2) and ``gb`` (d) of the dtype,
    ``ub`` (2d, float64)."""
    r_all = V.shape[0]
    r0 = 0
    w = 16 if f32 else 8  # _LANES: one 512-bit vector of replicas
    while r0 + w <= r_all:
        _grp(zaddr, uaddr, gaddr, mt_d, mt_c, boost, inv_a, shape1, mz, mg, V, k, n_steps, f32,
             F, U, Wt, T, HF, K1, K2, zb, ub, gb, r0)  # fmt: skip
        r0 += w
    if f32 and r0 + 8 <= r_all:  # float32: eight of the last 8–15 in a 256-bit group (the same numbers)
        _grp8(zaddr, uaddr, gaddr, mt_d, mt_c, boost, inv_a, shape1, mz, mg, V, k, n_steps, f32,
              F, U, Wt, T, HF, K1, K2, zb, ub, gb, r0)  # fmt: skip
        r0 += 8
    while r0 < r_all:  # the rest one at a time, vectorised over rows (the same numbers)
        _one(zaddr, uaddr, gaddr, mt_d, mt_c, boost, inv_a, shape1, mz, mg, V, k, n_steps, f32,
             F, Ut1, W1, T1, HF1, K11, K21, zb, ub, gb, r0)  # fmt: skip
        r0 += 1
