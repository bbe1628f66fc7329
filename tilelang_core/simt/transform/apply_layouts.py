"""ApplyLayouts: fragments become per-thread register arrays, shared tiles become swizzled
slices of one pooled shared array, and the buffers the lowering created are allocated.

Runs after every tile op and T.Parallel loop is lowered: rules already address fragments through
their register buffers (KernelState.locals); what is left here is the allocation swap for them, and
for shared buffers the rewrite of every logical N-D access ``S[s, i, j]`` (loads, stores, and the
``address_of`` operands of the copy helpers and of a backend's matrix loads) to ``smem[base_S + s * rows * cols + swizzle(i, j)]``.
Pooling is ours (not TVM's MergeSharedMemoryAllocations, which cannot see through pointer
operands): one ``shared.dyn`` array for the dtype with the most bytes, 16-byte aligned slices, and
a static ``__shared__`` array per other dtype (reduction workspaces). No reuse across lifetimes yet.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from tilelang_core.layout import Layout, make_swizzled_layout
from tilelang_core.transform.buffer_views import drop_view_decls
from tilelang_core.transform.layout_inference import is_fragment

from tilelang_core.errors import LoweringError

from .state import KernelState

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
    layout, tile = shared_layout(source, annotated)
    source_shape = [int(s) for s in source.ty.shape]
    view_shape = [int(s) for s in view.ty.shape]

    def offset(*idx):
        flat = 0
        for i, s in zip(idx, view_shape):
            flat = flat * s + i
        position = []
        for s in reversed(source_shape):
            position.insert(0, flat % s)
            flat = flat // s
        return _flat_offset(source, layout, tile, position)

    return Layout(tuple(view_shape), offset, "annotated", align_bytes=layout.align_bytes)


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
    ``{shared buffer name: Layout}``. Fragment annotations are refused: the kit derives register
    layouts from the instructions that use them (``kind`` names the backend in messages)."""
    found = {}

    def visit(node):
        if isinstance(node, tirx.SeqStmt):
            return tirx.SeqStmt([visit(s) for s in node.seq])
        if isinstance(node, tirx.AttrStmt):
            if node.attr_key == "tl.layout_map":
                for buf, index_map in node.node.items():
                    if is_fragment(buf):
                        raise LoweringError(
                            f"kernel '{kernel}': T.annotate_layout on fragment '{buf.name}' is not "
                            f"supported by the {kind} backend yet (fragment layouts follow the gemm "
                            f"and T.Parallel uses); annotate shared buffers only")
                    found[str(buf.name)] = _index_map_layout(buf, index_map)
                return visit(node.body)
            return tirx.AttrStmt(node.node, node.attr_key, node.value, visit(node.body))
        return node

    return visit(body), found


def vector_contiguous(layout: Layout, vec: int, analyzer) -> bool:
    """Do ``vec`` consecutive elements of a row (starting at a multiple of ``vec``) land on
    ``vec`` consecutive, ``vec``-aligned offsets? True by construction for our swizzles (they
    permute whole 16-byte chunks); proved symbolically for annotated layouts, else assumed not."""
    if layout.kind != "annotated":
        return True
    import tvm

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
    shared, pools = _pool_shared(shared_bufs, annotated or {})
    for view, source in st.views.items():  # T.reshape of a shared tile: its memory, re-indexed
        if source in shared:
            pool, base, _, _ = shared[source]
            shared[view] = (pool, base, *shared_layout(view, annotated, st.views))

    def remap(buffer, indices):
        pool, base, layout, tile = shared[buffer]
        return pool, [st.simplify(base + _flat_offset(buffer, layout, tile, list(indices)))]

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

    body = _replicated_elements(body, st)
    _check_fragments_lowered(body, st)
    body = tvm_ffi.structural_map(body, [(tvm.ir.TensorLoad, on_load)])
    body = tvm_ffi.structural_map(body, [(tirx.BufferStore, on_store), (tirx.AllocBuffer, on_alloc)])
    return _insert_allocs(drop_view_decls(body, st.views), pools + st.extra_allocs)


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


def _check_fragments_lowered(body, st: KernelState) -> None:
    """Every access to a fragment must have gone through a layout (a tile op or a T.Parallel
    loop); one outside both has no thread to run on."""
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
            f"T.alloc_var for per-thread scalars)")


def _pool_shared(buffers, annotated: dict):
    """One dynamic shared pool for the dtype with the most bytes (CUDA and HIP have one dynamic
    shared array per kernel; TVM's merging pass does not see through our pointer operands), a static
    shared array per other dtype. Returns ({buffer: (pool, base, layout, tile)}, pools)."""
    by_dtype: dict = {}
    for b in buffers:
        by_dtype.setdefault(str(b.ty.dtype), []).append(b)

    def nbytes(bufs):
        total = 0
        for b in bufs:
            n = tvm.runtime.DataType(str(b.ty.dtype)).bits // 8
            for s in b.ty.shape:
                n *= int(s)
            total += n
        return total

    order = sorted(by_dtype, key=lambda d: -nbytes(by_dtype[d]))
    mapping, pools = {}, []
    for rank, dt in enumerate(order):
        elem = max(1, tvm.runtime.DataType(dt).bits // 8)
        offset, placed = 0, []
        for b in by_dtype[dt]:
            size = 1
            for s in b.ty.shape:
                size *= int(s)
            layout, tile = shared_layout(b, annotated)
            # 16-byte bases for vector and ldmatrix accesses; more where the layout asks (a
            # 128-byte swizzle period for TMA and wgmma: 1024)
            align = max(1, max(16, layout.align_bytes) // elem)
            offset = (offset + align - 1) // align * align
            placed.append((b, offset, layout, tile))
            offset += size
        chunk = max(1, 16 // elem)
        offset = (offset + chunk - 1) // chunk * chunk
        scope = "shared.dyn" if rank == 0 else "shared"
        pool = tirx.decl_buffer((offset,), dt, name="smem" if rank == 0 else f"smem_{dt}", scope=scope)
        pools.append(pool)
        for b, base, layout, tile in placed:
            mapping[b] = (pool, base, layout, tile)
    return mapping, pools
def _insert_allocs(body, buffers):
    """Allocate ``buffers`` next to the kernel's own allocations (inside the thread launch)."""
    if not buffers:
        return body
    new = [tirx.AllocBuffer(b) for b in buffers]

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
