"""Which shared-memory accesses of a kernel can race with one another, element by element.

insert_barriers.py asks this of two statements of one list: does an access of the later one
touch, from another thread, an element an earlier one touched, with a write among the two? At
buffer granularity every pair of accesses to one buffer would race. Three rules, TileLang's
(its ThreadSync pass), make it finer:

- **Atomics don't race with atomics.** ``T.atomic_add(s_hist[b], 1)`` in every thread, then
  another, needs no barrier between them: the hardware serializes them (and a barrier would
  change nothing a program can rely on). An atomic against a plain access still races.
- **Async copies' writes don't race with one another** (``T.ptx_cp_async``, ir/async_writes.py):
  what reads them still waits for them.
- **Disjoint boxes don't race.** Each access covers a box of the buffer's logical indices (an
  element for a load or store, the region for a tile op). Two boxes are disjoint when, in some
  dimension, both sides' bounds are the same in every thread (no thread index, nothing loaded,
  nothing bound inside the statements being compared: enclosing loop variables, block indices
  and kernel parameters qualify) and provably do not overlap: ``s[r, i]`` against
  ``s[r ^ 1, j]`` (TileLang's top-k selector double-buffers this way) or ``s[0:64]`` against
  ``s[64:128]``. Enclosing loop variables are the same in every thread wherever such a proof is
  asked: a loop whose body holds a pair that races (atomics and async writes aside) ends each
  iteration with a barrier, or starts or ends it with the author's, so no thread runs ahead.

A view (``T.reshape``, ``T.view``) races with the buffer it views wherever either is written (the
indices of two shapes are not compared). Nothing else is proved: a box that depends on the thread
(``s[tx]`` written, then read by the same thread) still counts as touching every element
(TileLang proves that case with a solver; here it costs a barrier, never a race).
"""

from __future__ import annotations

from dataclasses import dataclass

import tvm
import tvm_ffi
from tvm import tirx

from tilelang_core.ir import TileOp, is_tile_op
from tilelang_core.ir.async_writes import ASYNC_WRITE
from tilelang_core.ir.atomic_calls import LOAD_OP, RMW_OP

SHARED = ("shared", "shared.dyn")


@dataclass(frozen=True)
class Access:
    """One access of a shared buffer. ``box``: per dimension ``(min, extent)``, or None where the
    bound is not the same in every thread (or the whole access is unknown: ``box is None``)."""

    buffer: object
    box: tuple | None
    atomic: bool = False
    async_write: bool = False
    #: the buffer whose memory this is: ``buffer`` itself, or what a view of it (``T.reshape``,
    #: ``T.view``: a DeclBuffer on the same data) is a view of
    root: object = None


def is_shared(buffer) -> bool:
    return tirx.is_buffer_var(buffer) and str(buffer.ty.storage_scope) in SHARED


def is_global(buffer) -> bool:
    return tirx.is_buffer_var(buffer) and str(buffer.ty.storage_scope) == "global"


def varying_vars(body, thread_vars: set) -> set:
    """The names whose value may differ between threads: ``thread_vars`` and every name bound
    (transitively) from one of them or from anything loaded."""
    varying, binds = set(thread_vars), []
    tvm_ffi.structural_walk(body, [(tirx.Bind, binds.append)])
    grew = True
    while grew:
        grew = False
        for bind in binds:
            if bind.var not in varying and not _uniform_expr(bind.value, varying, frozenset()):
                varying.add(bind.var)
                grew = True
    return varying


def view_roots(body) -> dict:
    """``{view: the buffer it views}`` for every DeclBuffer of ``body`` on another buffer's data,
    followed to the allocated buffer."""
    parent = {}

    def on_decl(decl):
        data = decl.data  # `src.data`: tirx.buffer_data(src)
        if isinstance(data, tvm.ir.Call) and data.args and tirx.is_buffer_var(data.args[0]):
            data = data.args[0]
        if tirx.is_buffer_var(data) and not data.same_as(decl.buffer):
            parent[decl.buffer] = data

    tvm_ffi.structural_walk(body, [(tirx.DeclBuffer, on_decl)])
    roots = {}
    for view in parent:
        root = view
        while root in parent:
            root = parent[root]
        roots[view] = root
    return roots


