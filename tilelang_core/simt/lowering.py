"""The SIMT kit's rule table: copy and fill here; reduce, atomic, cumsum and the FMA gemm in
lower_<op>.py; ``register_simt_rules`` (__init__.py) puts them under a backend kind.

Every rule gets the TilePrimitiveCall and a SimtLoweringContext whose ``state`` is the kernel's
KernelState (threads, fragment layouts, register buffers, the backend's SimtDialect). Rules emit
per-thread code: fragments are accessed through their register buffers directly; shared buffers
keep their logical N-D indices (transform/apply_layouts.py maps them to swizzled offsets
afterwards). Device helpers are called by the names of the contract in __init__.py.

Example::

    from tilelang_core.simt import register_simt_rules
    register_simt_rules("hip")                    # copy, fill, reduce, atomic, cumsum, FMA gemm
    register_simt_rules("cuda", gemm=lower_gemm)  # a backend's own gemm rule (mma.sync)
"""

from __future__ import annotations

import tvm
from tvm import tirx

from tilelang_core.errors import LoweringError
from tilelang_core.ir import Copy, Fill, TileOp
from tilelang_core.ir import region as R

from . import intrinsics as I
from .transform.state import KernelState, if_then, loop, loop_layout_guard

SHARED = ("shared", "shared.dyn")
FRAGMENT = "local.fragment"
#: per-thread storage: every thread holds its own copy (T.alloc_local, T.alloc_var)
PER_THREAD = ("local", "local.var")
GLOBAL = ("global", "")


def scope(region) -> str:
    return str(region.source.ty.storage_scope)


def dtype(region) -> str:
    return str(region.source.ty.dtype)


