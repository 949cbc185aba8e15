"""NumPy's SFC64 draws for a group of replicas at once, one SIMD lane per replica.

:mod:`symbreak._sfc64` draws a replica's variates one after another from its own stream, in
scalar code (about 40 instructions a normal). Here the streams of ``n`` replicas (a SIMD group of
the autoencoder's lane step) sit side by side, one lane each, and every draw is made for all
``n`` lanes at once in vector instructions (``numba.extending.intrinsic``, LLVM vector IR, the
states kept in registers from one draw to the next):

- normals (:func:`normal_lanes`): the SFC64 step of every lane, the 32-bit word buffer of the
  float32 draw, and the ziggurat's first proposal (its table look-ups by gather, the product, the
  sign and the acceptance test). The ziggurat accepts that proposal about 69 times in 70; a lane
  whose proposal it rejects finishes its draw in scalar code, by the slow path of
  :mod:`symbreak._sfc64`, from that lane's own state, before any lane draws its next variate;
- uniform doubles (:func:`uniform_lanes`): the SFC64 step, the top 53 bits times 2⁻⁵³.

So each stream gives the same numbers, in the same order, and is left in the same state, as
NumPy's ``Generator`` would give and leave it (``tests/test_engine.py`` checks it bit for bit,
over the slow paths too); a lane never reads another lane's stream.

A group's states are held as ``S`` (uint64, ``4 n``: word ``i`` of lane ``q`` at ``i n + q``) and
``H`` (uint32, ``2 n``: the buffered-half-word flag of lane ``q`` at ``q``, the half word at
``n + q``); :func:`load_lanes` and :func:`store_lanes` move them from and to NumPy's generators.
Imported on first use (it imports numba). The slow paths are :mod:`symbreak._sfc64`'s, inlined: after
editing that module, touch this one (numba's disk cache checks only the defining file's time stamp).
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from . import _sfc64
from ._lanes import _splat_value, _vptr
from ._sfc64 import _FF, _KI, _KIF, _M52, _U1, _U8, _WI, _WIF

__all__ = [
    "fill_normal_lanes",
    "load_lanes",
    "normal_lanes",
    "store_lanes",
    "uniform_lanes",
    "vdouble_run",
    "vnormal_run",
]


def _splat(ty, value, n):
    return ir.Constant(ir.VectorType(ty, n), [ir.Constant(ty, value)] * n)


def _step(builder, s, n):
    """One SFC64 step of ``n`` lanes (the four state words as vectors): the output and the new words."""
    s0, s1, s2, s3 = s
    i64 = ir.IntType(64)
    tmp = builder.add(builder.add(s0, s1), s3)
    return tmp, [
        builder.xor(s1, builder.lshr(s1, _splat(i64, 11, n))),
        builder.add(s2, builder.shl(s2, _splat(i64, 3, n))),
        builder.add(builder.or_(builder.shl(s2, _splat(i64, 24, n)), builder.lshr(s2, _splat(i64, 40, n))), tmp),
        builder.add(s3, _splat(i64, 1, n)),
    ]


def _open_loop(builder, cnt, init, name):
    """A loop over the positions ``t = 0 … cnt − 1`` carrying the values ``init``: returns its entry
    block, head and exit blocks, ``t`` and the carried values (phis), at the head."""
    i64 = ir.IntType(64)
    pre = builder.block
    loop = builder.append_basic_block(f"{name}.loop")
    done = builder.append_basic_block(f"{name}.done")
    builder.cbranch(builder.icmp_signed(">", cnt, ir.Constant(i64, 0)), loop, done)
    builder.position_at_end(loop)
    t = builder.phi(i64)
    t.add_incoming(ir.Constant(i64, 0), pre)
    phis = []
    for v in init:
        ph = builder.phi(v.type)
        ph.add_incoming(v, pre)
        phis.append(ph)
    return pre, loop, done, t, phis


def _close_loop(builder, cnt, opened, init, new):
    """The end of a loop of :func:`_open_loop` (``opened``) at the current block, the carried
    values becoming ``new``; returns the values at its exit (``init`` when ``cnt ≤ 0``)."""
    i64 = ir.IntType(64)
    pre, loop, done, t, phis = opened
    end = builder.block
    t1 = builder.add(t, ir.Constant(i64, 1))
    t.add_incoming(t1, end)
    for ph, v in zip(phis, new):
        ph.add_incoming(v, end)
    builder.cbranch(builder.icmp_signed("<", t1, cnt), loop, done)
    builder.position_at_end(done)
    return _merge(builder, init, pre, new, end)


def _merge(builder, a, a_block, b, b_block):
    """At the current block, each value of ``a`` (coming from ``a_block``) or of ``b`` (``b_block``)."""
    out = []
    for x, y in zip(a, b):
        ph = builder.phi(x.type)
        ph.add_incoming(x, a_block)
        ph.add_incoming(y, b_block)
        out.append(ph)
    return out


def _table(context, builder, aryty, ary, idx, n):
    """``table[idx[q]]`` for each lane ``q`` (a vector of ``n`` indices): one gather."""
    data = context.make_array(aryty)(context, builder, ary).data
    et = context.get_data_type(aryty.dtype)
    i64 = ir.IntType(64)
    size = aryty.dtype.bitwidth // 8
    base = builder.ptrtoint(data, i64)
    off = builder.mul(
        builder.zext(idx, ir.VectorType(i64, n)) if idx.type.element.width < 64 else idx, _splat(i64, size, n)
    )
    ptrs = builder.inttoptr(builder.add(_splat_value(builder, base, n), off), ir.VectorType(et.as_pointer(), n))
    kind = {"float": "f32", "double": "f64"}.get(str(et), str(et))
    fnty = ir.FunctionType(
        ir.VectorType(et, n), [ptrs.type, ir.IntType(32), ir.VectorType(ir.IntType(1), n), ir.VectorType(et, n)]
    )
    fn = cgutils.get_or_insert_function(builder.module, fnty, f"llvm.masked.gather.v{n}{kind}.v{n}p0")
    every = ir.Constant(ir.VectorType(ir.IntType(1), n), [ir.Constant(ir.IntType(1), 1)] * n)
    return builder.call(
        fn, [ptrs, ir.Constant(ir.IntType(32), size), every, ir.Constant(ir.VectorType(et, n), ir.Undefined)]
    )


@numba.njit(inline="always")
def _lane_arrays(sp, hp, rp, op, n, dtype):  # pragma: no cover - run compiled
    """``S``, ``H``, ``R`` and the position's ``n`` values of ``out`` from their addresses (arrays
    with no reference count to touch)."""
    return (
        numba.carray(_sfc64._void_pointer(sp), (4 * n,), np.uint64),
        numba.carray(_sfc64._void_pointer(hp), (2 * n,), np.uint32),
        numba.carray(_sfc64._void_pointer(rp), (n,), np.uint64),
        numba.carray(_sfc64._void_pointer(op), (n,), dtype),
    )


@numba.njit(inline="always")
def _pop(mask):  # pragma: no cover - run compiled
    """The lowest lane set in ``mask``, and ``mask`` without it."""
    q = 0
    while not (mask >> q) & 1:
        q += 1
    return q, mask & (mask - 1)


def _fix_lanes_f32(sp, hp, rp, op, mask, n):  # pragma: no cover - run compiled
    """Finish the float32 draws of the lanes in ``mask`` whose first proposal (raw word ``R[q]``,
    value ``out[q]``) the ziggurat rejected: its slow path from each such lane's state, then, where
    that rejects too, a whole new draw, as :func:`symbreak._sfc64._normal_f` finishes a draw. The
    arrays by address (``S``, ``H``, ``R``, and ``out`` at the position: :func:`_lane_arrays`)."""
    S, H, R, out = _lane_arrays(sp, hp, rp, op, n, np.float32)
    while mask:
        q, mask = _pop(mask)
        st = (S[q], S[n + q], S[2 * n + q], S[3 * n + q])
        r = np.uint32(R[q])
        x, st, has, word = _sfc64._normal_f_tail(
            st, H[q], H[n + q], (r >> np.uint32(9)) & np.uint32(0x0007FFFFF), r & np.uint32(0xFF), out[q]
        )
        if x != x:
            x, st, has, word = _sfc64._normal_f(st, has, word)
        out[q], H[q], H[n + q] = x, has, word
        S[q], S[n + q], S[2 * n + q], S[3 * n + q] = st


def _fix_lanes_f64(sp, hp, rp, op, mask, n):  # pragma: no cover - run compiled
    """:func:`_fix_lanes_f32` for the float64 ziggurat (:func:`symbreak._sfc64._normal`)."""
    S, H, R, out = _lane_arrays(sp, hp, rp, op, n, np.float64)
    while mask:
        q, mask = _pop(mask)
        st = (S[q], S[n + q], S[2 * n + q], S[3 * n + q])
        x, st = _sfc64._normal_tail(st, ((R[q] >> _U8) >> _U1) & _M52, R[q] & _FF, out[q])
        if x != x:
            x, st = _sfc64._normal(st)
        out[q] = x
        S[q], S[n + q], S[2 * n + q], S[3 * n + q] = st


@intrinsic
def vnormal_run(typingctx, S, H, out, o, count, R, wif, kif, wid, kid, n):
    """``count`` normal variates of each of the ``n`` lanes' streams (``S``, ``H``), position after
    position, into ``out[o + p n : o + (p + 1) n]`` for ``p = 0 … count − 1``, the states held in
    registers and stored back at the end. Each position draws every lane by the ziggurat's first
    proposal in vector instructions; where a lane's proposal is rejected (about one draw in 70),
    the states go through memory (``S``, ``H``, the raw words in ``R``) and each such lane
    finishes its draw in scalar code (:func:`_fix_lanes_f32`, :func:`_fix_lanes_f64`) from its
    own state, before the next position. ``out``'s dtype chooses NumPy's float32 ziggurat
    (``random_standard_normal_f``: tables ``wif``, ``kif``; a 32-bit word, from the buffered half
    of the last 64-bit step when there is one) or its float64 one (``random_standard_normal``:
    ``wid``, ``kid``; a 64-bit word). The same integer and IEEE operations as the scalar
    :func:`symbreak._sfc64._normal_f` and :func:`symbreak._sfc64._normal`, lane by lane."""
    if not isinstance(n, types.IntegerLiteral):
        return None
    size = n.literal_value
    f32 = out.dtype == types.float32

    def codegen(context, builder, sig, args):
        sa, ha, oa, oo, cnt, ra, wfa, kfa, wda, kda, _ = args
        i64, i32 = ir.IntType(64), ir.IntType(32)
        v32 = ir.VectorType(i32, size)

        def c64(x):
            return _splat(i64, x, size)

        def c32(x):
            return _splat(i32, x, size)

        words = [_vptr(context, builder, S, sa, ir.Constant(i64, k * size), size) for k in range(4)]
        init = [builder.load(p, align=8) for p in words]
        if f32:
            hp, wp = (_vptr(context, builder, H, ha, ir.Constant(i64, k * size), size) for k in range(2))
            init += [builder.load(hp, align=4), builder.load(wp, align=4)]
        opened = _open_loop(builder, cnt, init, "zig")
        t, phis = opened[3], opened[4]
        fix = builder.append_basic_block("zig.fix")
        cont = builder.append_basic_block("zig.next")
        tmp, new = _step(builder, phis[:4], size)
        if f32:
            has, word = phis[4:]
            take = builder.icmp_unsigned("!=", has, c32(0))  # the buffered half word, no step
            r = builder.select(take, word, builder.trunc(tmp, v32))
            new = [builder.select(take, old, nxt) for old, nxt in zip(phis[:4], new)]
            new += [builder.select(take, c32(0), c32(1)),
                    builder.select(take, word, builder.trunc(builder.lshr(tmp, c64(32)), v32))]  # fmt: skip
            idx = builder.and_(r, c32(0xFF))
            rabs = builder.and_(builder.lshr(r, c32(9)), c32(0x007FFFFF))
            sign = builder.icmp_unsigned("!=", builder.and_(builder.lshr(r, c32(8)), c32(1)), c32(0))
            ft, wt, wa, kt, ka = ir.FloatType(), wif, wfa, kif, kfa
        else:
            r = tmp
            idx = builder.and_(tmp, c64(0xFF))
            r8 = builder.lshr(tmp, c64(8))
            rabs = builder.and_(builder.lshr(r8, c64(1)), c64(0x000FFFFFFFFFFFFF))
            sign = builder.icmp_unsigned("!=", builder.and_(r8, c64(1)), c64(0))
            ft, wt, wa, kt, ka = ir.DoubleType(), wid, wda, kid, kda
        vf = ir.VectorType(ft, size)
        x = builder.fmul(builder.uitofp(rabs, vf), _table(context, builder, wt, wa, idx, size))
        x = builder.select(sign, builder.fneg(x), x)
        at = builder.add(oo, builder.mul(t, ir.Constant(i64, size)))
        optr = _vptr(context, builder, out, oa, at, size)
        builder.store(x, optr, align=4 if f32 else 8)
        rej = builder.icmp_unsigned(">=", rabs, _table(context, builder, kt, ka, idx, size))
        mask = builder.zext(builder.bitcast(rej, ir.IntType(size)), i64)
        body = builder.block
        builder.cbranch(builder.icmp_unsigned("==", mask, ir.Constant(i64, 0)), cont, fix)
        # the rejected lanes: the states and values through memory, each lane finished in scalar code
        builder.position_at_end(fix)
        for p, v in zip(words, new[:4]):
            builder.store(v, p, align=8)
        if f32:
            builder.store(new[4], hp, align=4)
            builder.store(new[5], wp, align=4)
        rp = _vptr(context, builder, R, ra, ir.Constant(i64, 0), size)
        builder.store(builder.zext(r, ir.VectorType(i64, size)) if f32 else r, rp, align=8)
        fsig = types.void(*[types.int64] * 6)
        ptr = [
            builder.ptrtoint(context.make_array(ty)(context, builder, a).data, i64)
            for ty, a in ((S, sa), (H, ha), (R, ra))
        ]
        optr0 = builder.ptrtoint(builder.gep(context.make_array(out)(context, builder, oa).data, [at]), i64)
        fn = _fix_lanes_f32 if f32 else _fix_lanes_f64
        context.compile_internal(builder, fn, fsig, [*ptr, optr0, mask, ir.Constant(i64, size)])
        fnew = [builder.load(p, align=8) for p in words]
        if f32:
            fnew += [builder.load(hp, align=4), builder.load(wp, align=4)]
        fixed = builder.block
        builder.branch(cont)
        # the next position
        builder.position_at_end(cont)
        last = _close_loop(builder, cnt, opened, init, _merge(builder, new, body, fnew, fixed))
        for p, v in zip(words, last[:4]):
            builder.store(v, p, align=8)
        if f32:
            builder.store(last[4], hp, align=4)
            builder.store(last[5], wp, align=4)
        return context.get_dummy_value()

    return types.void(S, H, out, o, count, R, wif, kif, wid, kid, n), codegen


@intrinsic
def vdouble_run(typingctx, S, out, o, count, n):
    """``count`` uniform ``[0, 1)`` doubles of each of the ``n`` lanes' streams ``S``, as NumPy's
    ``random_standard_uniform`` (``next_double``: the top 53 bits of a 64-bit step, times 2⁻⁵³)
    draws them, into ``out[o + p n : o + (p + 1) n]`` for ``p = 0 … count − 1``; the states held in
    registers and stored back at the end. (The 32-bit buffer is neither read nor changed.)"""
    if not isinstance(n, types.IntegerLiteral):
        return None
    size = n.literal_value

    def codegen(context, builder, sig, args):
        sa, oa, oo, cnt, _ = args
        i64 = ir.IntType(64)
        words = [_vptr(context, builder, S, sa, ir.Constant(i64, k * size), size) for k in range(4)]
        init = [builder.load(p, align=8) for p in words]
        opened = _open_loop(builder, cnt, init, "dbl")
        t, phis = opened[3], opened[4]
        tmp, new = _step(builder, phis, size)
        x = builder.fmul(
            builder.uitofp(builder.lshr(tmp, _splat(i64, 11, size)), ir.VectorType(ir.DoubleType(), size)),
            _splat(ir.DoubleType(), 1.0 / 9007199254740992.0, size),
        )
        at = builder.add(oo, builder.mul(t, ir.Constant(i64, size)))
        builder.store(x, _vptr(context, builder, out, oa, at, size), align=8)
        last = _close_loop(builder, cnt, opened, init, new)
        for p, v in zip(words, last):
            builder.store(v, p, align=8)
        return context.get_dummy_value()

    return types.void(S, out, o, count, n), codegen


@numba.njit
def normal_lanes(S, H, out, o, count, R, n):  # pragma: no cover - run compiled
    """The next ``count`` normals of each of the ``n`` lanes' streams (``n`` a literal), as
    ``standard_normal(count, dtype=out.dtype)`` draws them, into ``out[o + p n + q]`` (position
    ``p``, lane ``q``): :func:`vnormal_run`."""
    numba.literally(n)
    vnormal_run(S, H, out, o, count, R, _WIF, _KIF, _WI, _KI, n)


@numba.njit(inline="always")
def load_lanes(addresses, r0, S, H, n):  # pragma: no cover - run compiled
    """The SFC64 states at ``addresses[r0 … r0 + n − 1]`` into the lanes of ``S`` and ``H``."""
    for q in range(n):
        w, h = _sfc64._state(addresses[r0 + q])
        S[q], S[n + q], S[2 * n + q], S[3 * n + q] = w[0], w[1], w[2], w[3]
        H[q], H[n + q] = h[0], h[1]


@numba.njit(inline="always")
def store_lanes(addresses, r0, S, H, n):  # pragma: no cover - run compiled
    """The lanes of ``S`` and ``H`` back into the SFC64 states at ``addresses[r0 … r0 + n − 1]``."""
    for q in range(n):
        w, h = _sfc64._state(addresses[r0 + q])
        w[0], w[1], w[2], w[3] = S[q], S[n + q], S[2 * n + q], S[3 * n + q]
        h[0], h[1] = H[q], H[n + q]


@numba.njit
def uniform_lanes(S, out, o, count, n):  # pragma: no cover - run compiled
    """The next ``count`` uniform ``[0, 1)`` doubles of each of the ``n`` lanes' streams (``n`` a
    literal), as ``random()`` draws them, into ``out[o + p n + q]``: :func:`vdouble_run`."""
    numba.literally(n)
    vdouble_run(S, out, o, count, n)


@numba.njit
def _fill(addresses, out, count, n):  # pragma: no cover - run compiled
    numba.literally(n)
    S, H, R = np.empty(4 * n, np.uint64), np.empty(2 * n, np.uint32), np.empty(n, np.uint64)
    load_lanes(addresses, 0, S, H, n)
    normal_lanes(S, H, out, 0, count, R, n)
    store_lanes(addresses, 0, S, H, n)


@numba.njit(nogil=True, cache=True)
def fill_normal_lanes(addresses, out, count):  # pragma: no cover - run compiled
    """``out[p n + q]`` for ``p < count`` filled with the next ``count`` normals of the stream at
    ``addresses[q]`` (``n`` = ``addresses.size``: 16 with a float32 ``out``, 8 with float64, as the
    engine's SIMD groups draw them), as ``standard_normal(count, dtype=out.dtype)`` would draw them.
    The streams must stay alive, and each must be a distinct stream, while it runs.

    Raises ``ValueError`` unless there are 8 or 16 addresses, ``count ≥ 0`` and ``out`` holds
    ``count · n`` numbers."""
    if addresses.size != 16 and addresses.size != 8:
        raise ValueError("fill_normal_lanes needs 8 or 16 stream addresses")
    if count < 0 or out.size < count * addresses.size:
        raise ValueError("fill_normal_lanes needs count >= 0 and out.size >= count * len(addresses)")
    if addresses.size == 16:
        _fill(addresses, out, count, 16)
    else:
        _fill(addresses, out, count, 8)
