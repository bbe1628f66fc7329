"""ApplyLayouts: fragments become per-thread register arrays, shared tiles become swizzled
slices of one pooled shared array, and the buffers the lowering created are allocated.

Runs after every tile op and T.Parallel loop is lowered: rules already address fragments through
their register buffers (KernelState.locals); what is left here is the allocation swap for them, and
for shared buffers the rewrite of every logical N-D access ``S[s, i, j]`` (loads, stores, and the
``address_of`` operands of the copy helpers and of a backend's matrix loads) to ``smem[base_S + s * rows * cols + swizzle(i, j)]``.
Pooling is ours (not TVM's MergeSharedMemoryAllocations, which cannot see through pointer
operands): one ``shared.dyn`` byte array, buffers whose lifetimes do not overlap sharing bytes
(shared_pool.py).
"""

from __future__ import annotations

import itertools

import tvm
import tvm_ffi
from tvm import tirx

from tilelang_core.layout import THREAD, Digit, Fragment, Layout, make_swizzled_layout
from tilelang_core.layout.fitted import fragment_of_index_map
from tilelang_core.layout.swizzle import HINT_KINDS
from tilelang_core.transform.buffer_views import drop_view_decls
from tilelang_core.transform.layout_inference import is_fragment

from tilelang_core.errors import LayoutError, LoweringError

from .shared_pool import pool_shared
from .state import KernelState
from .thread_indexed_fragments import refuse_thread_indexed_stores_to_whole, thread_indexed_elements

SHARED = ("shared", "shared.dyn")


def shared_layout(buffer, annotated: dict | None = None, views: dict | None = None) -> tuple[Layout, int]:
    """(layout of the trailing dims, elements per leading index) of a shared buffer: the user's
    T.annotate_layout if any, else the 16-byte XOR swizzle of its last two dims. A view
    (T.reshape, ``views``: view -> allocation) addresses its allocation's memory: its element k
    in row-major order is the allocation's element k, wherever the allocation's layout puts it."""
    if views and buffer in views:
        return _view_layout(buffer, views[buffer], annotated), _prod(buffer.ty.shape)
    if annotated and str(buffer.name) in annotated:
        layout = annotated[str(buffer.name)]
        tile = 1
        for extent in layout.shape:
            tile *= extent
        return layout, tile
    shape = [int(s) for s in buffer.ty.shape]
    bits = tvm.runtime.DataType(str(buffer.ty.dtype)).bits
    if len(shape) >= 2:
        rows, cols = shape[-2], shape[-1]
        return make_swizzled_layout(rows, cols, bits), rows * cols
    return Layout.row_major(shape), shape[0] if shape else 1


def _prod(shape) -> int:
    out = 1
    for s in shape:
        out *= int(s)
    return out


