"""SharedPool: every shared buffer of a kernel gets bytes of one dynamic shared array, and a buffer
whose lifetime starts after another's ended reuses that one's bytes (TileLang fits its MLA decoding
and GQA backward kernels in an H200's 227 KB so: the fp32 dK/dV epilogue tiles take the bytes of
the fp16 pipeline stages).

Lifetimes are counted in the kernel's top-level statements (inside the thread launch): a buffer
lives from the first statement that names it to the last. A loop, a pipeline region or a branch is
one statement, so a buffer used inside a loop lives for the whole loop, and the buffers of a
warp-specialized kernel's producer and consumer branches (which run at the same time) all live
together. A buffer never named is never live and needs no bytes of its own (TileLang's mxfp4
GEMM example allocates a 64 KB bias tile it uses only with a bias: counted, its 240 KB exceeded
the 227 KB an H200 block may have); where no buffer is ever named there is no array at all.
Where a buffer takes bytes another one used before, a block barrier goes before its first
statement: every thread is done with the old contents before any writes the new. (The old
contents were read by threads or by wgmma, which the kernel waited for at the end of its loop;
TMA only writes inside a warp-specialized branch, where nothing is reused.)

The array is ``smem`` (uint8, ``shared.dyn``; CUDA and HIP have one dynamic shared array per
kernel) and each dtype reads it through a typed view (a DeclBuffer over its data). Placement is
first-fit, largest buffer first, every base aligned to 16 bytes or to what its layout asks (1024
for a 128-byte swizzle period). The reductions' cross-warp workspaces are used as written, barrier,
read, barrier, so they share bytes with one another even inside one loop (two per softmax step).

Example::

    placed, stmts, pool = pool_shared(shared_buffers, body, annotated, views, layout_of)
    placed[A_shared]      # (typed view of smem, element base, layout, tile)
"""

from __future__ import annotations

from dataclasses import dataclass

import tvm
import tvm_ffi
from tvm import tirx

from .. import intrinsics as I


@dataclass
class _Slot:
    buffer: object
    size: int  # bytes
    align: int  # bytes
    first: int  # top-level statement of its first and last use
    last: int
    scratch: bool = False  # KernelState.scratch: never live at the same time as another one
    offset: int = -1

    @property
    def never(self) -> bool:
        """No statement names it (lifetimes' NEVER)."""
        return (self.first, self.last) == NEVER

    def meets(self, other: "_Slot") -> bool:
        """May the two be live at the same time?"""
        if self.never or other.never:
            return False
        if self.scratch and other.scratch:
            return False
        return not (other.last < self.first or self.last < other.first)


def launch_body(body):
    """The statements inside the kernel's thread launch (what lifetimes are counted in)."""
    node = body
    while isinstance(node, tirx.AttrStmt) and node.attr_key == "thread_extent":
        node = node.body
    return node


def _units(body) -> list:
    inner = launch_body(body)
    return list(inner.seq) if isinstance(inner, tirx.SeqStmt) else [inner]


#: the lifetime of a buffer no statement names: it meets no other (see _Slot.meets)
NEVER = (-1, -1)


def lifetimes(body, buffers, views: dict) -> dict:
    """``{buffer: (first, last)}`` top-level statements that name it (or a view of it); NEVER for
    a buffer no statement names."""
    wanted = set(buffers)
    spans: dict = {}
    units = _units(body)
    for k, unit in enumerate(units):
        if isinstance(unit, (tirx.AllocBuffer, tirx.DeclBuffer)):
            continue  # declaring a buffer is not using it
        named = set()

        def on_var(v, named=named):
            if tirx.is_buffer_var(v):
                root = views.get(v, v)
                if root in wanted:
                    named.add(root)

        tvm_ffi.structural_walk(unit, [(tvm.ir.Var, on_var)])
        for b in named:
            first, _ = spans.get(b, (k, k))
            spans[b] = (first, k)
    return {b: spans.get(b, NEVER) for b in buffers}


