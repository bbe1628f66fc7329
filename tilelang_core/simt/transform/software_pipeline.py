"""SoftwarePipeline: T.Pipelined(n, num_stages=s) -> an s-stage async-copy pipeline.

The loop body's copies global -> shared are the producers: the leading ones always, and a copy
further down the body (FlashAttention's V, after the softmax) where that is legal (below); the
rest consume. Each shared buffer a producer writes gets ``s`` slots (a new leading dimension).
The loop becomes (helpers of the kit's contract; on CUDA they are cp.async, commit_group and
wait_group)::

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

A copy in the middle of the body joins the producers (same commit group as the leading copies,
issued s-1 iterations ahead; its statement leaves the consumers) when the move cannot change what
the body computes or overflow shared memory (``_mid_body_producers``): no earlier statement of
the body reads or writes its tile and no later one writes it, its source indices are those of
the loop variable, the leading bindings and names bound outside the loop (nothing read from
memory), the body does not write its source tensor, the tile is not used outside the loop, and
the extra slots fit ``shared_limit`` (bytes; None: no limit known). One group per iteration
keeps the accounting above unchanged: the wait at the top of iteration k covers its V with its
K, and that barrier orders V's slot refill after iteration k-1's last read (a second group for V
alone would need a second wait and barrier before its consumer, and gives V less time to land).
A copy that does not qualify stays a synchronous consumer, as before.

A row gather into a shared tile (``S[i, j] = KV[Idx[k * B + i], j]``, sparse attention's K/V rows;
gathers.py) is a producer by the same rules, except that its row indices may read index tensors the
kernel never writes (read iterations ahead, they give the same rows). It is issued marked, and
LowerParallel makes each thread's 16-byte runs async copies in the same commit group. A pipeline
may have only such mid-body producers (sparse MLA computes its mask before the gathers).

A copy global -> shared before the loop whose tile nothing between it and the loop touches
(attention's Q) is issued as an async copy too (``_async_preloads``; ``async_preload=False``
keeps it synchronous): it joins the prologue's first commit group, so the first iteration's
wait and barrier cover it, and the block no longer waits for Q's round trip before the first
K/V tiles are even issued. insert_barriers orders a pipeline region against earlier statements
by its prologue only, for the same reason: the loop's first barrier precedes every consumer.

Without async copies (``use_async=False``: SimtDialect.async_copy is False, or CUDA's
disable_cp_async) the loop is left as written: synchronous copies into one buffer, with the
barriers insert_barriers places (multi-buffering synchronous copies would only pay off with a
register prefetch of the next tile, which the kit does not do yet).
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from tilelang_core.errors import LoweringError
from tilelang_core.ir import Copy, Cumsum, Gemm, Reduce, TileOp, is_tile_op
from tilelang_core.ir import region as R
from tilelang_core.transform.bindings import is_invariant, uses_any, written_buffers

from .. import intrinsics as I
from .gathers import as_gather, gather_reads, marked
from .insert_barriers import accesses, insert_barriers_in_seq, touched
from .state import FRAGMENT_PREFETCH, PIPELINE_REGION, if_then, is_pipeline_region, seq, substitute

SHARED = ("shared", "shared.dyn")
GLOBAL = ("global", "")


def _scope(region) -> str:
    return str(region.source.ty.storage_scope)


def _is_producer(stmt) -> bool:
    if not is_tile_op(stmt):
        return False
    op = TileOp.from_stmt(stmt)
    return isinstance(op, Copy) and _scope(op.src) in GLOBAL and _scope(op.dst) in SHARED


def software_pipeline(body, use_async: bool = True, shared_limit: int | None = None, async_preload: bool = True):
    staged: dict = {}  # old shared buffer -> (new buffer, stages)
    kernel = body

    def visit(node):
        if isinstance(node, tirx.SeqStmt):
            stmts = [visit(s) for s in node.seq]
            return seq(_async_preloads(stmts, staged) if use_async and async_preload else stmts)
        if isinstance(node, tirx.AttrStmt):
            return tirx.AttrStmt(node.node, node.attr_key, node.value, visit(node.body))
        if isinstance(node, tirx.IfThenElse):
            return tirx.IfThenElse(node.condition, visit(node.then_case),
                                   visit(node.else_case) if node.else_case is not None else None)
        if isinstance(node, tirx.For):
            stages = num_stages(node)
            if stages >= 2 and use_async:
                planned = _pipeline(node, stages, staged, kernel, shared_limit)
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


def _async_preloads(stmts: list, staged: dict) -> list:
    """Copies global -> shared that fill a tile before a pipelined loop (attention's Q) issued as
    async copies: they join the prologue's first commit group, which the first iteration's wait
    and barrier already cover, so the load overlaps the first K/V tiles' instead of stalling the
    block on its own round trip (LDG, STS, barrier) before any of them is issued. Only where no
    statement between the copy and the loop touches its tile or writes its source; a copy the
    lowering cannot vectorize stays synchronous, which the same barrier orders as well."""
    out = list(stmts)
    start = 0
    for j, stmt in enumerate(out):
        if not is_pipeline_region(stmt):
            continue
        for i in range(start, j):
            if not _is_producer(out[i]):
                continue
            op = TileOp.from_stmt(out[i])
            tile, source = op.dst.source, op.src.source
            between = [touched(s) for s in out[i + 1:j]]
            if tile in staged or any(tile in r or tile in w or source in w for r, w in between):
                continue
            out[i] = op.replace(options={**op.options, "tl_async": True}).to_stmt()
        start = j + 1
    return out


def _check_no_stale_uses(body, staged: dict) -> None:
    """A staged buffer has no single copy after the loop: uses outside it are refused clearly."""
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


def num_stages(loop) -> int:
    """A loop's ``T.Pipelined(num_stages=...)``; 0 for a loop that is not pipelined."""
    ann = loop.annotations
    if ann is None or "tl.num_stages" not in ann:
        return 0
    value = ann["tl.num_stages"]
    return int(value.value) if hasattr(value, "value") else int(value)


def leading_bindings(loop, kernel=None) -> tuple[list, dict, list]:
    """(the bindings of a loop body that run at the top of an iteration, {var: value with earlier
    bindings inlined}, the other statements in order). Names bound there (split-K's
    ``k0 = (bz * k_tiles + ko) * block_K``) are used by copies that a pipeline runs stages ahead,
    or a producer warpgroup runs: those get the values inlined, while the consumers keep the
    bindings themselves.

    A binding further down the body joins them when its value is the same wherever it is
    evaluated (``is_invariant``: pure, or read from a tensor ``kernel`` never writes) and uses no
    name bound in place: moving it to the top changes nothing, and copies or deferred statements
    that use it get its value for their own iteration. A binding that reads memory the kernel
    writes stays where it is, and so does every binding that uses its name."""
    stmts = list(loop.body.seq) if isinstance(loop.body, tirx.SeqStmt) else [loop.body]
    written = written_buffers(kernel if kernel is not None else loop)
    bindings, values, rest, in_place = [], {}, [], []
    for stmt in stmts:
        if isinstance(stmt, tirx.Bind):
            if is_invariant(stmt.value, written) and not uses_any(stmt.value, in_place):
                bindings.append(stmt)
                values[stmt.var] = substitute(stmt.value, values)
                continue
            in_place.append(stmt.var)
        rest.append(stmt)
    return bindings, values, rest


def _tile_of(stmt):
    """The shared tile a producer (a copy, or a row gather: gathers.py) fills."""
    gather = as_gather(stmt)
    return gather.dst if gather is not None else TileOp.from_stmt(stmt).dst.source


def _pipeline(loop, stages: int, staged: dict, kernel=None, shared_limit: int | None = None):
    bindings, values, stmts = leading_bindings(loop, kernel)
    producers = []
    while stmts and _is_producer(stmts[0]):
        producers.append(substitute(stmts.pop(0), values))
    if not stmts:
        return None
    written = [_tile_of(p) for p in producers]
    if any(buf in staged and staged[buf][1] != stages for buf in written):
        return None  # one buffer in two pipelines of different depth: leave it synchronous
    moved = _mid_body_producers(loop, stmts, values, written, stages, staged, kernel, shared_limit)
    producers += [substitute(stmts[i], values) for i in moved]
    written += [_tile_of(stmts[i]) for i in moved]
    stmts = [s for i, s in enumerate(stmts) if i not in moved]
    if not producers or not stmts:
        return None
    if mixed_staging(stmts, set(written) | set(staged)):
        return None  # a scan between a staged and an unstaged tile: leave it synchronous
    stmts = bindings + _mark_fragment_prefetch(stmts, written)
    for buf in written:
        if buf not in staged:
            staged[buf] = (_staged_buffer(buf, stages), stages)
    k = loop.loop_var
    n = loop.extent

    def staged_new():
        return [new for new, _ in staged.values()]
    start = loop.min

    def stage_regions(stmt, slot):
        op = TileOp.from_stmt(stmt)
        return _restage_op(op, staged, slot)

    gathers = [as_gather(p) is not None for p in producers]

    def produce(iteration):
        slot = tirx.floormod(iteration, stages)
        out = []
        for p, gather in zip(producers, gathers):
            if gather:  # issued as async copies where LowerParallel can (gathers.py)
                stmt = marked(_restage_accesses(p, staged, slot))
            else:
                op = stage_regions(p, slot)
                stmt = op.replace(options={**op.options, "tl_async": True}).to_stmt()
            out.append(substitute(stmt, {k: start + iteration}))
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
        # barriers among them, starting clean after the iteration's top barrier. A staged buffer
        # only the producers write is exempt (they fill another slot than the consumers read); one
        # a consumer writes too (T.cumsum of the loaded tile in place) is ordered like any other.
        consumer_writes = set().union(*(accesses(s)[1] for s in out))
        return insert_barriers_in_seq(out, ignore=set(staged_new()) - consumer_writes, kernel=kernel)

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


def _mid_body_producers(loop, stmts: list, values: dict, written: list, stages: int, staged: dict,
                        kernel, shared_limit: int | None) -> list:
    """Indices into ``stmts`` (the body after its leading bindings and copies) of the copies that
    can be issued with the leading ones (module docstring): a tile untouched before the copy in
    the body and not written after it, source indices known at the top of the iteration, a
    source the loop does not write, a tile not used outside the loop, extra slots that fit."""
    local_names = _names_defined_in(loop.body)
    outside = _shared_used_outside(kernel, loop) if kernel is not None else set()
    budget = None
    if shared_limit is not None and kernel is not None:
        slots = {**{buf: n for buf, (_, n) in staged.items()}, **{buf: stages for buf in written}}
        budget = shared_limit - shared_bytes(kernel, slots)
    touched = set(written)  # a tile filled twice: the second copy stays where it is
    kernel_writes = None  # what the kernel writes, for a gather's index tensors (found once)
    loop_writes = written_buffers(loop.body)  # a producer's source must not be among them
    access = [accesses(s) for s in stmts]  # (a copy's tile is among its writes)
    moved = []
    for i, stmt in enumerate(stmts):
        gather = as_gather(stmt)
        if _is_producer(stmt) or gather is not None:
            if gather is not None:
                tile, sources = gather.dst, gather_reads(gather)
                # the rows it reads come from index tensors the kernel never writes, so reading
                # them iterations ahead gives the same rows
                if kernel_writes is None:
                    kernel_writes = written_buffers(kernel if kernel is not None else loop.body)
                own = [n for n in local_names if not any(n.same_as(v) for v in gather.loop_vars)]
                known = _known_at_top(substitute(stmt, values), own,
                                      read_ok=lambda b: not any(b.same_as(w) for w in kernel_writes))
            else:
                op = TileOp.from_stmt(stmt)
                tile, sources = op.dst.source, {op.src.source}
                known = _known_at_top(substitute(stmt, values), local_names)
            later_writes = set().union(*(w for _, w in access[i + 1:]))
            extra = (stages - 1) * _tile_bytes(tile)
            if (tile not in touched and tile not in later_writes
                    and tile not in outside and (tile not in staged or staged[tile][1] == stages)
                    and known and not any(b.same_as(w) for b in sources for w in loop_writes)
                    and (budget is None or tile in staged or extra <= budget)):
                moved.append(i)
                touched.add(tile)
                if budget is not None and tile not in staged:
                    budget -= extra
                continue
        touched |= access[i][0] | access[i][1]
    return moved


def _names_defined_in(body) -> set:
    """Variables and buffers the loop body itself defines (bindings, inner loops, allocations)."""
    names = set()
    tvm_ffi.structural_walk(body, [(tirx.Bind, lambda b: names.add(b.var)),
                                   (tirx.For, lambda f: names.add(f.loop_var)),
                                   (tirx.AllocBuffer, lambda a: names.add(a.buffer))])
    return names


def _known_at_top(stmt, local_names: set, read_ok=None) -> bool:
    """Does the copy use only names bound outside the loop body (after the leading bindings are
    inlined) and read no memory in its indices, so it can run iterations ahead? A row gather
    (``read_ok`` given) may read the tensors ``read_ok`` accepts."""
    ok = True

    def on_var(v):
        nonlocal ok
        if any(v.same_as(name) for name in local_names):
            ok = False

    def on_load(load):
        nonlocal ok
        if read_ok is None or not read_ok(load.source):
            ok = False

    if read_ok is not None:
        tvm_ffi.structural_walk(stmt, [(tvm.ir.Var, on_var), (tvm.ir.TensorLoad, on_load)])
        return ok
    op = TileOp.from_stmt(stmt)
    for r in (op.src, op.dst):
        for rng in r.region:
            for e in (rng.min, rng.extent):
                tvm_ffi.structural_walk(e, [(tvm.ir.Var, on_var), (tvm.ir.TensorLoad, on_load)])
    tvm_ffi.structural_walk(stmt, [(tvm.ir.Var, on_var)])
    return ok


def _shared_used_outside(kernel, loop) -> set:
    """Shared buffers the kernel reads or writes outside ``loop``."""
    def on_for(node):
        return tirx.Evaluate(tirx.const(0, "int32")) if node.same_as(loop) else node

    rest = tvm_ffi.structural_map(kernel, [(tirx.For, on_for)])
    reads, writes = accesses(rest)
    return reads | writes


def _tile_bytes(buf) -> int:
    size = tvm.runtime.DataType(str(buf.ty.dtype)).bits // 8
    for extent in buf.ty.shape:
        size *= int(extent)
    return (size + 15) // 16 * 16  # apply_layouts pools shared tiles at 16-byte offsets


def shared_bytes(kernel, slots: dict) -> int:
    """The kernel's shared tiles in bytes, buffer ``b`` with ``slots[b]`` slots (an estimate:
    scratch the lowering adds later, e.g. for cross-warp reductions, is not counted)."""
    total = 0

    def on_alloc(alloc):
        nonlocal total
        buf = alloc.buffer
        if str(buf.ty.storage_scope) in SHARED:
            total += _tile_bytes(buf) * slots.get(buf, 1)

    tvm_ffi.structural_walk(kernel, [(tirx.AllocBuffer, on_alloc)])
    return total


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
    changes = {}
    for name in ("src", "dst", "A", "B", "C"):
        value = getattr(op, name, None)
        if value is not None and R.is_region(value):
            changes[name] = _restage_region(value, staged, slot)
    if isinstance(op, (Reduce, Cumsum)) and op.src.source in staged:
        # the slot is a new leading dimension of the source: the dimension reduced or scanned
        # moves with the others (a scan's destination is staged too: mixed_staging; a
        # reduction's pairs its dimensions with the source's up to unit ones)
        changes["dim"] = op.dim + 1
    return op.replace(**changes) if changes else op


def mixed_staging(stmts, staged) -> str | None:
    """Why the loop body cannot be staged as it is, or None: a T.cumsum between a tile that gets
    one slot per stage (``staged``) and one that does not (a scan's two sides have the same
    shape; a slot in front of one only would break it). A reduction pairs its sides' dimensions
    up to unit ones (lower_reduce_shared.py), so it takes a slot on either side."""
    for stmt in stmts:
        if not is_tile_op(stmt):
            continue
        op = TileOp.from_stmt(stmt)
        if isinstance(op, Cumsum) and (op.src.source in staged) != (op.dst.source in staged):
            inner, outer = (op.src, op.dst) if op.src.source in staged else (op.dst, op.src)
            return (f"{op.name} between '{inner.source.name}', filled one slot per stage, and "
                    f"'{outer.source.name}', which is not")
    return None


def _restage_accesses(stmt, staged: dict, slot):
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
    def on_alloc(alloc):
        if alloc.buffer in staged:
            return tirx.AllocBuffer(staged[alloc.buffer][0])
        return alloc

    return tvm_ffi.structural_map(body, [(tirx.AllocBuffer, on_alloc)])