def _view_layout(view, source, annotated) -> Layout:
    """The offsets (in the view's elements) of a view of ``source``: element k of the view in
    row-major order is the k-th run of its bits in ``source``'s row-major order, wherever
    ``source``'s layout puts that run. A narrower dtype splits an element of the source (offset x
    ratio + part); a wider one needs ``ratio`` source elements side by side in memory, checked."""
    layout, tile = shared_layout(source, annotated)
    source_shape = [int(s) for s in source.ty.shape]
    view_shape = [int(s) for s in view.ty.shape]
    view_bits, source_bits = (tvm.runtime.DataType(str(b.ty.dtype)).bits for b in (view, source))
    if view_bits % 8 or source_bits % 8:
        raise LoweringError(f"T.view of shared '{source.name}' ({source.ty.dtype}) as {view.ty.dtype}: "
                            f"views of shared memory need whole-byte dtypes")

    def at(flat):  # the source element at row-major position ``flat``
        position = []
        for s in reversed(source_shape):
            position.insert(0, flat % s)
            flat = flat // s
        return _flat_offset(source, layout, tile, position)

    narrow, wide = max(1, source_bits // view_bits), max(1, view_bits // source_bits)
    if wide > 1:
        _check_side_by_side(view, source, at, _prod(source_shape), wide)

    def offset(*idx):
        flat = 0
        for i, s in zip(idx, view_shape):
            flat = flat * s + i
        if narrow > 1:
            return at(flat // narrow) * narrow + flat % narrow
        return at(flat * wide) // wide

    return Layout(tuple(view_shape), offset, "annotated", align_bytes=layout.align_bytes)


def _check_side_by_side(view, source, at, size: int, wide: int) -> None:
    for k in range(0, size, wide):
        base = at(k)
        if base % wide or any(at(k + j) != base + j for j in range(1, wide)):
            raise LoweringError(
                f"T.view of shared '{source.name}' ({source.ty.dtype}) as {view.ty.dtype}: elements "
                f"{k}..{k + wide - 1} of '{source.name}' are not side by side in its layout, so one "
                f"{view.ty.dtype} cannot cover them; lay '{source.name}' out row-major, or view it "
                f"with a dtype no wider than its own")


def _flat_offset(buffer, layout: Layout, tile: int, indices):
    """Leading indices (pipeline stages, batch dims) select a tile; the layout maps the rest."""
    rank = len(layout.shape)
    shape = list(buffer.ty.shape)
    lead = tirx.const(0, "int32")
    for s, i in zip(shape[:-rank], indices[:-rank]):
        lead = lead * s + i
    return lead * tile + layout.offset(*indices[-rank:])


def annotated_layouts(body, kernel: str, kind: str):
    """Strip ``tl.layout_map`` attributes (T.annotate_layout); return the body and
    ``{shared buffer name: Layout}``. Fragment annotations were read before layout inference
    (:func:`annotated_fragments`); ``kind`` names the backend in messages."""
    found = {}

    def visit(node):
        if isinstance(node, tirx.SeqStmt):
            return tirx.SeqStmt([visit(s) for s in node.seq])
        if isinstance(node, tirx.AttrStmt):
            if node.attr_key == "tl.layout_map":
                for buf, value in node.node.items():
                    if not is_fragment(buf):
                        index_map, tag = swizzle_tag(value)
                        if tag in HINT_KINDS and str(buf.name) in found:
                            continue  # a make_swizzled_layout request yields to a backend's layout
                        found[str(buf.name)] = _index_map_layout(buf, index_map)
                return visit(node.body)
            return tirx.AttrStmt(node.node, node.attr_key, node.value, visit(node.body))
        return node

    return visit(body), found


def annotated_fragments(body, kernel: str, num_threads: int) -> dict:
    """``{fragment: Fragment}`` from T.annotate_layout (a T.Fragment, or a function of the indices
    returning ``(thread, register)``), for layout inference to start from. A layout over fewer
    threads than the block is held by the others as replicas (threads ``n..`` repeat ``0..n-1``)."""
    found = {}

    def on_attr(attr):
        if attr.attr_key != "tl.layout_map":
            return
        for buf, value in attr.node.items():
            if not is_fragment(buf):
                continue
            index_map, replicas = (value, 1) if isinstance(value, tirx.IndexMap) else (value[0], int(value[1]))
            shape = [int(s) for s in buf.ty.shape]
            try:
                layout = fragment_of_index_map(index_map, shape, replicas, str(buf.name))
            except LayoutError as err:
                raise LayoutError(f"kernel '{kernel}': T.annotate_layout on fragment '{buf.name}': {err}") from None
            if layout.num_threads > num_threads or num_threads % layout.num_threads:
                raise LayoutError(f"kernel '{kernel}': T.annotate_layout lays fragment '{buf.name}' over "
                                  f"{layout.num_threads} threads; the block has {num_threads} (a layout's threads "
                                  f"must divide the block's)")
            if layout.num_threads < num_threads:
                extra = Digit(num_threads // layout.num_threads, THREAD, layout.num_threads)
                layout = Fragment(layout.shape, layout.digits, (extra,) + layout.replica_digits, name=layout.name)
            found[buf] = layout

    tvm_ffi.structural_walk(body, [(tirx.AttrStmt, on_attr)])
    return found


def settle_view_annotations(views: dict, annotated: dict, kernel: str) -> None:
    """A T.annotate_layout on a view of shared memory (TileLang's ``A_i8 = T.view(A_stage, ...,
    T.int8)`` laid out ``[s, i, j]``): a view's layout follows its tile's, so a row-major one makes
    the tile row-major; any other is refused (the tile's layout is what to annotate)."""
    for view, source in views.items():
        name = str(view.name)
        if name not in annotated or str(source.ty.storage_scope) not in SHARED:
            continue
        layout = annotated.pop(name)
        shape = [int(x) for x in view.ty.shape]
        rank = len(layout.shape)
        row_major = Layout.row_major(shape[-rank:])
        if tuple(layout.shape) != tuple(shape[-rank:]) or any(
                layout.offset(*idx) != row_major.offset(*idx)
                for idx in itertools.product(*(range(x) for x in layout.shape))):
            raise LoweringError(f"kernel '{kernel}': T.annotate_layout on '{name}', a view of shared "
                                f"'{source.name}': a view's layout follows its tile's; annotate "
                                f"'{source.name}' instead")
        existing = annotated.get(str(source.name))
        if existing is not None and existing.kind == "annotated":
            continue  # the tile's own annotation decides; the view follows it
        annotated[str(source.name)] = Layout.row_major([int(x) for x in source.ty.shape][-2:]) \
            if len(source.ty.shape) >= 2 else Layout.row_major([int(x) for x in source.ty.shape])


def vector_contiguous(layout: Layout, vec: int, analyzer) -> bool:
    """Do ``vec`` consecutive elements of a row (starting at a multiple of ``vec``) land on
    ``vec`` consecutive, ``vec``-aligned offsets? What a vector access or ldmatrix's 16-byte row
    needs; a layout that breaks it (a transposed tile) must be accessed element by element, or the
    wide access reads other elements. True by construction for our swizzles (they permute whole
    16-byte chunks); for annotated layouts proved symbolically, else checked element by element."""
    if layout.kind != "annotated":
        return True
    if layout.shape[-1] % vec:
        return False
    return _proved_contiguous(layout, vec, analyzer) or _enumerated_contiguous(layout, vec)


def _proved_contiguous(layout: Layout, vec: int, analyzer) -> bool:
    idx = [tirx.Var(f"i{d}", "int32") for d in range(len(layout.shape))]
    for v, extent in zip(idx, layout.shape[:-1]):
        analyzer.bind(v, tvm.ir.Range.from_min_extent(0, extent))
    chunk = tirx.Var("c", "int32")
    analyzer.bind(chunk, tvm.ir.Range.from_min_extent(0, max(1, layout.shape[-1] // vec)))
    base = layout.offset(*idx[:-1], chunk * vec)
    if not analyzer.can_prove(tirx.floormod(base, vec) == 0):
        return False
    return all(analyzer.can_prove(layout.offset(*idx[:-1], chunk * vec + k) == base + k)
               for k in range(1, vec))


def _enumerated_contiguous(layout: Layout, vec: int) -> bool:
    """vector_contiguous on every run of the tile, by value (a layout the analyzer cannot see
    through: an XOR it does not simplify)."""
    analyzer = tvm.sym.Analyzer()

    def at(*index):
        off = layout.offset(*index)
        return off if isinstance(off, int) else int(analyzer.simplify(off))

    for lead in itertools.product(*(range(e) for e in layout.shape[:-1])):
        for c0 in range(0, layout.shape[-1], vec):
            base = at(*lead, c0)
            if base % vec or any(at(*lead, c0 + k) != base + k for k in range(1, vec)):
                return False
    return True


def swizzle_tag(value) -> tuple:
    """(index map, kind) of a shared buffer's ``tl.layout_map`` entry: the kind of a swizzle
    T.annotate_layout recorded (layout/swizzle.py SWIZZLE_TAGS), else None."""
    if isinstance(value, tirx.IndexMap):
        return value, None
    return value[0], str(value[1].value)


def _index_map_layout(buf, index_map) -> Layout:
    rank = len(index_map.initial_indices)
    shape = tuple(int(s) for s in buf.ty.shape[-rank:])
    if len(index_map.final_indices) != 1:
        raise LoweringError(f"T.annotate_layout for shared buffer '{buf.name}' must map indices to "
                            f"one offset, got {len(index_map.final_indices)} outputs")
    return Layout(shape, lambda *idx: index_map.map_indices(list(idx))[0], "annotated")


def apply_layouts(body, st: KernelState, annotated: dict | None = None):
    allocs = []
    tvm_ffi.structural_walk(body, [(tirx.AllocBuffer, lambda a: allocs.append(a.buffer))])
    extra_shared = [b for b in st.extra_allocs if str(b.ty.storage_scope) in SHARED]
    st.extra_allocs = [b for b in st.extra_allocs if str(b.ty.storage_scope) not in SHARED]
    shared_bufs = [b for b in allocs if str(b.ty.storage_scope) in SHARED] + extra_shared
    # the backends' own static words (mbarriers, a tile scheduler's slots: scope "shared", named
    # tl_*) keep fixed arrays of their own, outside the pool and its reuse
    static = [b for b in shared_bufs if str(b.ty.storage_scope) == "shared" and str(b.name).startswith("tl_")
              or any(b.same_as(m) for m in st.barriers)]
    shared, body, pool, decls = pool_shared([b for b in shared_bufs if b not in static], body,
                                             lambda b: shared_layout(b, annotated, st.views), st.views,
                                             st.scratch)
    static_placed, static_pools = _static_arrays(static)
    shared.update(static_placed)

    def remap(buffer, indices):
        pool, base, layout, tile = shared[buffer]
        indices = list(indices)
        last = indices[-1]
        if isinstance(last, tirx.Ramp) and isinstance(last.stride, tirx.IntImm) and int(last.stride) == 1:
            # an explicit vector access (T.sts128, T.ptx_cp_async): its first element through the
            # layout, the rest beside it, which the layout must keep (lower_intrinsics proved the
            # start aligned to the vector)
            lanes = int(last.lanes)
            if not vector_contiguous(layout, lanes, st.analyzer):
                raise LoweringError(f"kernel '{st.kernel}': a {lanes}-element vector access of shared "
                                    f"'{buffer.name}', whose layout does not keep {lanes} elements of a row "
                                    f"side by side; access it element by element")
            first = st.simplify(base + _flat_offset(buffer, layout, tile, indices[:-1] + [last.base]))
            return pool, [tirx.Ramp(first, 1, lanes)]
        return pool, [st.simplify(base + _flat_offset(buffer, layout, tile, indices))]

    def on_load(load):
        if load.source in shared:
            pool, idx = remap(load.source, load.indices)
            return tirx.BufferLoad(pool, idx)
        return load

    def on_store(store):
        if store.buffer in shared:
            pool, idx = remap(store.buffer, store.indices)
            return tirx.BufferStore(pool, store.value, idx)
        return store

    def on_alloc(alloc):
        buf = alloc.buffer
        if is_fragment(buf):
            return tirx.AllocBuffer(st.local_buffer(buf))
        if buf in shared:
            return tirx.Evaluate(tirx.const(0, "int32"))  # pooled: allocated once below
        return alloc

    refuse_thread_indexed_stores_to_whole(body, st)
    body = _replicated_elements(body, st)
    body, why_not = thread_indexed_elements(body, st)
    _check_fragments_lowered(body, st, why_not)
    body = tvm_ffi.structural_map(body, [(tvm.ir.TensorLoad, on_load)])
    body = tvm_ffi.structural_map(body, [(tirx.BufferStore, on_store), (tirx.AllocBuffer, on_alloc)])
    return _insert_allocs(drop_view_decls(body, st.views),
                          ([pool] if pool is not None else []) + static_pools + st.extra_allocs, decls)


def _replicated_elements(body, st: KernelState):
    """Element accesses outside T.Parallel to a fragment that every thread holds whole (a (1,)
    row statistic, ``out_frag[0] = -1.0`` before a reduction with clear=False): each thread reads
    or writes its own copy, as in TileLang. Other fragments are left for the check below."""
    def whole(buffer):
        layout = st.layouts.get(buffer) if is_fragment(buffer) else None
        return layout if layout is not None and layout.is_whole else None

    def on_load(load):
        layout = whole(load.source)
        if layout is None:
            return load
        return tirx.BufferLoad(st.local_buffer(load.source), [st.simplify(layout.local_of(*load.indices))])

    def on_store(store):
        layout = whole(store.buffer)
        if layout is None:
            return store
        return tirx.BufferStore(st.local_buffer(store.buffer), store.value,
                                [st.simplify(layout.local_of(*store.indices))])

    return tvm_ffi.structural_map(body, [(tvm.ir.TensorLoad, on_load), (tirx.BufferStore, on_store)])


def _check_fragments_lowered(body, st: KernelState, why_not: dict) -> None:
    """Every access to a fragment must have gone through a layout (a tile op, a T.Parallel loop,
    or the thread's own element: thread_indexed_fragments.py, whose reasons ``why_not`` names)."""
    left = []

    def on_load(load):
        if is_fragment(load.source):
            left.append(load.source)

    def on_store(store):
        if is_fragment(store.buffer):
            left.append(store.buffer)

    tvm_ffi.structural_walk(body, [(tvm.ir.TensorLoad, on_load), (tirx.BufferStore, on_store)])
    if left:
        names = ", ".join(sorted({str(b.name) for b in left}))
        raise LoweringError(
            f"kernel '{st.kernel}': fragment(s) {names} are read or written outside T.Parallel "
            f"loops and tile ops; an element of a fragment lives in one thread's registers, so "
            f"touch fragments inside `for i, j in T.Parallel(...)` (or use T.alloc_local / "
            f"T.alloc_var for per-thread scalars); outside them, a thread may name only elements it "
            f"holds, by its thread index" + "".join(f"; {name}: {why_not[name]}" for name in sorted(why_not)))


def _static_arrays(buffers):
    """One static ``__shared__`` array per dtype for ``buffers`` (16-byte aligned slices), as
    ``({buffer: (array, base, layout, tile)}, arrays)``."""
    by_dtype: dict = {}
    for b in buffers:
        by_dtype.setdefault(str(b.ty.dtype), []).append(b)
    mapping, arrays = {}, []
    for dt, bufs in by_dtype.items():
        elem = max(1, tvm.runtime.DataType(dt).bits // 8)
        chunk = max(1, 16 // elem)
        array = None
        offset, placed = 0, []
        for b in bufs:
            placed.append((b, offset, *shared_layout(b)))
            offset = (offset + _prod(b.ty.shape) + chunk - 1) // chunk * chunk
        array = tirx.decl_buffer((offset,), dt, name=f"smem_{dt}", scope="shared")
        arrays.append(array)
        for b, base, layout, tile in placed:
            mapping[b] = (array, base, layout, tile)
    return mapping, arrays


def _insert_allocs(body, buffers, decls=()):
    """Allocate ``buffers`` next to the kernel's own allocations (inside the thread launch), then
    declare ``decls`` (the typed views of the shared pool)."""
    if not buffers and not decls:
        return body
    new = [tirx.AllocBuffer(b) for b in buffers] + list(decls)

    def visit(node):
        if isinstance(node, tirx.AttrStmt) and node.attr_key == "thread_extent" \
                and not isinstance(node.body, tirx.AttrStmt):
            inner = node.body
            seq = list(inner.seq) if isinstance(inner, tirx.SeqStmt) else [inner]
            return tirx.AttrStmt(node.node, node.attr_key, node.value, tirx.SeqStmt(new + seq))
        if isinstance(node, tirx.AttrStmt):
            return tirx.AttrStmt(node.node, node.attr_key, node.value, visit(node.body))
        if isinstance(node, tirx.SeqStmt):  # host code (tensor maps) before the launch
            return tirx.SeqStmt([visit(s) for s in node.seq])
        return node

    return visit(body)
