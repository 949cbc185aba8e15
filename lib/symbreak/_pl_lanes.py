"""The Platonic chapter's compiled online-SGD step with replicas in SIMD lanes: the kernel behind
:class:`symbreak.platonic.training._PlatonicModel` (online SGD).

It sits beside the engine, outside the chapter package: a compiled kernel with no mathematics of
its own beyond the chapter's update (the pages reach it through :func:`symbreak.platonic.train_sgd`).
Imported on first use (it imports numba); compiled on first use and cached on disk
(:mod:`symbreak.precompile` does it ahead). Every product of the step is summed in a register
accumulator of ``w`` lanes (:mod:`symbreak._lanes`), one replica per lane, ``w`` a literal chosen by
the dtype (:data:`_LANES`: one 512-bit vector). numba's cache checks only this file's time stamp,
so after editing :mod:`symbreak._lanes` or :func:`symbreak._sfc64.fill_normal_strided` touch this
file or clear its ``__pycache__``."""

from __future__ import annotations

import numba
import numba.extending

from . import _sfc64
from ._lanes import vacc, vaxpy_from, vfma, vfmab, vmul, vmulb, vscale, vscale_by, vstore, vsub, vsubb

__all__ = ["_LANES", "_edln_sgd_lanes"]

#: Replicas that :func:`_edln_sgd_lanes` steps together, one SIMD lane each, by dtype (one 512-bit
#: vector); a chunk's last group is filled up with idle lanes.
_LANES = {"float64": 8, "float32": 16}
#: Steps whose normals (or moments) and learning rates are moved into the lanes at once.
_AHEAD = 8


@numba.njit(inline="always")
def _dot4(X, xo, xs, Y, yo, ys, yj, K, J, a0, a1, a2, a3, w):  # pragma: no cover - run compiled
    """``a_j = Σ_{k < K} X[xo + k·xs : + w] · Y[yo + k·ys + j·yj : + w]`` for ``j < J`` (``J ≤ 4``),
    each sum in the order of ``k`` (a product, then the sums); the four share each load of ``X``."""
    vmul(a0, X, xo, Y, yo, w)
    if J > 1:
        vmul(a1, X, xo, Y, yo + yj, w)
    if J > 2:
        vmul(a2, X, xo, Y, yo + 2 * yj, w)
    if J > 3:
        vmul(a3, X, xo, Y, yo + 3 * yj, w)
    for k in range(1, K):
        x, y = xo + k * xs, yo + k * ys
        vfma(a0, X, x, Y, y, w)
        if J > 1:
            vfma(a1, X, x, Y, y + yj, w)
        if J > 2:
            vfma(a2, X, x, Y, y + 2 * yj, w)
        if J > 3:
            vfma(a3, X, x, Y, y + 3 * yj, w)


@numba.njit(inline="always")
def _dot8(X, xo, xs, xi, Y, yo, ys, yj, K, J, a0, a1, a2, a3, b0, b1, b2, b3, w):  # pragma: no cover
    """:func:`_dot4` for two rows at once: ``a_j`` from ``X[xo + k·xs]``, ``b_j`` from
    ``X[xo + xi + k·xs]``, both against ``Y[yo + k·ys + j·yj]`` (eight sums sharing each load of ``Y``)."""
    x2 = xo + xi
    vmul(a0, X, xo, Y, yo, w)
    vmul(b0, X, x2, Y, yo, w)
    if J > 1:
        vmul(a1, X, xo, Y, yo + yj, w)
        vmul(b1, X, x2, Y, yo + yj, w)
    if J > 2:
        vmul(a2, X, xo, Y, yo + 2 * yj, w)
        vmul(b2, X, x2, Y, yo + 2 * yj, w)
    if J > 3:
        vmul(a3, X, xo, Y, yo + 3 * yj, w)
        vmul(b3, X, x2, Y, yo + 3 * yj, w)
    for k in range(1, K):
        x, y = xo + k * xs, yo + k * ys
        vfma(a0, X, x, Y, y, w)
        vfma(b0, X, x + xi, Y, y, w)
        if J > 1:
            vfma(a1, X, x, Y, y + yj, w)
            vfma(b1, X, x + xi, Y, y + yj, w)
        if J > 2:
            vfma(a2, X, x, Y, y + 2 * yj, w)
            vfma(b2, X, x + xi, Y, y + 2 * yj, w)
        if J > 3:
            vfma(a3, X, x, Y, y + 3 * yj, w)
            vfma(b3, X, x + xi, Y, y + 3 * yj, w)


