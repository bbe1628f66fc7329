"""``T.annotate_safe_value({A: v})``: what a T.Parallel read past the edge of global tensor ``A``
gives instead of 0 (TileLang's safe memory access, with its pad value).

The frontend leaves a ``tl.safe_value`` attribute (node: a Map buffer -> value) around the rest
of the kernel; :func:`take_safe_values` strips it and returns the map, which the backends' guard
passes read (the SIMT kit's LowerParallel, the cpu backend's GuardParallelGlobals). A ``T.copy``
that reads such a tensor pads with the value too, as in TileLang: it is written as an element-wise
T.Parallel copy at parse time (:func:`lower_safe_value_copies`), since the copy rules' own padding
is 0 (cp.async and TMA zero-fill).
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

SAFE_VALUE = "tl.safe_value"


def take_safe_values(body):
    """(body without the attributes, [(buffer, value)])."""
    found = []

    def on_attr(attr):
        if attr.attr_key != SAFE_VALUE:
            return attr
        found.extend((buffer, value) for buffer, value in attr.node.items())
        return attr.body

    return tvm_ffi.structural_map(body, [(tirx.AttrStmt, on_attr)]), found


def is_if_then_else(expr) -> bool:
    """``T.if_then_else(c, a, b)``: only the arm ``c`` picks is evaluated."""
    return isinstance(expr, tvm.ir.Call) and str(getattr(expr.op, "name", "")) in ("tirx.if_then_else",
                                                                                   "prim.if_then_else")


def guarded_load(expr):
    """``(load, condition)`` of a read the guard passes wrapped in its bounds check
    (``if_then_else(condition, A[i], padding)``), else None."""
    if is_if_then_else(expr) and isinstance(expr.args[1], tvm.ir.TensorLoad):
        return expr.args[1], expr.args[0]
    return None


def padding_for(load, safe_values):
    """What an out-of-bounds ``load`` reads: its buffer's safe value, else 0."""
    for buffer, value in safe_values:
        if buffer.same_as(load.source):
            return value if str(value.ty) == str(load.ty) else tirx.Cast(str(load.ty), value)
    return tirx.const(0, str(load.ty))


def _refuse_second_values(given, refuse) -> None:
    """One safe value per tensor and kernel: the value applies to every read of the tensor, so a
    second, different one would silently replace the first for the reads before it too (TileLang
    scopes the value to its block and refuses a second one in the same block)."""
    first = []
    for buffer, value in given:
        seen = next((v for b, v in first if b.same_as(buffer)), None)
        if seen is None:
            first.append((buffer, value))
        elif not tvm_ffi.structural_equal(seen, value):
            raise refuse(f"T.annotate_safe_value gives '{buffer.name}' two safe values ({seen} and {value}); "
                         f"a tensor has one safe value in a kernel (TileLang scopes one to each block): keep "
                         f"one, and pad the other reads in a T.Parallel loop that selects the value "
                         f"(T.if_then_else on the bounds)")


def lower_safe_value_copies(func, refuse):
    """``func`` with every T.copy from a tensor with a nonzero safe value written as an element-wise
    copy in T.Parallel (whose reads past the tensor's edge give the safe value on every backend,
    cast to the destination's type as TileLang's copy does); a one-element copy inside a T.Parallel
    body is its store already (transform/element_copies.py runs first). A region of run-time extent,
    and a copy of several elements inside T.Parallel, are refused (``raise refuse(message)``)."""
    from ..ir import Copy, TileOp, is_tile_op
    from ..ir.elementwise import cast_to, elementwise, parallel_loop
    from .element_copies import tile_ops_in_parallel

    annotated, given = [], []

    def on_attr(attr):
        if attr.attr_key == SAFE_VALUE:
            given.extend(attr.node.items())
            annotated.extend(b for b, v in attr.node.items()
                             if not (isinstance(v, (tirx.IntImm, tirx.FloatImm)) and float(v.value) == 0))

    tvm_ffi.structural_walk(func.body, [(tirx.AttrStmt, on_attr)])
    _refuse_second_values(given, refuse)
    if not annotated:
        return func
    in_parallel = tile_ops_in_parallel(func.body)

    def on_call(call):
        if not is_tile_op(call):
            return call
        op = TileOp.from_stmt(call)
        if not isinstance(op, Copy) or not any(op.src.source.same_as(b) for b in annotated):
            return call
        name, dtype = op.src.source.name, str(op.dst.source.ty.dtype)
        nest = elementwise(op.src, op.dst, lambda s, d: tirx.BufferStore(op.dst.source, cast_to(s, dtype), d))
        if nest is None:
            raise refuse(f"T.copy reads '{name}', which T.annotate_safe_value pads with a nonzero value, over "
                         f"a region whose extents are known only at run time; write the load as a T.Parallel "
                         f"loop (dst[i] = {name}[...]), which pads with the safe value")
        if any(call.same_as(c) for c in in_parallel):  # (one-element ones are stores by now: element_copies.py)
            raise refuse(f"T.copy of several elements of '{name}' inside a T.Parallel loop; copy one "
                         f"element per iteration (T.copy({name}[i, j], dst[i, j]))")
        # one element outside T.Parallel: a loop of one, so that the read past the edge is guarded
        return nest if isinstance(nest, tirx.For) else parallel_loop(tirx.Var("e0", "int32"), 1, nest)

    return func.with_body(tvm_ffi.structural_map(func.body, [(tirx.TilePrimitiveCall, on_call)]))


__all__ = ["SAFE_VALUE", "guarded_load", "is_if_then_else", "lower_safe_value_copies", "padding_for", "take_safe_values"]
