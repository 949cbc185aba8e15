"""Explicit SIMD over replicas for numba kernels: one vector op per ``n`` consecutive lanes.

A compiled kernel that steps ``n`` replicas together keeps every quantity of the step as ``n``
consecutive numbers, one per replica (the *lanes*), so that each arithmetic operation of the step
is one vector operation over the replicas. numba's own loop vectoriser does not do this reliably
for short, fixed-length lane loops (it unrolls them into scalar code), so the operations here are
written as LLVM vector instructions directly (``numba.extending.intrinsic``): load ``n`` lanes from
an array, multiply, accumulate, store. The accumulator (:func:`vacc`) is a stack slot that LLVM
keeps in registers.

Every operation is lane-wise: lane ``q`` of a result depends only on lane ``q`` of the operands,
so a replica's numbers never depend on the other replicas of its group; and each lane computes
the same IEEE operations (a multiply-accumulate is a product, then a sum, never fused) whatever
``n``, so they do not depend on the width of the group either.

Arrays are addressed by a flat element index (C order); ``n`` must be a compile-time constant.
Imported on first use (it imports numba).
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = [
    "vacc",
    "vaxpy_from",
    "vcopy",
    "vfma",
    "vfmab",
    "vmul",
    "vmulb",
    "vscale",
    "vscale_by",
    "vstore",
    "vstore_sub",
    "vsub",
    "vsub_from",
    "vsubb",
]


def _vptr(context, builder, aryty, ary, idx, n):
    data = context.make_array(aryty)(context, builder, ary).data
    vt = ir.VectorType(context.get_data_type(aryty.dtype), n)
    return builder.bitcast(builder.gep(data, [idx]), vt.as_pointer())


def _vload(context, builder, aryty, ary, idx, n):
    return builder.load(_vptr(context, builder, aryty, ary, idx, n), align=aryty.dtype.bitwidth // 8)


def _accptr(context, builder, accty, p, n):
    return builder.bitcast(p, ir.VectorType(context.get_data_type(accty.dtype), n).as_pointer())


def _lanes(n):
    return n.literal_value if isinstance(n, types.IntegerLiteral) else None


@intrinsic
def vacc(typingctx, like, n):
    """An accumulator of ``n`` lanes with the dtype of the array ``like`` (a stack slot)."""
    if _lanes(n) is None:
        return None
    size = _lanes(n)

    def codegen(context, builder, signature, args):
        dt = context.get_data_type(like.dtype)
        return builder.bitcast(cgutils.alloca_once(builder, ir.VectorType(dt, size)), dt.as_pointer())

    return types.CPointer(like.dtype)(like, n), codegen


@intrinsic
def vmul(typingctx, acc, x, i, y, j, n):
    """``acc = x[i : i + n] * y[j : j + n]``."""
    if _lanes(n) is None:
        return None
    size = _lanes(n)

    def codegen(context, builder, sig, args):
        a, xa, i, ya, j, _ = args
        v = builder.fmul(_vload(context, builder, x, xa, i, size), _vload(context, builder, y, ya, j, size))
        builder.store(v, _accptr(context, builder, acc, a, size))
        return context.get_dummy_value()

    return types.void(acc, x, i, y, j, n), codegen


@intrinsic
def vfma(typingctx, acc, x, i, y, j, n):
    """``acc += x[i : i + n] * y[j : j + n]`` (a product, then a sum: two roundings, never fused)."""
    if _lanes(n) is None:
        return None
    size = _lanes(n)

    def codegen(context, builder, sig, args):
        a, xa, i, ya, j, _ = args
        p = _accptr(context, builder, acc, a, size)
        xv, yv = _vload(context, builder, x, xa, i, size), _vload(context, builder, y, ya, j, size)
        builder.store(builder.fadd(builder.load(p), builder.fmul(xv, yv)), p)
        return context.get_dummy_value()

    return types.void(acc, x, i, y, j, n), codegen


def _splat_value(builder, x, n):
    """The scalar ``x`` in every one of ``n`` lanes."""
    vt = ir.VectorType(x.type, n)
    return builder.shuffle_vector(
        builder.insert_element(ir.Constant(vt, ir.Undefined), x, ir.Constant(ir.IntType(32), 0)),
        ir.Constant(vt, ir.Undefined),
        ir.Constant(ir.VectorType(ir.IntType(32), n), [0] * n),
    )


def _vsplat(context, builder, aryty, ary, idx, n):
    data = context.make_array(aryty)(context, builder, ary).data
    return _splat_value(builder, builder.load(builder.gep(data, [idx])), n)


@intrinsic
def vmulb(typingctx, acc, x, i, y, j, n):
    """``acc = x[i : i + n] * y[j]`` (the one number ``y[j]`` in every lane)."""
    if _lanes(n) is None:
        return None
    size = _lanes(n)

    def codegen(context, builder, sig, args):
        a, xa, i, ya, j, _ = args
        v = builder.fmul(_vload(context, builder, x, xa, i, size), _vsplat(context, builder, y, ya, j, size))
        builder.store(v, _accptr(context, builder, acc, a, size))
        return context.get_dummy_value()

    return types.void(acc, x, i, y, j, n), codegen


@intrinsic
def vfmab(typingctx, acc, x, i, y, j, n):
    """``acc += x[i : i + n] * y[j]`` (a product, then a sum: two roundings, never fused)."""
    if _lanes(n) is None:
        return None
    size = _lanes(n)

    def codegen(context, builder, sig, args):
        a, xa, i, ya, j, _ = args
        p = _accptr(context, builder, acc, a, size)
        xv, yv = _vload(context, builder, x, xa, i, size), _vsplat(context, builder, y, ya, j, size)
        builder.store(builder.fadd(builder.load(p), builder.fmul(xv, yv)), p)
        return context.get_dummy_value()

    return types.void(acc, x, i, y, j, n), codegen


@intrinsic
def vstore(typingctx, acc, out, k, n):
    """``out[k : k + n] = acc``."""
    if _lanes(n) is None:
        return None
    size = _lanes(n)

    def codegen(context, builder, sig, args):
        a, oa, k, _ = args
        v = builder.load(_accptr(context, builder, acc, a, size))
        builder.store(v, _vptr(context, builder, out, oa, k, size), align=out.dtype.bitwidth // 8)
        return context.get_dummy_value()

    return types.void(acc, out, k, n), codegen


@intrinsic
def vstore_sub(typingctx, acc, x, i, out, k, n):
    """``out[k : k + n] = acc − x[i : i + n]``."""
    if _lanes(n) is None:
        return None
    size = _lanes(n)

    def codegen(context, builder, sig, args):
        a, xa, i, oa, k, _ = args
        v = builder.fsub(
            builder.load(_accptr(context, builder, acc, a, size)), _vload(context, builder, x, xa, i, size)
        )
        builder.store(v, _vptr(context, builder, out, oa, k, size), align=out.dtype.bitwidth // 8)
        return context.get_dummy_value()

    return types.void(acc, x, i, out, k, n), codegen


@intrinsic
def vsub_from(typingctx, out, k, x, i, n):
    """``out[k : k + n] −= x[i : i + n]``."""
    if _lanes(n) is None:
        return None
    size = _lanes(n)

    def codegen(context, builder, sig, args):
        oa, k, xa, i, _ = args
        p = _vptr(context, builder, out, oa, k, size)
        al = out.dtype.bitwidth // 8
        v = builder.fsub(builder.load(p, align=al), _vload(context, builder, x, xa, i, size))
        builder.store(v, p, align=al)
        return context.get_dummy_value()

    return types.void(out, k, x, i, n), codegen


@intrinsic
def vcopy(typingctx, out, k, x, i, n):
    """``out[k : k + n] = x[i : i + n]``."""
    if _lanes(n) is None:
        return None
    size = _lanes(n)

    def codegen(context, builder, sig, args):
        oa, k, xa, i, _ = args
        v = _vload(context, builder, x, xa, i, size)
        builder.store(v, _vptr(context, builder, out, oa, k, size), align=out.dtype.bitwidth // 8)
        return context.get_dummy_value()

    return types.void(out, k, x, i, n), codegen


@intrinsic
def vsub(typingctx, acc, x, i, n):
    """``acc −= x[i : i + n]``."""
    if _lanes(n) is None:
        return None
    size = _lanes(n)

    def codegen(context, builder, sig, args):
        a, xa, i, _ = args
        p = _accptr(context, builder, acc, a, size)
        builder.store(builder.fsub(builder.load(p), _vload(context, builder, x, xa, i, size)), p)
        return context.get_dummy_value()

    return types.void(acc, x, i, n), codegen


@intrinsic
def vsubb(typingctx, acc, y, j, n):
    """``acc −= y[j]`` (the one number ``y[j]`` from every lane)."""
    if _lanes(n) is None:
        return None
    size = _lanes(n)

    def codegen(context, builder, sig, args):
        a, ya, j, _ = args
        p = _accptr(context, builder, acc, a, size)
        builder.store(builder.fsub(builder.load(p), _vsplat(context, builder, y, ya, j, size)), p)
        return context.get_dummy_value()

    return types.void(acc, y, j, n), codegen


@intrinsic
def vscale(typingctx, acc, c, n):
    """``acc *= c`` (a number, rounded to the lanes' dtype first)."""
    if _lanes(n) is None or not isinstance(c, (types.Float, types.Integer)):
        return None
    size = _lanes(n)

    def codegen(context, builder, sig, args):
        a, cv, _ = args
        v = _splat_value(builder, context.cast(builder, cv, c, acc.dtype), size)
        p = _accptr(context, builder, acc, a, size)
        builder.store(builder.fmul(builder.load(p), v), p)
        return context.get_dummy_value()

    return types.void(acc, c, n), codegen


@intrinsic
def vscale_by(typingctx, acc, y, j, n):
    """``acc *= y[j : j + n]``."""
    if _lanes(n) is None:
        return None
    size = _lanes(n)

    def codegen(context, builder, sig, args):
        a, ya, j, _ = args
        p = _accptr(context, builder, acc, a, size)
        builder.store(builder.fmul(builder.load(p), _vload(context, builder, y, ya, j, size)), p)
        return context.get_dummy_value()

    return types.void(acc, y, j, n), codegen


@intrinsic
def vaxpy_from(typingctx, out, k, y, j, acc, n):
    """``out[k : k + n] = out[k : k + n] − y[j : j + n] * acc`` (a product, then a difference)."""
    if _lanes(n) is None:
        return None
    size = _lanes(n)

    def codegen(context, builder, sig, args):
        oa, k, ya, j, a, _ = args
        p = _vptr(context, builder, out, oa, k, size)
        al = out.dtype.bitwidth // 8
        prod = builder.fmul(
            _vload(context, builder, y, ya, j, size), builder.load(_accptr(context, builder, acc, a, size))
        )
        builder.store(builder.fsub(builder.load(p, align=al), prod), p, align=al)
        return context.get_dummy_value()

    return types.void(out, k, y, j, acc, n), codegen
