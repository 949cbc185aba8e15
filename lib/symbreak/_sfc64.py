"""Compiled draws from NumPy's SFC64 streams, bit for bit what NumPy's ``Generator`` gives.

The engine's Wishart sampler spends most of its time drawing normal variates. NumPy draws them
one call per replica and stream, each variate through an indirect call to the bit generator.
This module draws them inside one compiled loop over the ensemble, reading and advancing each
NumPy ``Generator``'s own SFC64 state in place (through its ``ctypes.state_address``), with the
same algorithms as NumPy's C code: the SFC64 step, the 256-layer ziggurat for normals (float64
and float32) and exponentials, the uniform ``[0, 1)`` double and Marsaglia–Tsang's gamma. So a
stream gives the same numbers, and is left in the same state, whether NumPy or this module
drew from it; ``tests/test_engine.py`` checks that bit for bit.

Imported on first use (it imports numba).
"""

from __future__ import annotations

import ctypes
import math

import numba
import numpy as np
from numba.core import cgutils, types
from numba.extending import intrinsic
from numba.np.random import _constants as _zc  # NumPy's ziggurat tables, as numba carries them

_KI, _WI, _FI = _zc.ki_double, _zc.wi_double, _zc.fi_double
_KIF, _WIF, _FIF = _zc.ki_float, _zc.wi_float, _zc.fi_float
_KE, _WE, _FE = _zc.ke_double, _zc.we_double, _zc.fe_double
_NOR_R, _NOR_INV_R = float(_zc.ziggurat_nor_r), float(_zc.ziggurat_nor_inv_r)
_NOR_R_F, _NOR_INV_R_F = np.float32(_zc.ziggurat_nor_r_f), np.float32(_zc.ziggurat_nor_inv_r_f)
_EXP_R = float(_zc.ziggurat_exp_r)

_U11, _U8, _U1, _U3, _U24, _U40, _U32 = (np.uint64(v) for v in (11, 8, 1, 3, 24, 40, 32))
_M52 = np.uint64(0x000FFFFFFFFFFFFF)
_FF = np.uint64(0xFF)
_LO32 = np.uint64(0xFFFFFFFF)


@intrinsic
def _void_pointer(typingctx, address):
    """An integer address as a ``void *`` (for :func:`numba.carray`)."""
    sig = types.voidptr(address)

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], cgutils.voidptr_t)

    return sig, codegen


@numba.njit(inline="always")
def _state(address):
    """The SFC64 state ``{uint64 s[4]; int has_uint32; uint32 uinteger}`` at ``address``:
    the four words, and the two 32-bit fields."""
    s = numba.carray(_void_pointer(address), (4,), np.uint64)
    h = numba.carray(_void_pointer(address + 32), (2,), np.uint32)
    return s, h


# The generators below carry the SFC64 state in local variables (a tuple ``st`` of the four words
# and, for 32-bit draws, the buffered half-word flag and value), so that the compiled loops keep
# it in registers; each returns its value and the new state.


@numba.njit(inline="always")
def _next64(st):
    s0, s1, s2, s3 = st
    tmp = s0 + s1 + s3
    return tmp, (s1 ^ (s1 >> _U11), s2 + (s2 << _U3), ((s2 << _U24) | (s2 >> _U40)) + tmp, s3 + _U1)


@numba.njit(inline="always")
def _next32(st, has, word):
    if has:
        return word, st, np.uint32(0), word
    nxt, st = _next64(st)
    return np.uint32(nxt & _LO32), st, np.uint32(1), np.uint32(nxt >> _U32)


@numba.njit(inline="always")
def _next_double(st):
    r, st = _next64(st)
    return np.float64(r >> _U11) * (1.0 / 9007199254740992.0), st


@numba.njit(inline="always")
def _next_float(st, has, word):
    r, st, has, word = _next32(st, has, word)
    return np.float32(r >> np.uint32(8)) * np.float32(1.0 / 16777216.0), st, has, word