@numba.njit(inline="always")
def _dot4b(Y, yo, ys, C, co, cs, yj, K, J, a0, a1, a2, a3, w):  # pragma: no cover - run compiled
    """``a_j = Σ_{k < K} Y[yo + k·ys + j·yj : + w] · C[co + k·cs]`` (the number ``C[·]`` in every
    lane) for ``j < J`` (``J ≤ 4``), each sum in the order of ``k``."""
    vmulb(a0, Y, yo, C, co, w)
    if J > 1:
        vmulb(a1, Y, yo + yj, C, co, w)
    if J > 2:
        vmulb(a2, Y, yo + 2 * yj, C, co, w)
    if J > 3:
        vmulb(a3, Y, yo + 3 * yj, C, co, w)
    for k in range(1, K):
        _fma4b(Y, yo + k * ys, yj, C, co + k * cs, J, a0, a1, a2, a3, w)


@numba.njit(inline="always")
def _fma4b(Y, y, yj, C, c, J, a0, a1, a2, a3, w):  # pragma: no cover - run compiled
    """``a_j += Y[y + j·yj : + w] · C[c]`` for ``j < J`` (``J ≤ 4``)."""
    vfmab(a0, Y, y, C, c, w)
    if J > 1:
        vfmab(a1, Y, y + yj, C, c, w)
    if J > 2:
        vfmab(a2, Y, y + 2 * yj, C, c, w)
    if J > 3:
        vfmab(a3, Y, y + 3 * yj, C, c, w)


@numba.njit(inline="always")
def _store4(out, oo, oj, J, a0, a1, a2, a3, w):  # pragma: no cover - run compiled
    """``out[oo + j·oj : + w] = a_j`` for ``j < J`` (``J ≤ 4``)."""
    vstore(a0, out, oo, w)
    if J > 1:
        vstore(a1, out, oo + oj, w)
    if J > 2:
        vstore(a2, out, oo + 2 * oj, w)
    if J > 3:
        vstore(a3, out, oo + 3 * oj, w)


@numba.njit
def _mm(X, xo, xs, xi, Y, yo, ys, yj, K, I, J, out, oo, oi, oj, w):  # pragma: no cover - run compiled
    """``out[oo + i·oi + j·oj : + w] = Σ_{k < K} X[xo + i·xi + k·xs : + w] · Y[yo + k·ys + j·yj : + w]``
    for ``i < I``, ``j < J``: two rows and four columns at a time (:func:`_dot8`), each sum in the
    order of ``k``. A function of its own (``w`` a literal), not inlined by numba: three call sites
    of its inlined body took a third of the kernel's compile time, for 3% of its speed."""
    numba.literally(w)
    a0, a1, a2, a3 = vacc(out, w), vacc(out, w), vacc(out, w), vacc(out, w)
    b0, b1, b2, b3 = vacc(out, w), vacc(out, w), vacc(out, w), vacc(out, w)
    for i in range(0, I - 1, 2):
        for j0 in range(0, J, 4):
            jj = min(4, J - j0)
            _dot8(X, xo + i * xi, xs, xi, Y, yo + j0 * yj, ys, yj, K, jj, a0, a1, a2, a3, b0, b1, b2, b3, w)
            _store4(out, oo + i * oi + j0 * oj, oj, jj, a0, a1, a2, a3, w)
            _store4(out, oo + (i + 1) * oi + j0 * oj, oj, jj, b0, b1, b2, b3, w)
    if I % 2:
        i = I - 1
        for j0 in range(0, J, 4):
            jj = min(4, J - j0)
            _dot4(X, xo + i * xi, xs, Y, yo + j0 * yj, ys, yj, K, jj, a0, a1, a2, a3, w)
            _store4(out, oo + i * oi + j0 * oj, oj, jj, a0, a1, a2, a3, w)


