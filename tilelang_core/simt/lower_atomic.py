"""T.atomic_add / atomic_max / atomic_min: one hardware atomic (``tl_atomic_<kind>``) per
destination element, for the element types the backend declares (SimtDialect.atomic_dtypes).

A fragment source is walked by its layout (one replica writes); any other source, or a scalar, is
dealt over the block's threads like an element-wise copy. Destinations on global tensors may
overhang (ragged tiles): those elements are skipped.
"""

from __future__ import annotations

from tvm import tirx

from tilelang_core.ir import Atomic, TileOp

from . import intrinsics as I
from .lowering import (FRAGMENT, cast, dtype, in_bounds, load, region_index,
                       require_whole_fragment, scope, spread_over_threads, state_of, tile_dims,
                       tile_extents)
from .transform.state import if_then, loop


def lower_atomic(call, ctx):
    op: Atomic = TileOp.from_stmt(call)
    st = state_of(ctx)
    dt = dtype(op.dst)
    supported = st.dialect.atomic_dtypes.get(op.kind, ())
    if dt not in supported:
        raise ctx.error("atomic", f"atomic_{op.kind} on {dt} has no {st.dialect.kind.upper()} "
                        f"atomic; supported: {', '.join(supported)}")
    if scope(op.dst) in ("local", "local.var", FRAGMENT):
        raise ctx.error("atomic", f"the destination '{op.dst.source.name}' is in registers; atomics "
                        f"need global or shared memory")
    helper = f"tl_atomic_{op.kind}"

    def emit(index, value):
        pred = in_bounds(st, op.dst, index)
        stmt = I.call(helper, tirx.address_of(load(op.dst, index)), cast(value, dt))
        return if_then(pred, stmt) if pred is not None else stmt

    if op.src_is_region and scope(op.src) == FRAGMENT:
        require_whole_fragment(op.src, st, f"T.atomic_{op.kind}")
        layout = st.layouts[op.src.source]
        regs = st.local_buffer(op.src.source)

        def body(l):
            idx = [st.simplify(e) for e in layout.index_of(st.thread_var, l)]
            return emit(region_index(op.dst, idx), tirx.BufferLoad(regs, [l]))

        stmt = loop("l", layout.local_size, body, tirx.ForKind.UNROLLED)
        return if_then(layout.replica_of(st.thread_var) == 0, stmt) if layout.replicas > 1 else stmt

    def element(index):
        dst_index = region_index(op.dst, index[-len(tile_dims(op.dst)):] if tile_dims(op.dst) else [])
        value = load(op.src, region_index(op.src, index[-len(tile_dims(op.src)):] if tile_dims(op.src)
                                          else [])) if op.src_is_region else op.src
        return emit(dst_index, value), []

    return spread_over_threads(st, tile_extents(op.dst) or [1], element)