@numba.njit
def _normal_tail(st, rabs, idx, x):
    """The ziggurat's rare slow path (float64): a value, or NaN to draw again."""
    if idx == 0:
        while True:
            u1, st = _next_double(st)
            u2, st = _next_double(st)
            xx = -_NOR_INV_R * math.log1p(-u1)
            yy = -math.log1p(-u2)
            if yy + yy > xx * xx:
                if (rabs >> _U8) & _U1:
                    return -(_NOR_R + xx), st
                return _NOR_R + xx, st
    u, st = _next_double(st)
    if (_FI[idx - 1] - _FI[idx]) * u + _FI[idx] < math.exp(-0.5 * x * x):
        return x, st
    return np.nan, st


@numba.njit(inline="always")
def _normal(st):
    """NumPy's ``random_standard_normal`` (float64 ziggurat)."""
    while True:
        r, st = _next64(st)
        idx = r & _FF
        r >>= _U8
        rabs = (r >> _U1) & _M52
        x = np.float64(rabs) * _WI[idx]
        if r & _U1:
            x = -x
        if rabs < _KI[idx]:
            return x, st
        x, st = _normal_tail(st, rabs, idx, x)
        if x == x:
            return x, st


@numba.njit
def _normal_f_tail(st, has, word, rabs, idx, x):
    """The float32 ziggurat's rare slow path: a value, or NaN to draw again."""
    if idx == 0:
        while True:
            u1, st, has, word = _next_float(st, has, word)
            xx = np.float32(-_NOR_INV_R_F * np.float32(np.log1p(np.float32(-u1))))
            u2, st, has, word = _next_float(st, has, word)
            yy = np.float32(-np.float32(np.log1p(np.float32(-u2))))
            if np.float32(yy + yy) > np.float32(xx * xx):
                if (rabs >> np.uint32(8)) & np.uint32(1):
                    return -np.float32(_NOR_R_F + xx), st, has, word
                return np.float32(_NOR_R_F + xx), st, has, word
    u, st, has, word = _next_float(st, has, word)
    # the wedge test as NumPy's C code writes it: the left side in float32, ``exp(-0.5 * x * x)`` in
    # double (``-0.5`` is a double), the comparison in double
    xd = np.float64(x)
    if np.float64((_FIF[idx - 1] - _FIF[idx]) * u + _FIF[idx]) < math.exp(-0.5 * xd * xd):
        return x, st, has, word
    return np.float32(np.nan), st, has, word


@numba.njit(inline="always")
def _normal_f(st, has, word):
    """NumPy's ``random_standard_normal_f`` (float32 ziggurat)."""
    while True:
        r, st, has, word = _next32(st, has, word)
        idx = r & np.uint32(0xFF)
        rabs = (r >> np.uint32(9)) & np.uint32(0x0007FFFFF)
        x = np.float32(np.float32(rabs) * _WIF[idx])
        if (r >> np.uint32(8)) & np.uint32(1):
            x = -x
        if rabs < _KIF[idx]:
            return x, st, has, word
        x, st, has, word = _normal_f_tail(st, has, word, rabs, idx, x)
        if x == x:
            return x, st, has, word


@numba.njit
def _exponential(st):
    """NumPy's ``random_standard_exponential`` (float64 ziggurat)."""
    while True:
        ri, st = _next64(st)
        ri >>= _U3
        idx = ri & _FF
        ri >>= _U8
        x = np.float64(ri) * _WE[idx]
        if ri < _KE[idx]:
            return x, st
        u, st = _next_double(st)
        if idx == 0:
            return _EXP_R - math.log1p(-u), st
        if (_FE[idx - 1] - _FE[idx]) * u + _FE[idx] < math.exp(-x):
            return x, st


@numba.njit
def _gamma(st, shape):
    """NumPy's ``random_standard_gamma`` (float64)."""
    if shape == 1.0:
        return _exponential(st)
    if shape == 0.0:
        return 0.0, st
    if shape < 1.0:
        while True:
            u, st = _next_double(st)
            v, st = _exponential(st)
            if u <= 1.0 - shape:
                x = u ** (1.0 / shape)
                if x <= v:
                    return x, st
            else:
                y = -math.log((1 - u) / shape)
                x = (1.0 - shape + shape * y) ** (1.0 / shape)
                if x <= v + y:
                    return x, st
    b = shape - 1.0 / 3.0
    c = 1.0 / math.sqrt(9 * b)
    while True:
        while True:
            x, st = _normal(st)
            v = 1.0 + c * x
            if v > 0.0:
                break
        v = v * v * v
        u, st = _next_double(st)
        if u < 1.0 - 0.0331 * (x * x) * (x * x):
            return b * v, st
        if math.log(u) < 0.5 * x * x + b * (1.0 - v + math.log(v)):
            return b * v, st


