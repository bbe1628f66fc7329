"""T.atomic_add / max / min / or / and / xor / store: one hardware atomic (``tl_atomic_<kind>``)
per destination element, for the element types and memory orders the backend declares
(SimtDialect.atomic_dtypes, atomic_orders).

A tile atomic combines each element of its tile once per block: a fragment source is walked by
its layout (one replica writes); any other source, or a scalar, is dealt over the block's threads
like an element-wise copy. Destinations on global tensors may overhang (ragged tiles): those
elements are skipped.

A thread-level atomic (``Atomic.per_thread``: an element and a scalar, TileLang's
``T.atomic_add(C[i], v)``) is performed by every thread that executes it, as written. Inside a
T.Parallel body an atomic is per element instead (``atomic_per_element``, applied by
transform/parallel_tile_ops.py before LowerTileOps): the thread of each element adds its value.

A non-relaxed memory order is the helper's last argument, its id in ORDER_IDS.

Adds into consecutive global elements go out as vector atomics where the backend has them
(vector_atomic_adds.py): a fragment source by runs of its registers, any other source dealt over
the threads in runs of 2 or 4 elements instead of one.
"""

from __future__ import annotations

from tvm import tirx

from tilelang_core.ir import Atomic, TileOp
from tilelang_core.ir import region as R
from tilelang_core.ir.ops import MEMORY_ORDERS
from tilelang_core.lowering import in_bounds as all_in_bounds

from . import intrinsics as I
from .lowering import (FRAGMENT, GLOBAL, PER_THREAD, cast, dtype, in_bounds, load, region_index,
                       require_whole_fragment, row_aligned, scope, spread_over_threads, state_of, tile_dims,
                       tile_extents)
from .transform.state import if_then, loop
from .vector_atomic_adds import tile_runs, vector_loop, vector_run

#: memory order -> the id the helpers take (cuda::memory_order's, and C11's __ATOMIC_* values)
ORDER_IDS = {name: i for i, name in enumerate(MEMORY_ORDERS)}
REGISTER_SCOPES = (*PER_THREAD, FRAGMENT)


def check_atomic(st, kind: str, dt: str, order: str, buffer, error):
    """Raise ``error(message)`` unless the backend has ``kind`` on ``dt`` with ``order`` into
    ``buffer``'s memory."""
    dialect = st.dialect
    supported = dialect.atomic_dtypes.get(kind, ())
    name = "atomic_load" if kind == "load" else f"atomic_{kind}"
    if dt not in supported:
        have = ", ".join(supported) if supported else "no element type"
        raise error(f"{name} on {dt} has no {dialect.kind.upper()} atomic; supported: {have}")
    if order not in dialect.atomic_orders:
        raise error(f"{name}(memory_order={order!r}) is not available on the {dialect.kind} backend: "
                    f"its atomics implement {', '.join(repr(o) for o in dialect.atomic_orders)}. Use "
                    f"one of those (and a barrier, T.sync_threads, to order accesses within a block)")
    if str(buffer.ty.storage_scope) in REGISTER_SCOPES:
        raise error(f"the {'source' if kind == 'load' else 'destination'} '{buffer.name}' is in "
                    f"registers; atomics need global or shared memory")


def order_args(order: str) -> list:
    """The helper's trailing memory-order argument: none for relaxed (the plain helper)."""
    return [] if order == "relaxed" else [tirx.const(ORDER_IDS[order], "int32")]


def _checked(op: Atomic, st, error):
    """The helper's name and the element type, or ``error(message)`` raised."""
    dt = dtype(op.dst)
    check_atomic(st, op.kind, dt, op.memory_order, op.dst.source, error)
    return I.ATOMIC_HELPER + op.kind, dt


def _call(op: Atomic, helper: str, dt: str, dst_load, value):
    return I.call(helper, tirx.address_of(dst_load), cast(value, dt), *order_args(op.memory_order))


def _emitter(op: Atomic, st, helper: str, dt: str):
    def emit(index, value):
        pred = in_bounds(st, op.dst, index)
        stmt = _call(op, helper, dt, load(op.dst, index), value)
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
        stmt = _call(op, helper, dt, load(op.dst, dst_index), value)
        pred = inside(op.dst, dst_index)
        return stmt if pred is None else tirx.IfThenElse(pred, stmt, None)

    extents = tile_extents(op.dst)

    def nest(k, index):
        if k == len(extents):
            return element(index)
        return loop(f"a{k}", R.as_int(extents[k]) or extents[k], lambda v: nest(k + 1, index + [v]))

    return nest(0, [])


def _per_thread(op: Atomic, st, helper: str, dt: str):
    """Every thread that gets here performs the atomic (an element past a ragged global tensor's
    end is skipped, as TileLang's safe accesses skip it)."""
    index = [r.min for r in op.dst.region]
    value = load(op.src, [r.min for r in op.src.region]) if op.src_is_region else op.src
    stmt = _call(op, helper, dt, load(op.dst, index), value)
    pred = all_in_bounds(st.analyzer, index, op.dst.source.ty.shape) if scope(op.dst) in GLOBAL else None
    return stmt if pred is None else tirx.IfThenElse(pred, stmt, None)


def _same(a, b) -> bool:
    """Two lists of constant extents that are equal."""
    return len(a) == len(b) and all(R.as_int(x) is not None and R.as_int(x) == R.as_int(y) for x, y in zip(a, b))


def lower_atomic(call, ctx):
    op: Atomic = TileOp.from_stmt(call)
    st = state_of(ctx)
    helper, dt = _checked(op, st, lambda message: ctx.error("atomic", message))
    if op.per_thread:
        return _per_thread(op, st, helper, dt)
    emit = _emitter(op, st, helper, dt)

    if op.src_is_region and scope(op.src) == FRAGMENT:
        require_whole_fragment(op.src, st, f"T.atomic_{op.kind}")
        layout = st.layouts[op.src.source]
        regs = st.local_buffer(op.src.source)

        def body(l):
            idx = [st.simplify(e) for e in layout.index_of(st.thread_var, l)]
            return emit(region_index(op.dst, idx), tirx.BufferLoad(regs, [l]))

        stmt = None
        if op.kind == "add" and layout.register_run > 1:  # runs of registers as vector atomics
            l_var = tirx.Var("l", "int32")
            stmt = vector_loop(body(l_var), l_var, layout.local_size, layout.register_run, st)
        if stmt is None:
            stmt = loop("l", layout.local_size, body, tirx.ForKind.UNROLLED)
        return if_then(layout.replica_of(st.thread_var) == 0, stmt) if layout.replicas > 1 else stmt

    def element(index):
        dst_index = region_index(op.dst, index[-len(tile_dims(op.dst)):] if tile_dims(op.dst) else [])
        value = load(op.src, region_index(op.src, index[-len(tile_dims(op.src)):] if tile_dims(op.src)
                                          else [])) if op.src_is_region else op.src
        return emit(dst_index, value), []

    extents = tile_extents(op.dst) or [1]
    vec = tile_runs(st, dt, extents, lambda v: row_aligned(op.dst, v, st)) if op.kind == "add" \
        and scope(op.dst) in GLOBAL and (not op.src_is_region or _same(tile_extents(op.src), extents)) else 1
    if vec > 1:  # each thread adds runs of vec consecutive elements with one vector atomic
        def run(index):
            at = index[:-1] + [index[-1] * vec]
            lanes = [element(at[:-1] + [at[-1] + k])[0] for k in range(vec)]
            return vector_run(lanes, st, vec), []

        return spread_over_threads(st, extents[:-1] + [extents[-1] // vec], run)
    return spread_over_threads(st, extents, element)