@numba.njit
def _group(
    S, X, zaddr, L, lptr, lcol, cs, points, t0, t1, W, offs, dims, MI, MO, V, lr, wd, use_wd, warm, step0,
    P, Q, A, E, T, Wg, Sg, Xg, Zg, eta, c2, csg, r0, f32, w,
):  # fmt: skip  # pragma: no cover - run compiled
    """:func:`_edln_sgd_lanes` for the replicas ``r0 … r0 + w − 1`` (those that exist), one lane each
    (``w`` a literal); the lanes past the last replica hold zero weights and zero moments, so they
    stay at zero, and are not written back."""
    numba.literally(w)
    numba.literally(f32)
    depth = dims.size - 1
    n = dims[0]
    m = dims[depth]
    nw = W.shape[1]
    big = P.shape[1]
    ng = min(w, W.shape[0] - r0)
    a0, a1, a2, a3 = vacc(Wg, w), vacc(Wg, w), vacc(Wg, w), vacc(Wg, w)
    for q in range(w):
        live = q < ng
        for x in range(nw):
            Wg[x, q] = W[r0 + q, x] if live else 0.0
        c2[q] = 2.0 * wd[r0 + q] if live else 0.0
        csg[q] = cs[r0 + q] if (live and points) else 0.0
        if live:
            continue
        for u in range(Sg.shape[0]):
            for k in range(Sg.shape[1]):
                for j in range(Sg.shape[2]):
                    Sg[u, k, j, q] = 0.0
        for u in range(Xg.shape[0]):
            for k in range(Xg.shape[1]):
                for b in range(Xg.shape[2]):
                    Xg[u, k, b, q] = 0.0
    for t in range(t0, t1):
        step = step0 + t - t0
        tt = (t - t0) % _AHEAD
        if tt == 0:
            # the next steps' learning rates and normals, one lane per replica, written ahead of
            # their use (a vector load right after the scalar stores it covers would stall)
            if points and zaddr.size:  # each replica's normals drawn here from its own stream
                nu = min(_AHEAD, t1 - t)
                xs = Xg.reshape(Xg.size)
                count = nu * Xg.shape[1] * Xg.shape[2]
                for q in range(ng):
                    _sfc64.fill_normal_strided(zaddr[r0 + q], xs, q, count, w, f32)
            for u in range(min(_AHEAD, t1 - t)):
                ramp = warm > 0 and step + u < warm
                frac = (step + u + 1) / warm if ramp else 1.0
                for q in range(ng):
                    lq = lr[r0 + q]
                    eta[u, q] = lq * frac if ramp else lq
                for q in range(ng, w):
                    eta[u, q] = 0.0
                if points and not zaddr.size:
                    for q in range(ng):
                        for k in range(X.shape[2]):
                            for b in range(X.shape[3]):
                                Xg[u, k, b, q] = X[r0 + q, t + u, k, b]
                elif not points:
                    for q in range(ng):
                        for k in range(n + m):
                            for j in range(n):
                                Sg[u, k, j, q] = S[r0 + q, t + u, k, j]
        if points:
            # the moments from the B points Z = L X: Ŝ[:, :n] = c (Z Z[:n]ᵀ)
            d, nb = Xg.shape[1], Xg.shape[2]
            xo = tt * d * nb
            for k in range(d):  # (the nonzero entries of row k of L, in their order)
                p0, p1 = lptr[k], lptr[k + 1]
                for bb in range(0, nb, 4):
                    jj = min(4, nb - bb)
                    if p0 == p1:  # a row of zeros: 0 · X
                        _dot4b(Xg, (xo + bb) * w, 0, L, k * d, 0, w, 1, jj, a0, a1, a2, a3, w)
                    else:
                        l = lcol[p0]
                        _dot4b(Xg, (xo + l * nb + bb) * w, 0, L, k * d + l, 0, w, 1, jj, a0, a1, a2, a3, w)
                        for p in range(p0 + 1, p1):
                            l = lcol[p]
                            _fma4b(Xg, (xo + l * nb + bb) * w, w, L, k * d + l, jj, a0, a1, a2, a3, w)
                    _store4(Zg, (k * nb + bb) * w, w, jj, a0, a1, a2, a3, w)
            for k in range(d):
                for j0 in range(0, n, 4):
                    jj = min(4, n - j0)
                    _dot4(Zg, k * nb * w, w, Zg, j0 * nb * w, w, nb * w, nb, jj, a0, a1, a2, a3, w)
                    vscale_by(a0, csg, 0, w)
                    vscale_by(a1, csg, 0, w)
                    vscale_by(a2, csg, 0, w)
                    vscale_by(a3, csg, 0, w)
                    _store4(Sg, (k * n + j0) * w, w, jj, a0, a1, a2, a3, w)
            so = 0
        else:
            so = tt * (n + m) * n
        # prefix maps P_l = W_l P_{l-1} (dims[l] × n)
        for lay in range(depth):
            o, dout, din = offs[lay], dims[lay + 1], dims[lay]
            pin, pout = lay * big * n, (lay + 1) * big * n
            _mm(Wg, o * w, w, din * w, P, pin * w, n * w, w, din, dout, n, P, pout * w, n * w, w, w)
        # suffix maps Q_l = Q_{l+1} W_{l+1} (m × dims[l+1])
        for lay in range(depth - 2, -1, -1):
            o, dout, din = offs[lay + 1], dims[lay + 2], dims[lay + 1]
            qin, qout = (lay + 1) * m * big, lay * m * big
            _mm(Q, qin * w, w, big * w, Wg, o * w, din * w, w, dout, m, din, Q, qout * w, big * w, w, w)
        # A = M^O P_D − V*, E = 2 (A Ŝ_xx − Ŝ_εx)
        pd = depth * big * n
        for i in range(m):
            for j0 in range(0, n, 4):
                jj = min(4, n - j0)
                _dot4b(P, (pd + j0) * w, n * w, MO, i * m, 1, w, m, jj, a0, a1, a2, a3, w)
                vsubb(a0, V, i * n + j0, w)
                if jj > 1:
                    vsubb(a1, V, i * n + j0 + 1, w)
                if jj > 2:
                    vsubb(a2, V, i * n + j0 + 2, w)
                if jj > 3:
                    vsubb(a3, V, i * n + j0 + 3, w)
                _store4(A, (i * n + j0) * w, w, jj, a0, a1, a2, a3, w)
        for i in range(m):
            for j0 in range(0, n, 4):
                jj = min(4, n - j0)
                _dot4(A, i * n * w, w, Sg, (so + j0) * w, n * w, w, n, jj, a0, a1, a2, a3, w)
                e = (so + (n + i) * n + j0) * w
                vsub(a0, Sg, e, w)
                vscale(a0, 2.0, w)
                if jj > 1:
                    vsub(a1, Sg, e + w, w)
                    vscale(a1, 2.0, w)
                if jj > 2:
                    vsub(a2, Sg, e + 2 * w, w)
                    vscale(a2, 2.0, w)
                if jj > 3:
                    vsub(a3, Sg, e + 3 * w, w)
                    vscale(a3, 2.0, w)
                _store4(E, (i * n + j0) * w, w, jj, a0, a1, a2, a3, w)
        # every layer's gradient G = (Q_lᵀ E) P_lᵀ from the old weights, then its update
        for lay in range(depth):
            o, dout, din = offs[lay], dims[lay + 1], dims[lay]
            ql, pl = lay * m * big, lay * big * n
            _mm(Q, ql * w, big * w, w, E, 0, n * w, w, m, dout, n, T, 0, n * w, w, w)
            for i in range(dout):
                for j0 in range(0, din, 4):
                    jj = min(4, din - j0)
                    _dot4(T, i * n * w, w, P, (pl + j0 * n) * w, w, n * w, n, jj, a0, a1, a2, a3, w)
                    x = (o + i * din + j0) * w
                    if use_wd:
                        vfma(a0, c2, 0, Wg, x, w)
                        if jj > 1:
                            vfma(a1, c2, 0, Wg, x + w, w)
                        if jj > 2:
                            vfma(a2, c2, 0, Wg, x + 2 * w, w)
                        if jj > 3:
                            vfma(a3, c2, 0, Wg, x + 3 * w, w)
                    e = tt * w
                    vaxpy_from(Wg, x, eta, e, a0, w)
                    if jj > 1:
                        vaxpy_from(Wg, x + w, eta, e, a1, w)
                    if jj > 2:
                        vaxpy_from(Wg, x + 2 * w, eta, e, a2, w)
                    if jj > 3:
                        vaxpy_from(Wg, x + 3 * w, eta, e, a3, w)
    for q in range(ng):
        for x in range(nw):
            W[r0 + q, x] = Wg[x, q]