@numba.njit(inline="always")
def _load(address):
    w, h = _state(address)
    return (w[0], w[1], w[2], w[3]), h[0], h[1]


@numba.njit(inline="always")
def _store(address, st, has, word):
    w, h = _state(address)
    w[0], w[1], w[2], w[3] = st
    h[0] = has
    h[1] = word


@numba.njit(inline="always")
def _fill(address, out, f32):
    st, has, word = _load(address)
    if f32:
        for n in range(out.size):
            out[n], st, has, word = _normal_f(st, has, word)
    else:
        for n in range(out.size):
            out[n], st = _normal(st)
    _store(address, st, has, word)


@numba.njit
def fill_normal_strided(address, out, start, count, stride, f32):
    """``out[start + c·stride]`` for ``c < count`` (``out`` 1-D) filled as ``standard_normal`` would
    fill ``count`` numbers from the stream at ``address`` (the lane of one replica in a SIMD group)."""
    st, has, word = _load(address)
    if f32:
        for c in range(count):
            out[start + c * stride], st, has, word = _normal_f(st, has, word)
    else:
        for c in range(count):
            out[start + c * stride], st = _normal(st)
    _store(address, st, has, word)


@numba.njit(nogil=True, cache=True)
def fill_normal(address, out, f32):  # pragma: no cover - run compiled
    """``out`` (1-D) filled as ``Generator.standard_normal(out=out, dtype=out.dtype)`` would;
    ``f32`` tells whether ``out`` is float32."""
    _fill(address, out, f32)


@numba.njit(nogil=True, cache=True)
def fill_normal_rows(addresses, rows, out, f32):  # pragma: no cover - run compiled
    """``out[j]`` (``out`` 2-D, C-contiguous) filled from the stream at ``addresses[j]`` for each
    ``j`` in ``rows``, as ``standard_normal(out=out[j], dtype=out.dtype)`` would."""
    for j in rows:
        _fill(addresses[j], out[j], f32)


@numba.njit(inline="always")
def mt_proposal(zn, dd, c, u1):
    """Marsaglia & Tsang's proposal for a gamma variate of shape ``dd + 1/3`` from the normal
    ``zn`` and the uniform ``u1`` (``c = 1/sqrt(9 dd)``): ``(accepted, dd·v)``, ``v = (1 + c·zn)³``.

    The squeeze ``u1 < 1 − 0.0331 zn⁴`` settles most proposals without a logarithm; the others are
    accepted when ``log u1 < zn²/2 + dd − dd·v + dd·log v``. The same operations, order and
    precision as NumPy's reference :meth:`symbreak.engine.WishartBlockSampler._gamma_mt`: ``x`` in
    float64 (as NumPy promotes a float32 normal), ``zn²`` in the normal's precision.
    """
    x = zn * c + 1.0
    v = x * x
    v *= x
    z2 = zn * zn
    q = z2 * 1.0
    q = q * q
    q *= -0.0331
    q += 1.0
    ok = u1 < q and x > 0
    if not ok and v > 0:
        ok = math.log(u1) < 0.5 * z2 + dd - dd * v + dd * math.log(v)
    return ok, v * dd