def collect(stmt, varying: set, roots: dict | None = None, memory=is_shared) -> tuple[list, list]:
    """(reads, writes) of shared memory anywhere in ``stmt``, as Access records; ``roots``:
    view_roots of the kernel (a view's accesses race with its buffer's); ``memory``: which
    buffers count instead (a predicate, e.g. ``is_global``)."""
    local = _bound_inside(stmt)
    roots = roots or {}
    reads, writes, atomic_dsts, async_stores = [], [], [], []
    tvm_ffi.structural_walk(stmt, [(tirx.AttrStmt, lambda a: async_stores.append(a.body)
                                    if a.attr_key == ASYNC_WRITE else None)])

    def root(buffer):
        return roots.get(buffer, buffer)

    def box(ranges):
        dims = []
        for lo, extent in ranges:
            same = _uniform_expr(lo, varying, local) and _uniform_expr(extent, varying, local)
            dims.append((lo, extent) if same else None)
        return tuple(dims)

    def on_call(call):
        if is_tile_op(call):
            op = TileOp.from_stmt(call)
            atomic = op.name == "atomic"
            for r in op.reads:
                if memory(r.source):
                    reads.append(Access(r.source, box((x.min, x.extent) for x in r.region), atomic, root=root(r.source)))
            for r in op.writes:
                if memory(r.source):
                    writes.append(Access(r.source, box((x.min, x.extent) for x in r.region), atomic, root=root(r.source)))
        elif isinstance(getattr(call, "op", None), tvm.ir.Op) and str(call.op.name) in (RMW_OP, LOAD_OP):
            dst = call.args[0]
            atomic_dsts.append(dst)
            if memory(dst.source):
                access = Access(dst.source, box(_element(i) for i in dst.indices), True, root=root(dst.source))
                reads.append(access)
                if str(call.op.name) == RMW_OP:
                    writes.append(access)

    def on_load(load):
        if memory(load.source) and not any(load.same_as(d) for d in atomic_dsts):
            reads.append(Access(load.source, box(_element(i) for i in load.indices), root=root(load.source)))

    def on_store(store):
        if memory(store.buffer):
            landing = any(store.same_as(a) for a in async_stores)
            writes.append(Access(store.buffer, box(_element(i) for i in store.indices), async_write=landing,
                                 root=root(store.buffer)))

    # pre-order: an atomic call is met before the load that names its destination
    tvm_ffi.structural_walk(stmt, [(tirx.TilePrimitiveCall, on_call), (tvm.ir.Call, on_call),
                                   (tvm.ir.TensorLoad, on_load), (tirx.BufferStore, on_store)],
                            order="pre")
    return reads, writes


def races(reads, writes, pending_reads, pending_writes, analyzer=None) -> bool:
    """Does an access (reads, writes) race with earlier ones (RAW, WAR or WAW) from another
    thread? Without an ``analyzer`` no box is proved disjoint (a loop body against its own next
    iteration, whose loop variable differs)."""
    return (_any_race(reads, pending_writes, analyzer) or _any_race(writes, pending_reads, analyzer)
            or _any_race(writes, pending_writes, analyzer))


def _any_race(these, those, analyzer) -> bool:
    return any(_race(a, b, analyzer) for a in these for b in those)


def _race(a: Access, b: Access, analyzer) -> bool:
    if not a.root.same_as(b.root) or (a.atomic and b.atomic) or (a.async_write and b.async_write):
        return False
    if not a.buffer.same_as(b.buffer):  # a view and its buffer: indices of other shapes
        return True
    return analyzer is None or not _disjoint(a.box, b.box, analyzer)


def _disjoint(box_a, box_b, analyzer) -> bool:
    if box_a is None or box_b is None or len(box_a) != len(box_b):
        return False
    for da, db in zip(box_a, box_b):
        if da is None or db is None:
            continue
        (lo_a, ext_a), (lo_b, ext_b) = da, db
        if analyzer.can_prove(lo_a + ext_a <= lo_b) or analyzer.can_prove(lo_b + ext_b <= lo_a):
            return True
        if _is_one(ext_a) and _is_one(ext_b) and _xor_distinct(lo_a, lo_b):
            return True
    return False


def _xor_distinct(a, b) -> bool:
    """``x ^ c1`` against ``x ^ c2`` (a bare ``x`` is ``x ^ 0``) with constants c1 != c2."""
    base_a, c_a = _xor_parts(a)
    base_b, c_b = _xor_parts(b)
    return c_a != c_b and tvm_ffi.structural_equal(base_a, base_b)


def _xor_parts(expr):
    if isinstance(expr, tirx.BitwiseXor):
        for base, mask in ((expr.a, expr.b), (expr.b, expr.a)):
            if isinstance(mask, tirx.IntImm):
                return base, int(mask.value)
    return expr, 0


def _is_one(expr) -> bool:
    return (isinstance(expr, int) and expr == 1) or (isinstance(expr, tirx.IntImm) and int(expr.value) == 1)


def _element(index):
    """An index as (min, extent): a vector index ``Ramp(base, stride, lanes)`` covers its span."""
    if isinstance(index, tirx.Ramp) and isinstance(index.stride, tirx.IntImm) and int(index.stride.value) > 0:
        return index.base, (int(index.stride.value) * (int(index.lanes) - 1) + 1)
    if tvm.runtime.DataType(str(index.ty)).lanes != 1:
        return None, None  # (a broadcast or gathered vector index: anywhere)
    return index, 1


def _uniform_expr(expr, varying, local) -> bool:
    """Whether ``expr`` has the same value in every thread: only arithmetic over names that are
    neither varying nor bound inside the statement (``local``), nothing loaded, no calls."""
    if expr is None:
        return False
    if isinstance(expr, int):
        return True
    ok = [True]

    def on_var(v):
        if v in varying or v in local:
            ok[0] = False

    def impure(_node):
        ok[0] = False

    tvm_ffi.structural_walk(expr, [(tvm.ir.TensorLoad, impure), (tvm.ir.Call, impure), (tirx.Var, on_var)])
    return ok[0]


def _bound_inside(stmt) -> frozenset:
    bound = set()
    tvm_ffi.structural_walk(stmt, [(tirx.For, lambda f: bound.add(f.loop_var)),
                                   (tirx.Bind, lambda b: bound.add(b.var))])
    return frozenset(bound)