def _grp(S, X, zaddr, L, lptr, lcol, cs, points, t0, t1, W, offs, dims, MI, MO, V, lr, wd, use_wd, warm, step0,
         P, Q, A, E, T, Wg, Sg, Xg, Zg, eta, c2, csg, r0):  # fmt: skip
    """:func:`_group` with :data:`_LANES` lanes (16 in float32, 8 in float64), chosen by the dtype
    when the kernel is compiled (only that width is compiled)."""


@numba.extending.overload(_grp)
def _grp_overload(S, X, zaddr, L, lptr, lcol, cs, points, t0, t1, W, offs, dims, MI, MO, V, lr, wd, use_wd, warm, step0,
                  P, Q, A, E, T, Wg, Sg, Xg, Zg, eta, c2, csg, r0):  # fmt: skip
    if W.dtype == numba.types.float32:

        def impl(S, X, zaddr, L, lptr, lcol, cs, points, t0, t1, W, offs, dims, MI, MO, V, lr, wd, use_wd, warm, step0,
                 P, Q, A, E, T, Wg, Sg, Xg, Zg, eta, c2, csg, r0):  # fmt: skip  # pragma: no cover
            _group(S, X, zaddr, L, lptr, lcol, cs, points, t0, t1, W, offs, dims, MI, MO, V, lr, wd, use_wd,
                   warm, step0, P, Q, A, E, T, Wg, Sg, Xg, Zg, eta, c2, csg, r0, True, 16)  # fmt: skip

    else:

        def impl(S, X, zaddr, L, lptr, lcol, cs, points, t0, t1, W, offs, dims, MI, MO, V, lr, wd, use_wd, warm, step0,
                 P, Q, A, E, T, Wg, Sg, Xg, Zg, eta, c2, csg, r0):  # fmt: skip  # pragma: no cover
            _group(S, X, zaddr, L, lptr, lcol, cs, points, t0, t1, W, offs, dims, MI, MO, V, lr, wd, use_wd,
                   warm, step0, P, Q, A, E, T, Wg, Sg, Xg, Zg, eta, c2, csg, r0, False, 8)  # fmt: skip

    return impl