@numba.njit(nogil=True, cache=True)
def gamma_mt_proposals(z, nz, u, mt_d, mt_c, boost, inv_a, reps, out, bad):  # pragma: no cover - run compiled
    """The Marsaglia–Tsang step of a block for streams other than SFC64 (their variates drawn by
    NumPy): for each replica ``r`` in ``reps``, step ``t`` and diagonal entry ``i``, the proposal
    (:func:`mt_proposal`) from the normal ``z[r, t, nz + i]`` and the uniform ``u[r, t, i]``, times
    ``u[r, t, d + i] ** inv_a[r, i]`` for a boosted shape below 1, written to ``out[r, t, i]``;
    ``bad[r, t, i]`` is set where it is rejected (the caller replaces those by exact draws, in the
    order of ``(r, t, i)``)."""
    m, d = out.shape[1], out.shape[2]
    for r in reps:
        for t in range(m):
            for i in range(d):
                ok, gam = mt_proposal(z[r, t, nz + i], mt_d[r, i], mt_c[r, i], u[r, t, i])
                bad[r, t, i] = not ok
                if boost[r, i]:
                    gam = gam * u[r, t, d + i] ** inv_a[r, i]
                out[r, t, i] = gam


@numba.njit(inline="always")
def bartlett_gammas(gs, j, z, zo, u, uo, step, mt_d, mt_c, boost, inv_a, shape1, gb):
    """The ``d`` gamma variates of one step's Bartlett diagonal of replica ``j`` into ``gb``: for
    entry ``i``, the Marsaglia–Tsang proposal (:func:`mt_proposal`) from the normal
    ``z[zo + i·step]`` and the uniform ``u[uo + i·step]``, times ``u[uo + (d + i)·step] ** inv_a``
    for a boosted shape; a rejected one replaced by an exact gamma draw from the fallback stream
    ``gs``. Returns its new state. (``step`` 1 for one replica's variates, the number of lanes for a
    SIMD group's, whose lane ``q`` starts at ``zo``, ``uo`` offset by ``q``.)"""
    d = gb.shape[0]
    for i in range(d):
        ok, gam = mt_proposal(z[zo + i * step], mt_d[j, i], mt_c[j, i], u[uo + i * step])
        if ok:
            if boost[j, i]:
                gam = gam * u[uo + (d + i) * step] ** inv_a[j, i]
            gb[i] = gam
        else:
            gam, gs = _gamma(gs, np.float64(shape1[j, i]))
            gb[i] = gam
    return gs


@numba.njit(inline="always")
def bartlett_draw(zs, zh, zw, us, gs, j, nz, mt_d, mt_c, boost, inv_a, shape1, zb, ub, gb, f32):
    """One step's Bartlett variates of replica ``j``, from its three streams' states (the normal
    stream ``(zs, zh, zw)``, the uniform stream ``us``, the fallback stream ``gs``): ``zb``
    (nz + d) normals, ``ub`` (2d) uniforms, ``gb`` (d) the diagonal's gamma variates
    (:func:`bartlett_gammas`). Returns the new states.
    """
    d = gb.shape[0]
    for n in range(nz + d):
        if f32:
            zb[n], zs, zh, zw = _normal_f(zs, zh, zw)
        else:
            zb[n], zs = _normal(zs)
    for n in range(2 * d):
        ub[n], us = _next_double(us)
    gs = bartlett_gammas(gs, j, zb, nz, ub, 0, 1, mt_d, mt_c, boost, inv_a, shape1, gb)
    return zs, zh, zw, us, gs


@numba.njit(inline="always")
def bartlett_factor_lane(
    zs, zh, zw, us, gs, j, nz, mt_d, mt_c, boost, inv_a, shape1, mz, mg, zb, ub, gb, F, q, lanes, f32
):
    """One step's Bartlett factor of replica ``j`` into lane ``q`` of ``F``: the variates of
    :func:`bartlett_draw` (the same streams, order and numbers: ``zb`` (nz + d, the factor's dtype),
    ``ub`` (2d), ``gb`` (d, the dtype)), then the factor that :func:`symbreak.wishart._bartlett_kernel`
    builds from them, ``F_ab = z_n · mz[j, n]`` below the diagonal (``n`` the row-major order of the
    strict lower triangle) and ``F_aa = sqrt(g_a) · mg[j, a]``, with the same operations and precision.

    ``F`` is flat: entry ``(a, b)``, ``b ≤ a``, of the packed lower triangle (row-major, diagonal
    included) at ``(a(a+1)/2 + b) · lanes + q``. Returns the streams' new states."""
    zs, zh, zw, us, gs = bartlett_draw(zs, zh, zw, us, gs, j, nz, mt_d, mt_c, boost, inv_a, shape1, zb, ub, gb, f32)
    d = gb.shape[0]
    n = 0
    for a in range(d):
        row = a * (a + 1) // 2
        for b in range(a):
            F[(row + b) * lanes + q] = zb[n] * mz[j, n]
            n += 1
        F[(row + a) * lanes + q] = math.sqrt(gb[a]) * mg[j, a]
    return zs, zh, zw, us, gs


