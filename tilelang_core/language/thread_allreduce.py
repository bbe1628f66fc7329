"""TVM's low-level cross-thread reduction, as TileLang's SIMT kernels write it::

    with T.attr(T.comm_reducer(lambda x, y: x + y, [T.float32(0)]), "reduce_scope",
                T.reinterpret(T.uint64(0), dtype="handle")):
        T.evaluate(T.tvm_thread_allreduce(T.uint32(1), acc[0], True, red[0], tk, dtype="handle"))

Every thread ends with ``red[0]`` = the reducer's fold of ``acc[0]`` over the threads that differ
only in the thread bindings named (``tk = T.get_thread_binding(1)``: the threads of its row), the
threads whose condition is false contributing the identity. TVM's own pass
(LowerThreadAllreduce) would need TVM's thread-axis IR, which our kernels do not keep, so the
reduction is written out here, in the tile language every backend already runs:

- over lanes of one warp (the bindings below the named one span a power of two of lanes and the
  named one a power of two): a butterfly of ``T.shfl_xor`` steps, which leaves the fold in every
  lane of the group;
- over what is left (groups wider than a warp, other extents, several bindings): each thread
  publishes its partial in a shared array and folds its group's entries; the barriers come from
  insert_barriers, as for any shared array written and read by different threads.

The fold order differs from TVM's, which for a sum changes only the rounding.
"""

from __future__ import annotations

import math

import tvm
import tvm_ffi
from tvm import tirx
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as B

from ..errors import FrontendError
from .allocate import alloc_local, alloc_shared
from .kernel import current_kernel
from .warp import shfl_xor

WARP = 32
_SCOPES: list = []  # comm_reducers of the open ``reduce_scope`` attributes, innermost last


class ReduceScope:
    """``with T.attr(reducer, "reduce_scope", ...)``: the reducer for the T.tvm_thread_allreduce
    calls in its body. Emits nothing itself (the reduction is written out at the call)."""

    def __init__(self, reducer):
        self.reducer = reducer

    def __enter__(self):
        current_kernel("T.attr(..., 'reduce_scope', ...)")
        _SCOPES.append(self.reducer)

    def __exit__(self, exc_type, exc, tb):
        _SCOPES.pop()
        return False


def is_reduce_scope(node, attr_key) -> bool:
    return attr_key == "reduce_scope" and isinstance(node, tirx.CommReducer)


def _combine(reducer, a, b):
    lhs, rhs = reducer.lhs[0], reducer.rhs[0]
    if str(a.ty) != str(lhs.ty):
        a = tirx.Cast(str(lhs.ty), a)
    if str(b.ty) != str(rhs.ty):
        b = tirx.Cast(str(rhs.ty), b)

    def on_var(v):
        return a if v.same_as(lhs) else b if v.same_as(rhs) else v

    return tvm_ffi.structural_map(reducer.result[0], [(tvm.ir.Var, on_var)])


def _element(value, what: str):
    """``value`` (``red[0]``, a local element) as (buffer, indices)."""
    value = getattr(value, "scalar", value)
    if not (isinstance(value, tvm.ir.TensorLoad) and tirx.is_buffer_var(value.source)):
        raise FrontendError(f"T.tvm_thread_allreduce: {what} must be an element of a local buffer "
                            f"(red[0] of T.alloc_local((1,), dtype)), got {value!r}")
    return value.source, list(value.indices)


def _dimension(kernel, expr) -> int:
    d = kernel.thread_dimension(expr)
    if d is None:
        raise FrontendError(f"T.tvm_thread_allreduce reduces over the kernel's thread bindings "
                            f"(T.get_thread_binding(d)); {expr} is not one of them")
    return d


def _pow2(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0


def tvm_thread_allreduce(*args, dtype="handle"):
    """``T.tvm_thread_allreduce(size, value, cond, out, *thread_bindings)`` inside
    ``T.attr(T.comm_reducer(...), "reduce_scope", ...)`` (module docstring)."""
    kernel = current_kernel("T.tvm_thread_allreduce")
    if not _SCOPES:
        raise FrontendError("T.tvm_thread_allreduce must be inside 'with T.attr(T.comm_reducer(...), "
                            "\"reduce_scope\", ...)', which names how values combine")
    reducer = _SCOPES[-1]
    size = getattr(args[0], "value", args[0]) if args else None
    if size != 1 or len(reducer.result) != 1:
        raise FrontendError(f"T.tvm_thread_allreduce reduces one value here (size 1 and a comm_reducer "
                            f"of one value), got size {size!r}; reduce each value by itself")
    if len(args) < 5:
        raise FrontendError("T.tvm_thread_allreduce takes (size, value, cond, out, thread_binding, ...)")
    value, cond, out, bindings = args[1], args[2], args[3], args[4:]
    value = getattr(value, "scalar", value)
    out_buffer, out_indices = _element(out, "the result (4th argument)")
    cond = tirx.const(bool(cond), "bool") if isinstance(cond, (bool, int)) else cond
    dims = sorted({_dimension(kernel, b) for b in bindings})
    total = math.prod(kernel.threads)
    strides = [math.prod(kernel.threads[:d]) for d in dims]
    extents = [kernel.threads[d] for d in dims]
    dtype_ = str(reducer.lhs[0].ty)
    identity = reducer.identity_element[0]

    part = alloc_local((1,), dtype_)
    IRBuilder.name("allreduce_part", part)
    start = value if str(value.ty) == dtype_ else tirx.Cast(dtype_, value)
    B.buffer_store(part, tirx.Select(cond, start, identity), [0])
    groups = list(zip(strides, extents, strict=True))
    if len(dims) == 1 and total % WARP == 0 and _pow2(strides[0]) and _pow2(extents[0]) \
            and strides[0] < WARP:
        stride, extent = groups[0]
        offset = stride
        while offset < min(WARP, stride * extent):  # the lanes of the group inside one warp
            B.buffer_store(part, _combine(reducer, part[0], shfl_xor(part[0], offset)), [0])
            offset *= 2
        groups = [(offset, stride * extent // offset)] if stride * extent > offset else []
    if groups:
        tid = kernel.thread_id
        scratch = alloc_shared((total,), dtype_)
        IRBuilder.name("allreduce_scratch", scratch)
        B.buffer_store(scratch, part[0], [tid])
        base = _group_base(tid, total, groups)
        B.buffer_store(part, identity, [0])
        _fold(reducer, part, scratch, base, groups)
    B.buffer_store(out_buffer, part[0], out_indices)
    return tirx.const(0, "int32")  # T.evaluate(...) of it is a no-op


def _group_base(tid, total: int, groups) -> tirx.PrimExpr:
    """The first thread of ``tid``'s group: its digits outside the groups' (stride, extent)
    ranges, kept as sums of bounded terms (a subtraction would defeat the bounds check)."""
    base, low = tirx.const(0, "int32"), 1
    for stride, extent in sorted(groups):
        if stride > low:
            base = base + tirx.floormod(tirx.floordiv(tid, low), stride // low) * low
        low = stride * extent
    if low < total:
        base = base + tirx.floordiv(tid, low) * low
    return base


def _fold(reducer, part, scratch, base, groups):
    """part[0] = fold of scratch over the group: base plus every combination of the strides."""
    if not groups:
        B.buffer_store(part, _combine(reducer, part[0], scratch[base]), [0])
        return
    (stride, extent), rest = groups[0], groups[1:]
    with B.serial(0, extent) as r:
        _fold(reducer, part, scratch, base + r * stride, rest)