def _edln_sgd_lanes(
    S, X, zaddr, L, lptr, lcol, cs, points, t0, t1, W, offs, dims, MI, MO, V, lr, wd, use_wd, warm, step0,
    P, Q, A, E, T, Wg, Sg, Xg, Zg, eta, c2, csg,
):  # fmt: skip  # pragma: no cover - run compiled
    """Steps ``t0 … t1 − 1`` of a block of online SGD for every replica of an EDLN, compiled (numba,
    ``nogil``): the update of :meth:`symbreak.platonic.training._PlatonicModel.step` (the gradient
    of :func:`symbreak.platonic.minibatch_gradient`, ``∇_{W_i} L̂ = (Q_iᵀ E) P_iᵀ`` with
    ``E = 2 (A Ŝ_xx − Ŝ_εx)`` and ``A = M^O P_D − V*``, plus ``2 λ W_i``, times the step's learning
    rate).

    The replicas run in groups of ``w`` = :data:`_LANES` of the dtype, one SIMD lane each
    (:mod:`symbreak._lanes`): every quantity of the step is held as ``w`` consecutive numbers, one
    per replica, and every operation is one vector operation over the group, each product summed in
    a register. Each replica's arithmetic is the NumPy path's, operation for operation, except that
    every small product is summed in the order of its inner index (BLAS may sum in another order):
    the numbers agree with the NumPy path to rounding and do not depend on how the replicas are
    grouped or chunked.

    The steps' minibatch moments are ``S[r, t]`` (R, steps, n + m, n + m), or, where ``points`` is
    true, formed here from standard normals ``X`` (n + m, B) as ``cs[r] (L X)(L X)ᵀ`` (what
    :meth:`symbreak.engine.WishartBlockSampler.draw` returns for ``B < n + m``, up to the order of the
    sums; only the first ``n`` columns are formed; ``lptr``, ``lcol`` list the nonzero entries of each
    row of ``L``, the only ones multiplied): drawn here from replica ``r``'s SFC64 stream at address
    ``zaddr[r]`` (advanced in place; the numbers and order of
    :meth:`symbreak.engine.WishartBlockSampler.points`), or, where ``zaddr`` is empty, read from
    ``X[r, t]`` (R, steps, n + m, B). ``W``
    (R, Σ d_i d_{i−1}) the replicas' weights, layer ``i`` row-major from ``offs[i]``;
    ``dims = (n, d_1, …, d_{D−1}, m)``; ``MI`` the input map ``M^I Z``, ``MO`` the output map, ``V``
    the target ``V*``; ``lr``, ``wd`` one per replica; ``warm`` the learning-rate warm-up in steps
    (0: none), ``step0`` the global step of ``t0``. Scratch, lanes innermost (``w``): ``P``
    (D + 1, max d, n, w), ``Q`` (D, m, max d, w), ``A``, ``E`` (m, n, w), ``T`` (max d, n, w), ``Wg``
    (Σ d_i d_{i−1}, w), ``Sg`` (a, n + m, n, w), ``Xg`` (a, n + m, B, w), ``Zg`` (n + m, B, w),
    ``eta`` (a, w), ``c2``, ``csg`` (w), with ``a`` = :data:`_AHEAD`: the normals (or moments) and
    learning rates of the next ``a`` steps are moved into the lanes together, ahead of their use.
    Scratch aligned to 64 bytes (one vector) is fastest."""
    depth = dims.size - 1
    n = dims[0]
    m = dims[depth]
    gs = P.shape[3]
    for i in range(n):
        for j in range(n):
            for q in range(gs):
                P[0, i, j, q] = MI[i, j]
    for i in range(m):
        for j in range(m):
            for q in range(gs):
                Q[depth - 1, i, j, q] = MO[i, j]
    for r0 in range(0, W.shape[0], gs):
        _grp(S, X, zaddr, L, lptr, lcol, cs, points, t0, t1, W, offs, dims, MI, MO, V, lr, wd, use_wd, warm, step0,
             P, Q, A, E, T, Wg, Sg, Xg, Zg, eta, c2, csg, r0)  # fmt: skip