@numba.njit(nogil=True, cache=True)
def wishart_variates(zaddr, uaddr, gaddr, reps, z, u, nz, mt_d, mt_c, boost, inv_a, shape1, g, f32):  # pragma: no cover
    """The Bartlett variates of a block of steps, for the replicas ``reps``: exactly
    :meth:`symbreak.engine.WishartBlockSampler._variates` with per-replica streams.

    For replica ``j`` and each step ``t``: :func:`bartlett_draw` into ``z[j, t]`` (nz + d),
    ``u[j, t]`` (2d) and ``g[j, t]`` (d), from the streams at ``zaddr[j]`` (normals), ``uaddr[j]``
    (uniforms) and ``gaddr[j]`` (fallback gammas). Each stream is consumed in step order, as the
    NumPy path consumes it. ``f32`` tells whether ``z`` is float32 (NumPy's float32 ziggurat).
    """
    for j in reps:
        zs, zh, zw = _load(zaddr[j])
        us, uh, uw = _load(uaddr[j])
        gs, gh, gw = _load(gaddr[j])
        for t in range(g.shape[1]):
            zs, zh, zw, us, gs = bartlett_draw(
                zs, zh, zw, us, gs, j, nz, mt_d, mt_c, boost, inv_a, shape1, z[j, t], u[j, t], g[j, t], f32
            )
        _store(zaddr[j], zs, zh, zw)
        _store(uaddr[j], us, uh, uw)
        _store(gaddr[j], gs, gh, gw)


#: Whether NumPy's SFC64 state sits in memory as this module reads it (checked once per process).
_LAYOUT: list = []


def _layout_ok(bg) -> bool:
    """Whether the memory at ``bg``'s state address holds its four state words and its two flags."""
    addr = bg.ctypes.state_address
    st = bg.state
    words = np.ctypeslib.as_array((ctypes.c_uint64 * 4).from_address(addr))
    flags = np.ctypeslib.as_array((ctypes.c_uint32 * 2).from_address(addr + 32))
    return bool(
        np.array_equal(words, np.asarray(st["state"]["state"], dtype=np.uint64))
        and int(flags[0]) == int(st["has_uint32"])
        and int(flags[1]) == int(st["uinteger"])
    )


def state_address(gen) -> int | None:
    """The address of ``gen``'s SFC64 state, or ``None`` when ``gen`` is not a NumPy ``Generator``
    driven by NumPy's own SFC64 (not a subclass) with the expected state layout.

    The layout is a property of the NumPy build, the same for every SFC64 instance: it is checked
    once per process, on the first generator asked about (a check per generator cost ~30 µs, which
    an ensemble of 10⁵ replicas paid at every block)."""
    bg = getattr(gen, "bit_generator", None)
    if type(bg) is not np.random.SFC64:
        return None
    if not _LAYOUT:
        _LAYOUT.append(_layout_ok(bg) and _capsule_state(bg) == bg.ctypes.state_address)
    # the state pointer is the first field of the bitgen_t struct in the generator's capsule: read
    # there, not through ``bg.ctypes`` (whose first use builds three ctypes function types, ~5 µs)
    return _capsule_state(bg) if _LAYOUT[0] else None


def _capsule_state(bg) -> int:
    """The ``state`` field (the first) of the ``bitgen_t`` struct that ``bg.capsule`` points to."""
    return ctypes.c_void_p.from_address(_capsule_pointer(bg.capsule, b"BitGenerator")).value


# a private prototype (setting restype/argtypes on ctypes.pythonapi's own would change it for everyone)
_capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi)
)
