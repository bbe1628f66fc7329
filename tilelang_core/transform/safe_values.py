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


def padding_for(load, safe_values):
    """What an out-of-bounds ``load`` reads: its buffer's safe value, else 0."""
    for buffer, value in safe_values:
        if buffer.same_as(load.source):
            return value if str(value.ty) == str(load.ty) else tirx.Cast(str(load.ty), value)
    return tirx.const(0, str(load.ty))


def lower_safe_value_copies(func, refuse):
    """``func`` with every T.copy from a tensor with a nonzero safe value written as an element-wise
    copy in T.Parallel (whose reads past the tensor's edge give the safe value on every backend,
    cast to the destination's type as TileLang's copy does); a copy inside a T.Parallel body (one
    element per iteration) becomes its store. A region of run-time extent is refused
    (``raise refuse(message)``)."""
    from ..ir import Copy, TileOp, is_tile_op
    from ..ir import region as R

    annotated = []

    def on_attr(attr):
        if attr.attr_key == SAFE_VALUE:
            annotated.extend(b for b, v in attr.node.items()
                             if not (isinstance(v, (tirx.IntImm, tirx.FloatImm)) and float(v.value) == 0))

    tvm_ffi.structural_walk(func.body, [(tirx.AttrStmt, on_attr)])
    if not annotated:
        return func
    in_parallel = []

    def on_for(loop):
        if loop.annotations is not None and "tl.parallel" in loop.annotations:
            tvm_ffi.structural_walk(loop.body, [(tirx.TilePrimitiveCall, in_parallel.append)])

    tvm_ffi.structural_walk(func.body, [(tirx.For, on_for)])

    def on_call(call):
        if not is_tile_op(call):
            return call
        op = TileOp.from_stmt(call)
        if not isinstance(op, Copy) or not any(op.src.source.same_as(b) for b in annotated):
            return call
        src_ext = [R.as_int(r.extent) for r in op.src.region]
        dst_ext = [R.as_int(r.extent) for r in op.dst.region]
        src_dims = [d for d, e in enumerate(src_ext) if e != 1]
        dst_dims = [d for d, e in enumerate(dst_ext) if e != 1]
        extents = [src_ext[d] for d in src_dims]
        # (T.copy itself has made the non-unit extents agree; a run-time extent is what is left)
        if None in src_ext or None in dst_ext or extents != [dst_ext[d] for d in dst_dims]:
            raise refuse(f"T.copy reads '{op.src.source.name}', which T.annotate_safe_value pads with a "
                         f"nonzero value, over a region whose extents are known only at run time; write the "
                         f"load as a T.Parallel loop (dst[i] = {op.src.source.name}[...]), which pads with "
                         f"the safe value")
        inside = any(call.same_as(c) for c in in_parallel)
        loop_vars = [tirx.Var(f"safe_i{k}", "int32") for k in range(len(extents))]
        if not loop_vars and not inside:  # one element, outside T.Parallel: a loop of one for the guard
            loop_vars, extents = [tirx.Var("safe_i0", "int32")], [1]

        def index(region, dims):
            offsets = dict(zip(dims, loop_vars))
            return [r.min + offsets[d] if d in offsets else r.min for d, r in enumerate(region.region)]

        value = tirx.BufferLoad(op.src.source, index(op.src, src_dims))
        dst_dtype = str(op.dst.source.ty.dtype)
        if str(value.ty) != dst_dtype:
            value = tirx.Cast(dst_dtype, value)
        body = tirx.BufferStore(op.dst.source, value, index(op.dst, dst_dims))
        if inside:
            return body
        for var, extent in reversed(list(zip(loop_vars, extents))):
            body = tirx.For(var, tirx.const(0, "int32"), tirx.const(extent, "int32"), tirx.ForKind.PARALLEL,
                            body, None, {"tl.parallel": tirx.const(1, "int32")})
        return body

    return func.with_body(tvm_ffi.structural_map(func.body, [(tirx.TilePrimitiveCall, on_call)]))


__all__ = ["SAFE_VALUE", "lower_safe_value_copies", "padding_for", "take_safe_values"]
