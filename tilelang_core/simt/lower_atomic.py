"""T.atomic_add / atomic_max / atomic_min: one hardware atomic (``tl_atomic_<kind>``) per
destination element, for the element types the backend declares (SimtDialect.atomic_dtypes).

A fragment source is walked by its layout (one replica writes); any other source, or a scalar, is
dealt over the block's threads like an element-wise copy. Destinations on global tensors may
overhang (ragged tiles): those elements are skipped.

Inside a T.Parallel body an atomic is per element instead (``atomic_per_element``, applied by
transform/parallel_tile_ops.py before LowerTileOps): the thread of each element adds its value.
"""

from __future__ import annotations

from tvm import tirx

from tilelang_core.ir import Atomic, TileOp
from tilelang_core.ir import region as R
from tilelang_core.lowering import in_bounds as all_in_bounds

from . import intrinsics as I
from .lowering import (FRAGMENT, GLOBAL, cast, dtype, in_bounds, load, region_index,
                       require_whole_fragment, scope, spread_over_threads, state_of, tile_dims,
                       tile_extents)
from .transform.state import if_then, loop


def _checked(op: Atomic, st, error):
    """The helper's name and the element type, or ``error(message)`` raised."""
    dt = dtype(op.dst)
    supported = st.dialect.atomic_dtypes.get(op.kind, ())
    if dt not in supported:
        raise error(f"atomic_{op.kind} on {dt} has no {st.dialect.kind.upper()} "
                    f"atomic; supported: {', '.join(supported)}")
    if scope(op.dst) in ("local", "local.var", FRAGMENT):
        raise error(f"the destination '{op.dst.source.name}' is in registers; atomics "
                    f"need global or shared memory")
    return I.ATOMIC_HELPER + op.kind, dt


def _emitter(op: Atomic, st, helper: str, dt: str):
    def emit(index, value):
        pred = in_bounds(st, op.dst, index)
        stmt = I.call(helper, tirx.address_of(load(op.dst, index)), cast(value, dt))
        return if_then(pred, stmt) if pred is not None else stmt

    return emit


def atomic_per_element(op: Atomic, st, error):
    """One T.Parallel element's atomic (TileLang's thread-level atomic, split-K's epilogue
    ``T.atomic_add(C[by * bM + i, bx * bN + j], C_local[i, j])``): the element's thread adds its
    value, or walks a tile destination serially; the T.Parallel loop variables stay in the
    indices for LowerParallel to map. A destination past a ragged tensor's end is skipped, a
    global source there reads 0 (every index is checked: an element's start may be past the end
    too, unlike a whole tile's)."""
    helper, dt = _checked(op, st, error)
    if op.src_is_region and scope(op.src) == FRAGMENT and tile_dims(op.src):
        raise error(f"the source '{op.src.source.name}' is a fragment tile inside T.Parallel; index "
                    f"it with the loop variables, one element per atomic (T.atomic_add(dst[i, j], "
                    f"{op.src.source.name}[i, j]))")

    def inside(region, index):
        if scope(region) not in GLOBAL:
            return None
        return all_in_bounds(st.analyzer, index, region.source.ty.shape)

    def element(index):
        dst_index = region_index(op.dst, index[-len(tile_dims(op.dst)):] if tile_dims(op.dst) else [])
        value = op.src
        if op.src_is_region:
            src_index = region_index(op.src, index[-len(tile_dims(op.src)):] if tile_dims(op.src) else [])
            value, pred = load(op.src, src_index), inside(op.src, src_index)
            if pred is not None:
                value = tirx.if_then_else(pred, value, tirx.const(0, dtype(op.src)))
        stmt = I.call(helper, tirx.address_of(load(op.dst, dst_index)), cast(value, dt))
        pred = inside(op.dst, dst_index)
        return stmt if pred is None else tirx.IfThenElse(pred, stmt, None)

    extents = tile_extents(op.dst)

    def nest(k, index):
        if k == len(extents):
            return element(index)
        return loop(f"a{k}", R.as_int(extents[k]) or extents[k], lambda v: nest(k + 1, index + [v]))

    return nest(0, [])


def lower_atomic(call, ctx):
    op: Atomic = TileOp.from_stmt(call)
    st = state_of(ctx)
    helper, dt = _checked(op, st, lambda message: ctx.error("atomic", message))
    emit = _emitter(op, st, helper, dt)

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