def _bytes(buffer) -> int:
    n = max(1, tvm.runtime.DataType(str(buffer.ty.dtype)).bits // 8)
    for s in buffer.ty.shape:
        n *= int(s)
    return n


def _place(slots: list[_Slot]) -> int:
    """First-fit, largest first, among the slots whose lifetimes overlap; returns the pool size."""
    placed: list[_Slot] = []
    for slot in sorted(slots, key=lambda s: (-s.size, s.first)):
        busy = sorted((p.offset, p.offset + p.size) for p in placed if p.meets(slot))
        offset = 0
        for lo, hi in busy:
            start = (offset + slot.align - 1) // slot.align * slot.align
            if start + slot.size <= lo:
                break
            offset = max(offset, hi)
        slot.offset = (offset + slot.align - 1) // slot.align * slot.align
        placed.append(slot)
    end = max((s.offset + s.size for s in slots if not s.never), default=0)
    return (end + 15) // 16 * 16


def _reuse_barriers(slots: list[_Slot]) -> set[int]:
    """Top-level statements before which a barrier must go: a slot starts there on bytes that a
    slot which ended earlier used."""
    before = set()
    for s in slots:
        for p in slots:
            if p is not s and not p.never and p.last < s.first and p.offset < s.offset + s.size and \
                    s.offset < p.offset + p.size:
                before.add(s.first)
    return before


def pool_shared(buffers, body, layout_of, views: dict, scratch=frozenset()):
    """Place ``buffers`` (shared, constant shapes) in one byte pool.

    ``layout_of(buffer) -> (Layout, tile)``; ``scratch``: workspaces that may share bytes with
    one another whatever their lifetimes (KernelState.scratch). Returns ``(placed, body, pool, decls)``: ``placed``
    maps each buffer to ``(typed view, element base, layout, tile)``; ``body`` has the reuse
    barriers; ``pool`` is the byte array to allocate and ``decls`` its typed views to declare."""
    if not buffers:
        return {}, body, None, []
    spans = lifetimes(body, buffers, views)
    slots, layouts = [], {}
    for b in buffers:
        layout, tile = layout_of(b)
        layouts[b] = (layout, tile)
        first, last = spans[b]
        slots.append(_Slot(b, _bytes(b), max(16, layout.align_bytes), first, last, b in scratch))
    size = _place(slots)
    pool = tirx.decl_buffer((size,), "uint8", name="smem", scope="shared.dyn")
    # T.reshape / T.view of a placed tile: its bytes, seen through the view's dtype and layout
    at = {s.buffer: s.offset for s in slots}
    at.update({v: at[r] for v, r in views.items() if r in at})
    typed: dict = {}
    placed = {}
    for b, offset in at.items():
        dt = str(b.ty.dtype)
        elem = max(1, tvm.runtime.DataType(dt).bits // 8)
        if dt not in typed:
            typed[dt] = tirx.decl_buffer((size // elem,), dt, name=f"smem_{dt}", scope="shared.dyn")
        placed[b] = (typed[dt], offset // elem, *(layouts[b] if b in layouts else layout_of(b)))
    if all(s.never for s in slots):
        # nothing to place: no array at all, since CUDA's printer refuses a 0-byte dynamic one
        # (an sf_only TileKernels cast allocates its output tile and never writes it)
        return placed, body, None, []
    decls = [tirx.DeclBuffer(view, data=pool.data) for view in typed.values()]
    return placed, _with_barriers(body, _reuse_barriers(slots)), pool, decls


def _with_barriers(body, before: set[int]):
    if not before:
        return body

    def rebuild(node):
        if isinstance(node, tirx.AttrStmt) and node.attr_key == "thread_extent":
            return tirx.AttrStmt(node.node, node.attr_key, node.value, rebuild(node.body))
        units = list(node.seq) if isinstance(node, tirx.SeqStmt) else [node]
        out = []
        for k, unit in enumerate(units):
            if k in before and k > 0 and not _is_barrier(out[-1] if out else None):
                out.append(I.syncthreads())
            out.append(unit)
        return tirx.SeqStmt(out) if len(out) > 1 else out[0]

    return rebuild(body)


def _is_barrier(stmt) -> bool:
    return isinstance(stmt, tirx.Evaluate) and getattr(getattr(stmt.value, "op", None), "name", "") \
        == "tirx.tvm_storage_sync"
