"""SoftwarePipeline: T.Pipelined(n, num_stages=s) -> an s-stage async-copy pipeline.

The loop body's leading copies global -> shared are the producers; the rest consume. Each shared
buffer a producer writes gets ``s`` slots (a new leading dimension). The loop becomes (helpers of
the kit's contract; on CUDA they are cp.async, commit_group and wait_group)::

    for p in range(s - 1):                 # prologue: tiles 0 .. s-2 in flight
        if p < n: producers(k=p, slot=p)
        tl_cp_async_commit()
    for k in range(n):
        tl_cp_async_wait<s - 2>()          # this thread's copies of tile k have landed
        barrier                            # ... everyone's, and everyone is done with tile k-1
        if k + s - 1 < n: producers(k + s - 1, slot=(k + s - 1) % s)   # refills slot of k-1
        tl_cp_async_commit()               # (empty groups keep the count uniform)
        consumers(k, slot=k % s)

One barrier per iteration is enough: the slot refilled at iteration k held tile k-1, which every
thread finished consuming before reaching that barrier. After the loop, a wait<0> and a barrier
make the shared buffers safe to reuse.

Without async copies (``use_async=False``: SimtDialect.async_copy is False, or CUDA's
disable_cp_async) the loop is left as written: synchronous copies into one buffer, with the
barriers insert_barriers places (multi-buffering synchronous copies would only pay off with a
register prefetch of the next tile, which the kit does not do yet).
"""

from __future__ import annotations

import tvm
from tvm import tirx

from tilelang_core.ir import Copy, Gemm, TileOp, is_tile_op

from .. import intrinsics as I
from .insert_barriers import insert_barriers_in_seq
from .state import FRAGMENT_PREFETCH, PIPELINE_REGION, if_then, seq, substitute

SHARED = ("shared", "shared.dyn")
GLOBAL = ("global", "")


def _scope(region) -> str:
    return str(region.source.ty.storage_scope)


def _is_producer(stmt) -> bool:
    if not is_tile_op(stmt):
        return False
    op = TileOp.from_stmt(stmt)
    return isinstance(op, Copy) and _scope(op.src) in GLOBAL and _scope(op.dst) in SHARED


def software_pipeline(body, use_async: bool = True):
    staged: dict = {}  # old shared buffer -> (new buffer, stages)

    def visit(node):
        if isinstance(node, tirx.SeqStmt):
            return seq([visit(s) for s in node.seq])
        if isinstance(node, tirx.AttrStmt):
            return tirx.AttrStmt(node.node, node.attr_key, node.value, visit(node.body))
        if isinstance(node, tirx.IfThenElse):
            return tirx.IfThenElse(node.condition, visit(node.then_case),
                                   visit(node.else_case) if node.else_case is not None else None)
        if isinstance(node, tirx.For):
            stages = _num_stages(node)
            if stages >= 2 and use_async:
                planned = _pipeline(node, stages, staged)
                if planned is not None:
                    return planned
            return tirx.For(node.loop_var, node.min, node.extent, node.kind, visit(node.body),
                            node.thread_binding, node.annotations)
        return node

    body = visit(body)
    if not staged:
        return body
    _check_no_stale_uses(body, staged)
    return _restage_allocs(body, staged)


def _check_no_stale_uses(body, staged: dict) -> None:
    """A staged buffer has no single copy after the loop: uses outside it are refused clearly."""
    import tvm_ffi

    from tilelang_core.errors import LoweringError

    stale = set()

    def note(buffer):
        if buffer in staged:
            stale.add(str(buffer.name))

    def on_call(call):
        for arg in call.args:
            if isinstance(arg, tvm.ir.TensorRegion):
                note(arg.source)

    tvm_ffi.structural_walk(body, [(tvm.ir.TensorLoad, lambda l: note(l.source)),
                                   (tirx.BufferStore, lambda st: note(st.buffer)),
                                   (tirx.TilePrimitiveCall, on_call)])
    if stale:
        raise LoweringError(
            f"shared buffer(s) {', '.join(sorted(stale))} are filled by a T.Pipelined loop (one "
            f"slot per stage) and also used outside it; use them only inside the loop, or give "
            f"the loop num_stages=1")


def _num_stages(loop) -> int:
    ann = loop.annotations
    if ann is None or "tl.num_stages" not in ann:
        return 0
    value = ann["tl.num_stages"]
    return int(value.value) if hasattr(value, "value") else int(value)


def leading_bindings(loop) -> tuple[list, dict, list]:
    """(the Binds at the top of a loop body, {var: value with earlier bindings inlined}, the
    statements after them). Names bound there (split-K's ``k0 = (bz * k_tiles + ko) * block_K``)
    are used by copies that a pipeline runs stages ahead: those get the values inlined, while
    the consumers keep the bindings themselves."""
    stmts = list(loop.body.seq) if isinstance(loop.body, tirx.SeqStmt) else [loop.body]
    bindings, values = [], {}
    while stmts and isinstance(stmts[0], tirx.Bind):
        bind = stmts.pop(0)
        bindings.append(bind)
        values[bind.var] = substitute(bind.value, values)
    return bindings, values, stmts