def elem_bytes(region) -> int:
    return max(1, tvm.runtime.DataType(dtype(region)).bits // 8)


def tile_dims(region) -> list[int]:
    """Dimensions of the region that are not constantly 1 (the tile's own axes)."""
    return [d for d, r in enumerate(region.region) if R.as_int(r.extent) != 1]


def tile_extents(region) -> list:
    return [region.region[d].extent for d in tile_dims(region)]


def region_index(region, tile_index) -> list:
    """Buffer indices of tile element ``tile_index`` (one index per tile axis)."""
    dims = tile_dims(region)
    out = [r.min for r in region.region]
    for d, i in zip(dims, tile_index):
        out[d] = region.region[d].min + i
    return out


def in_bounds(st: KernelState, region, index: list):
    """Predicate that ``index`` lies inside the buffer; None when provably always true. Regions on
    global tensors may overhang (ragged tiles), in their unit dimensions too (``A[row, 0:K]`` with
    ``row`` past the last row of a ragged tensor: TileLang guards it as well). Vector accesses
    check their first element only: callers vectorize only where rows and starts are multiples of
    the vector width."""
    if scope(region) not in GLOBAL:
        return None
    conds = []
    for d in range(len(index)):
        shape = region.source.ty.shape[d]
        cond = index[d] < shape
        if st.analyzer.can_prove(cond):
            continue
        conds.append(cond)
    if not conds:
        return None
    out = conds[0]
    for c in conds[1:]:
        out = tirx.And(out, c)
    return out


def load(region, index):
    return tirx.BufferLoad(region.source, index)


def cast(value, to: str):
    return value if str(value.ty) == to else tirx.Cast(to, value)


def state_of(ctx) -> KernelState:
    return ctx.state


# -- copy -----------------------------------------------------------------------------------------

def lower_copy(call, ctx):
    op: Copy = TileOp.from_stmt(call)
    st = state_of(ctx)
    if scope(op.src) == FRAGMENT or scope(op.dst) == FRAGMENT:
        return copy_fragment(op, st)
    if "loop_layout" in op.options:
        from tilelang_core.layout import Fragment

        return copy_by_loop_layout(op, st, Fragment.from_description(str(op.options["loop_layout"])))
    vector = copy_vector_width(op, st)
    if vector > 1:
        return copy_vectorized(op, st, vector, bool(op.options.get("tl_async", False)))
    vector = converting_vector_width(op, st)
    if vector > 1:
        return copy_converting(op, st, vector)
    return copy_elementwise(op, st)


covers_whole_buffer = R.covers_whole


def require_whole_fragment(region, st: KernelState, what: str) -> None:
    if not covers_whole_buffer(region):
        raise LoweringError(
            f"kernel '{st.kernel}': {what} of part of fragment '{region.source.name}' "
            f"({R.fmt_region(region)}): tile ops take fragments whole (a layout spreads every "
            f"fragment over all threads); pass the whole fragment, or use a T.Parallel loop for a part")


def copy_fragment(op: Copy, st: KernelState):
    """Each thread moves the elements its fragment layout gives it (both sides fragments: same
    layout, register to register). A part of a fragment (``acc_o[:valid_h, :]``, TileLang's GQA
    decoding epilogue) moves the thread's elements that lie inside the part."""
    if scope(op.src) == FRAGMENT and scope(op.dst) == FRAGMENT:
        return _copy_between_fragments(op, st)
    frag_region = op.dst if scope(op.dst) == FRAGMENT else op.src
    other = op.src if frag_region is op.dst else op.dst
    layout = st.layouts[frag_region.source]
    regs = st.local_buffer(frag_region.source)
    writes_fragment = frag_region is op.dst
    inside = _inside(frag_region, layout, st)
    if inside is not None:
        return _copy_fragment_part(op, st, frag_region, other, layout, regs, inside)

    vec = fragment_vector_width(layout, frag_region, other, st)

    def element(l, lane=0):
        idx = [st.simplify(e) for e in layout.index_of(st.thread_var, l)]
        frag_idx = [idx[d] for d in tile_dims(frag_region)] if len(idx) > len(tile_dims(frag_region)) \
            else idx
        if lane:
            frag_idx = frag_idx[:-1] + [frag_idx[-1] + lane]
        return region_index(other, frag_idx)

    def move(l, index):
        if writes_fragment:
            return tirx.BufferStore(regs, cast(load(other, index), dtype(op.dst)), [l])
        return tirx.BufferStore(other.source, cast(tirx.BufferLoad(regs, [l]), dtype(op.dst)), index)

    def body(lo):
        # ``vec`` registers in a row are ``vec`` consecutive elements of the other side: one
        # vectorized access (TVM's VectorizeLoop turns the inner loop into a vector load/store).
        l0 = lo * vec
        pred = in_bounds(st, other, element(l0))  # all-or-nothing: rows and vectors are aligned
        if vec == 1:
            if writes_fragment and pred is not None:
                # lazy: the load must not happen out of bounds
                value = tirx.if_then_else(pred, cast(load(other, element(l0)), dtype(op.dst)),
                                          tirx.const(0, dtype(op.dst)))
                return tirx.BufferStore(regs, value, [l0])
            stmt = move(l0, element(l0))
            return if_then(pred, stmt) if pred is not None else stmt
        vi = tirx.Var("vi", "int32")
        idx0 = element(l0)
        index = idx0[:-1] + [idx0[-1] + vi]
        vector = tirx.For(vi, tirx.const(0, "int32"), tirx.const(vec, "int32"), tirx.ForKind.VECTORIZED,
                          move(l0 + vi, index))
        if pred is None:
            return vector
        zeros = tirx.For(vi, tirx.const(0, "int32"), tirx.const(vec, "int32"), tirx.ForKind.VECTORIZED,
                         tirx.BufferStore(regs, tirx.const(0, dtype(op.dst)), [l0 + vi])) \
            if writes_fragment else None
        return tirx.IfThenElse(pred, vector, zeros)

    stmt = loop("l", layout.local_size // vec, body, tirx.ForKind.UNROLLED)
    if not writes_fragment and layout.replicas > 1:
        # Replicas hold equal values: one copy writes.
        stmt = if_then(layout.replica_of(st.thread_var) == 0, stmt)
    return stmt


def _inside(region, layout, st: KernelState):
    """``l -> predicate`` that this thread's register ``l`` lies inside ``region`` of its fragment;
    None when the region is the whole fragment."""
    if covers_whole_buffer(region):
        return None

    def pred(l):
        idx = layout.index_of(st.thread_var, l)
        conds = []
        for d, r in enumerate(region.region):
            if R.as_int(r.min) == 0 and R.as_int(r.extent) == R.as_int(region.source.ty.shape[d]):
                continue
            conds += [r.min <= idx[d], idx[d] < r.min + r.extent]
        out = conds[0]
        for c in conds[1:]:
            out = tirx.And(out, c)
        return st.simplify(out)

    return pred


def _tile_position(region, layout, st: KernelState, l) -> list:
    """Where this thread's register ``l`` sits in ``region``'s tile (one index per tile axis)."""
    idx = layout.index_of(st.thread_var, l)
    return [st.simplify(idx[d] - region.region[d].min) for d in tile_dims(region)]


def _copy_fragment_part(op: Copy, st: KernelState, frag_region, other, layout, regs, inside):
    """Part of a fragment to or from memory: every register of the thread, guarded by whether its
    element is inside the part (elements outside it are left as they are)."""
    writes_fragment = frag_region is op.dst

    def body(l):
        index = region_index(other, _tile_position(frag_region, layout, st, l))
        pred = inside(l)
        bounds = in_bounds(st, other, index)
        if bounds is not None:
            pred = tirx.And(pred, bounds)
        if writes_fragment:
            stmt = tirx.BufferStore(regs, cast(load(other, index), dtype(op.dst)), [l])
        else:
            stmt = tirx.BufferStore(other.source, cast(tirx.BufferLoad(regs, [l]), dtype(op.dst)), index)
        return if_then(pred, stmt)

    stmt = loop("l", layout.local_size, body, tirx.ForKind.UNROLLED)
    if not writes_fragment and layout.replicas > 1:
        stmt = if_then(layout.replica_of(st.thread_var) == 0, stmt)  # replicas hold equal values
    return stmt


def _copy_between_fragments(op: Copy, st: KernelState):
    """Register to register. Whole fragments share one layout (layout inference gives a copy's
    two sides the same); a part of a fragment is read from one that every thread holds whole,
    into each thread's own registers of the destination (part). (Parts whose extents are known
    when the kernel is compiled, ``T.copy(lse[k, :], lse_k)``, are T.Parallel loops since parse
    time: transform/element_copies.py.)"""
    src, dst = op.src, op.dst
    regs = st.local_buffer(dst.source)
    dst_layout = st.layouts[dst.source]
    if covers_whole_buffer(src) and covers_whole_buffer(dst):
        src_regs = st.local_buffer(src.source)

        def same(l):
            return tirx.BufferStore(regs, cast(tirx.BufferLoad(src_regs, [l]), dtype(dst)), [l])

        return loop("l", dst_layout.local_size, same, tirx.ForKind.UNROLLED)
    src_layout = st.layouts[src.source]
    if not src_layout.is_whole:
        raise LoweringError(
            f"kernel '{st.kernel}': T.copy({R.fmt_region(src)}, {R.fmt_region(dst)}) moves part of "
            f"fragment '{src.source.name}', whose elements are spread over the threads "
            f"({st.layouts[src.source]}); a thread can only read its own registers. Copy through "
            f"shared memory, or read it in a T.Parallel loop")
    src_regs = st.local_buffer(src.source)
    inside = _inside(dst, dst_layout, st)

    def body(l):
        index = region_index(src, _tile_position(dst, dst_layout, st, l))
        value = tirx.BufferLoad(src_regs, [st.simplify(src_layout.local_of(*index))])
        stmt = tirx.BufferStore(regs, cast(value, dtype(dst)), [l])
        return stmt if inside is None else if_then(inside(l), stmt)

    return loop("l", dst_layout.local_size, body, tirx.ForKind.UNROLLED)


#: never moved as vectors: TVM's CUDA printer spells a vector of 4 bools "ushort4" (8 bytes for 4;
#: the H200 faulted on TileLang's block-sparse attention mask copy)
BOOL = "bool"


def fragment_vector_width(layout, frag_region, other, st: KernelState) -> int:
    """Registers a thread can move with one vector access: the innermost digit of the last axis
    when it is a register digit of stride 1 (consecutive registers = consecutive elements), capped
    at 16 bytes, and only where the other side's rows are contiguous and provably aligned."""
    from tilelang_core.layout import LOCAL

    if scope(other) not in GLOBAL + SHARED or len(layout.shape) == 0 or BOOL in (dtype(frag_region), dtype(other)):
        return 1
    digits = [d for d in layout.digits[-1] if d.extent > 1]
    if not digits or digits[-1].space != LOCAL or digits[-1].stride != 1:
        return 1
    widest = max(elem_bytes(frag_region), elem_bytes(other))
    vec = digits[-1].extent
    while vec > 1 and (vec * widest > 16 or not row_aligned(other, vec, st)):
        vec //= 2
    if scope(other) in SHARED:
        return 1  # swizzled shared offsets are rewritten later, per element
    return vec if vec > 1 and layout.local_size % vec == 0 else 1


def copy_vector_width(op: Copy, st: KernelState) -> int:
    """Elements per access for a shared<->global copy: 16 bytes when every row start is provably
    aligned, else 8 or 4 bytes, else 1."""
    scopes = {scope(op.src), scope(op.dst)}
    if not (scopes <= set(SHARED) | set(GLOBAL)) or dtype(op.src) != dtype(op.dst) or dtype(op.src) == BOOL:
        return 1
    nbytes = elem_bytes(op.src)
    for width_bytes in (16, 8, 4):
        vec = width_bytes // nbytes
        if vec <= 1:
            return 1
        if all(row_aligned(r, vec, st) for r in (op.src, op.dst)):
            return vec
    return 1


def converting_vector_width(op: Copy, st: KernelState) -> int:
    """Elements per access for a shared/global copy that changes the dtype: 4 or 2 (the widths
    backends convert in pairs, simt/transform/vector_casts.py), the wider side at most 16 bytes,
    where rows and starts are aligned on both sides and the source lies inside its tensor (the
    accesses are predicated on the destination only); 4 only where every thread gets a vector."""
    scopes = {scope(op.src), scope(op.dst)}
    if not (scopes <= set(SHARED) | set(GLOBAL)) or dtype(op.src) == dtype(op.dst) \
            or BOOL in (dtype(op.src), dtype(op.dst)) or not _region_inside(st, op.src):
        return 1
    widest = max(elem_bytes(op.src), elem_bytes(op.dst))
    fits = [vec for vec in (4, 2) if vec * widest <= 16 and all(row_aligned(r, vec, st) for r in (op.src, op.dst))]
    elements = 1
    for e in tile_extents(op.src):
        elements = elements * e
    elements = R.as_int(st.simplify(elements)) or 0
    # the widest that still gives every thread a vector (256 elements over 128 threads: 2 lanes)
    return next((vec for vec in fits if elements >= vec * st.num_threads), fits[-1] if fits else 1)


def _vector_grid(op: Copy, vec: int):
    """(tile extents, vectors per row, vectors) of a copy in ``vec``-element accesses along the
    last axis; None for a symbolic extent."""
    extents = [R.as_int(e) for e in tile_extents(op.src)]
    if any(e is None for e in extents):
        return None
    rows = 1
    for e in extents[:-1]:
        rows *= e
    return extents, extents[-1] // vec, rows * (extents[-1] // vec)


def copy_converting(op: Copy, st: KernelState, vec: int):
    """A converting copy in ``vec``-lane vectors dealt round-robin over the threads: one vector
    load, one vector cast (a backend's paired conversions) and one vector store each."""
    grid = _vector_grid(op, vec)
    if grid is None:
        return copy_elementwise(op, st)
    extents, per_row, total = grid
    threads = st.num_threads
    vi = tirx.Var("vi", "int32")

    def body(it):
        flat = st.simplify(it * threads + st.thread_var)
        tile_index = _unflatten(st, flat, extents[:-1], per_row, vec)
        src_index, dst_index = region_index(op.src, tile_index), region_index(op.dst, tile_index)
        lane = lambda index: index[:-1] + [index[-1] + vi]  # noqa: E731
        store = tirx.BufferStore(op.dst.source, cast(load(op.src, lane(src_index)), dtype(op.dst)),
                                 lane(dst_index))
        vector = tirx.For(vi, tirx.const(0, "int32"), tirx.const(vec, "int32"), tirx.ForKind.VECTORIZED, store)
        conds = [c for c in (None if total % threads == 0 else flat < total, in_bounds(st, op.dst, dst_index))
                 if c is not None]
        if not conds:
            return vector
        return if_then(conds[0] if len(conds) == 1 else tirx.And(conds[0], conds[1]), vector)

    return loop("v", (total + threads - 1) // threads, body, tirx.ForKind.UNROLLED)


def row_aligned(region, vec: int, st: KernelState) -> bool:
    dims = tile_dims(region)
    if not dims:
        return False
    if scope(region) in SHARED:
        from .transform.apply_layouts import shared_layout, vector_contiguous

        layout, _ = shared_layout(region.source, st.annotated, st.views)
        if not vector_contiguous(layout, vec, st.analyzer):
            return False
    last = dims[-1]
    shape = region.source.ty.shape
    if last != len(shape) - 1:
        return False  # the tile's inner axis is not contiguous in memory
    ana = st.analyzer
    return (ana.can_prove(tirx.floormod(region.region[last].extent, vec) == 0)
            and R.rows_in_vectors(region.source, vec, ana)
            and ana.can_prove(tirx.floormod(region.region[last].min, vec) == 0))


def copy_vectorized(op: Copy, st: KernelState, vec: int, use_async: bool):
    """Global<->shared in ``vec``-element accesses, dealt round-robin over the block's threads."""
    grid = _vector_grid(op, vec)
    if grid is None:
        return copy_elementwise(op, st)
    if scope(op.src) in GLOBAL and scope(op.dst) not in SHARED and not _region_inside(st, op.src):
        # global -> global: the store is predicated on the destination, so a ragged source would
        # be read past its end; the element-wise copy reads 0 there (TileLang's rule)
        return copy_elementwise(op, st)
    extents, per_row, total = grid
    threads = st.num_threads
    iters = (total + threads - 1) // threads

    def body(it):
        flat = st.simplify(it * threads + st.thread_var)
        tile_index = _unflatten(st, flat, extents[:-1], per_row, vec)
        return _vector_copy(op, st, vec, use_async, tile_index, None if total % threads == 0 else flat < total)

    return loop("v", iters, body, tirx.ForKind.UNROLLED)


def _vector_copy(op: Copy, st: KernelState, vec: int, use_async: bool, tile_index: list, guard):
    """One ``vec``-element access of a global<->shared copy at ``tile_index``, run where ``guard``
    (None: always) holds."""
    width = vec * elem_bytes(op.src)
    to_shared = scope(op.dst) in SHARED
    if to_shared:
        helper = f"tl_cp_async_{width}" if use_async else f"tl_copy_{width}"
    else:
        helper = f"tl_store_{width}"
    src_index = region_index(op.src, tile_index)
    dst_index = region_index(op.dst, tile_index)
    pred = in_bounds(st, op.src, src_index) if to_shared else in_bounds(st, op.dst, dst_index)
    if guard is not None:
        pred = guard if pred is None else tirx.And(guard, pred)
    call = I.call(helper, tirx.address_of(load(op.dst, dst_index)), tirx.address_of(load(op.src, src_index)),
                  pred if pred is not None else tirx.const(True, "bool"))
    # to shared, the call zero-fills out-of-bounds reads (it takes the predicate), but a thread
    # past the tile must not even zero-fill (its destination is outside the tile)
    return if_then(guard, call) if to_shared and guard is not None else call


def _region_inside(st: KernelState, region) -> bool:
    """Does every element of ``region`` provably lie inside its buffer?"""
    return all(st.analyzer.can_prove(r.min + r.extent <= shape)
               for r, shape in zip(region.region, region.source.ty.shape))


def _unflatten(st: KernelState, flat, outer_extents: list[int], per_row: int, vec: int) -> list:
    """Tile index of vector ``flat``: row-major over outer axes, then the vector along the last."""
    col = st.simplify(tirx.floormod(flat, per_row) * vec)
    rest = st.simplify(tirx.floordiv(flat, per_row))
    index = [col]
    for e in reversed(outer_extents):
        index.insert(0, st.simplify(tirx.floormod(rest, e)))
        rest = st.simplify(tirx.floordiv(rest, e))
    return index


def copy_elementwise(op: Copy, st: KernelState):
    """Any other copy: one element per thread per step, predicated on the destination. A source
    element past its tensor's end reads 0 (TileLang's rule, as the vectorized copies zero-fill):
    skipping it left a padded destination uninitialized."""
    return spread_over_threads(st, tile_extents(op.src), lambda index: _copy_element(op, st, index),
                               unroll_max=64)


def _copy_element(op: Copy, st: KernelState, index: list):
    """(the store of tile element ``index``, its conditions) for spread_over_threads."""
    src_index = region_index(op.src, index)
    dst_index = region_index(op.dst, index)
    value = cast(load(op.src, src_index), dtype(op.dst))
    inside = in_bounds(st, op.src, src_index)
    if inside is not None:
        value = tirx.if_then_else(inside, value, tirx.const(0, dtype(op.dst)))
    return tirx.BufferStore(op.dst.source, value, dst_index), [in_bounds(st, op.dst, dst_index)]


def copy_by_loop_layout(op: Copy, st: KernelState, layout):
    """A global/shared copy with a ``loop_layout`` (a Fragment over the tile): each thread copies
    the elements the layout gives it, in vectors where its registers run along contiguous rows.
    The author chose the threads so that each reads back what it copied itself (TileKernels'
    engram gate backward waits for its copies per thread and has no barrier): dealing the
    elements round-robin instead raced on the H100."""
    past = loop_layout_guard(layout, st, f"copy {R.fmt_region(op.src)} -> {R.fmt_region(op.dst)}")
    thread = st.thread_var
    # threads past the layout copy nothing, replicas copy once (replica 0)
    conds = [past] if past is not None else []
    if layout.replicas > 1:
        conds.append(layout.replica_of(thread) == 0)
    vec = _loop_layout_vector_width(op, st, layout)

    def body(it):
        index = [st.simplify(x) for x in layout.index_of(thread, it * vec)]
        if vec > 1:
            stmt, extra = _vector_copy(op, st, vec, bool(op.options.get("tl_async", False)), index, None), []
        else:
            stmt, extra = _copy_element(op, st, index)
        guard = [c for c in conds + extra if c is not None]
        for c in guard:
            stmt = if_then(c, stmt)
        return stmt

    steps = layout.local_size // vec
    return loop("l", steps, body, tirx.ForKind.UNROLLED if steps <= 64 else tirx.ForKind.SERIAL)


def _loop_layout_vector_width(op: Copy, st: KernelState, layout) -> int:
    """Elements per access of a copy by loop layout: the run of consecutive registers along the
    tile's last axis, where copy_vector_width allows it."""
    run = layout.register_run
    vec = copy_vector_width(op, st) if run > 1 else 1
    while vec > 1 and run % vec:
        vec //= 2
    return vec


def spread_over_threads(st: KernelState, extents, element, unroll_max: int = 0):
    """Visit every element of a tile with ``extents``, dealt round-robin over the block's threads
    (thread t takes flat elements t, t + threads, ...): the fallback of copies, fills and atomics
    that no layout covers.

    ``element(index) -> (stmt, conds)`` builds one element's work; it runs under ``flat < total``
    (when the threads do not divide the tile) and every condition in ``conds`` that is not None.
    The loop is unrolled when its trip count is a constant of at most ``unroll_max``.
    """
    total = 1
    for e in extents:
        total = total * e
    total = st.simplify(total)
    threads = st.num_threads
    const_total = R.as_int(total)
    iters = (const_total + threads - 1) // threads if const_total is not None else \
        st.simplify(tirx.floordiv(total + threads - 1, threads))

    def body(it):
        flat = it * threads + st.thread_var
        index, rest = [], flat
        for e in reversed(extents):
            index.insert(0, st.simplify(tirx.floormod(rest, e)))
            rest = tirx.floordiv(rest, e)
        stmt, conds = element(index)
        conds = [c for c in conds if c is not None]
        if const_total is None or const_total % threads:
            conds.insert(0, flat < total)
        if not conds:
            return stmt
        cond = conds[0]
        for c in conds[1:]:
            cond = tirx.And(cond, c)
        return if_then(cond, stmt)

    fits = const_total is not None and iters <= unroll_max
    return loop("e", iters, body, tirx.ForKind.UNROLLED if fits else tirx.ForKind.SERIAL)


# -- fill -----------------------------------------------------------------------------------------

def lower_fill(call, ctx):
    op: Fill = TileOp.from_stmt(call)
    st = state_of(ctx)
    if scope(op.dst) == FRAGMENT:
        # part of a fragment (TileLang's T.clear(C_local[:bM, :bK])): each thread sets its
        # registers that lie inside the part
        regs = st.local_buffer(op.dst.source)
        layout = st.layouts[op.dst.source]
        inside = _inside(op.dst, layout, st)

        def store(l):
            stmt = tirx.BufferStore(regs, op.value, [l])
            return stmt if inside is None else if_then(inside(l), stmt)

        return loop("l", layout.local_size, store, tirx.ForKind.UNROLLED)
    if scope(op.dst) in PER_THREAD:
        extents = tile_extents(op.dst) or [1]
        return _nest(extents, lambda idx: tirx.BufferStore(op.dst.source, op.value,
                                                           region_index(op.dst, idx)))
    return _fill_spread(op, st)


def _fill_spread(op: Fill, st: KernelState):
    def element(index):
        full = region_index(op.dst, index)
        return tirx.BufferStore(op.dst.source, op.value, full), [in_bounds(st, op.dst, full)]

    return spread_over_threads(st, tile_extents(op.dst), element)


def _nest(extents, body_fn, kind=tirx.ForKind.SERIAL):
    def build(k, idx):
        if k == len(extents):
            return body_fn(idx)
        return loop(f"i{k}", R.as_int(extents[k]) or extents[k], lambda v: build(k + 1, idx + [v]), kind)
    return build(0, [])