def _pipeline(loop, stages: int, staged: dict):
    bindings, values, stmts = leading_bindings(loop)
    producers = []
    while stmts and _is_producer(stmts[0]):
        producers.append(substitute(stmts.pop(0), values))
    if not producers or not stmts:
        return None
    written = [TileOp.from_stmt(p).dst.source for p in producers]
    stmts = bindings + _mark_fragment_prefetch(stmts, written)
    for buf in written:
        if buf not in staged:
            staged[buf] = (_staged_buffer(buf, stages), stages)
        elif staged[buf][1] != stages:
            return None  # one buffer in two pipelines of different depth: leave it synchronous
    k = loop.loop_var
    n = loop.extent

    def staged_new():
        return [new for new, _ in staged.values()]
    start = loop.min

    def stage_regions(stmt, slot):
        op = TileOp.from_stmt(stmt)
        return _restage_op(op, staged, slot)

    def produce(iteration):
        slot = tirx.floormod(iteration, stages)
        out = []
        for p in producers:
            op = stage_regions(p, slot)
            op = op.replace(options={**op.options, "tl_async": True})
            out.append(substitute(op.to_stmt(), {k: start + iteration}))
        return seq(out)

    def consume(iteration):
        slot = tirx.floormod(iteration, stages)
        out = []
        for s in stmts:
            if is_tile_op(s):
                s = stage_regions(s, slot).to_stmt()
            else:
                s = _restage_accesses(s, staged, slot)
            out.append(substitute(s, {k: start + iteration}))
        # Consumers may also write shared memory themselves (a synchronous copy of V in attention):
        # barriers among them, starting clean after the iteration's top barrier. Staged buffers
        # are excluded: the producers write another slot than the consumers read.
        return insert_barriers_in_seq(out, ignore=set(staged_new()))

    commit = I.call("tl_cp_async_commit")
    p = tirx.Var("p", "int32")
    prologue = tirx.For(p, tirx.const(0, "int32"), tirx.const(stages - 1, "int32"), tirx.ForKind.UNROLLED,
                        seq([if_then(p < n, produce(p)), commit]))
    it = tirx.Var(str(k.name), "int32")
    steady = seq([
        I.call(f"tl_cp_async_wait<{stages - 2}>"),
        I.syncthreads(),
        if_then(it + (stages - 1) < n, produce(it + (stages - 1))),
        commit,
        consume(it),
    ])
    main = tirx.For(it, tirx.const(0, "int32"), n, tirx.ForKind.SERIAL, steady,
                    annotations={"tl.pipelined": tirx.const(stages, "int32")})
    # Marked as one unit for insert_barriers: it places its own barriers, and leaves none pending.
    return tirx.AttrStmt(tirx.const(0, "int32"), PIPELINE_REGION, tirx.const(stages, "int32"),
                         seq([prologue, main, I.call("tl_cp_async_wait<0>"), I.syncthreads()]))


def _mark_fragment_prefetch(consumers: list, written: list) -> list:
    """Mark a gemm that is the whole consumer side, on operands the producers stage: its next
    stage's first operand fragments can then be loaded before its last k-step's matrix
    instructions (prefetch_fragments), which hides the barrier and the load latency at each
    stage boundary. Backends whose gemm rule ignores the mark lower it as before."""
    if len(consumers) != 1 or not is_tile_op(consumers[0]):
        return consumers
    op = TileOp.from_stmt(consumers[0])
    if not isinstance(op, Gemm) or op.clear_accum or op.A.source not in written or op.B.source not in written:
        return consumers
    return [op.replace(options={**op.options, FRAGMENT_PREFETCH: True}).to_stmt()]


def _staged_buffer(buf, stages: int):
    shape = [stages] + list(buf.ty.shape)
    return tirx.decl_buffer(shape, str(buf.ty.dtype), name=str(buf.name), scope=str(buf.ty.storage_scope))


def _restage_region(region, staged: dict, slot):
    if region.source not in staged:
        return region
    new, _ = staged[region.source]
    ranges = [tvm.ir.Range.from_min_extent(slot, 1)] + list(region.region)
    return tirx.BufferRegion(new, ranges)


def _restage_op(op: TileOp, staged: dict, slot) -> TileOp:
    from tilelang_core.ir import region as R

    changes = {}
    for name in ("src", "dst", "A", "B", "C"):
        value = getattr(op, name, None)
        if value is not None and R.is_region(value):
            changes[name] = _restage_region(value, staged, slot)
    return op.replace(**changes) if changes else op


def _restage_accesses(stmt, staged: dict, slot):
    import tvm_ffi

    def on_load(load):
        if load.source in staged:
            return tirx.BufferLoad(staged[load.source][0], [slot] + list(load.indices))
        return load

    def on_store(store):
        if store.buffer in staged:
            return tirx.BufferStore(staged[store.buffer][0], store.value, [slot] + list(store.indices))
        return store

    stmt = tvm_ffi.structural_map(stmt, [(tvm.ir.TensorLoad, on_load)])
    return tvm_ffi.structural_map(stmt, [(tirx.BufferStore, on_store)])


def _restage_allocs(body, staged: dict):
    import tvm_ffi

    def on_alloc(alloc):
        if alloc.buffer in staged:
            return tirx.AllocBuffer(staged[alloc.buffer][0])
        return alloc

    return tvm_ffi.structural_map(body, [(tirx.AllocBuffer, on_alloc)])
