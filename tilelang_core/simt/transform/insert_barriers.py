"""InsertBarriers: block barriers (``__syncthreads()`` on CUDA) between statements that touch the same shared buffer from
different threads, and only there; and between block-wide statements (lists every thread runs)
that touch one global buffer from different threads (two T.Parallel loops handing data over:
each loop's layout is its own), with the dialect's barrier that orders global memory.

Works on tile-level IR (before lowering), where every statement's shared reads and writes are
known: tile ops declare them, loops and stores are scanned. In a statement list, a barrier goes
before a statement that reads what an earlier one wrote (RAW) or writes what an earlier one read
or wrote (WAR/WAW) since the last barrier. A loop whose body writes shared memory also ends its
body with a barrier when the next iteration's first accesses would race with this iteration's
last ones. Loops already planned by the software pipeline (``tl.pipelined``) place their own,
and such a region is ordered against earlier statements by its prologue only (its loop starts
with a wait and a barrier).
Tile ops under a condition that selects a group of threads (transform/thread_ranges.py) are
ordered against the code around their branch like any statement; a barrier the group needs
inside its branch is a barrier among the group's threads (``group_barrier``: a named barrier,
named_barriers.py), never a block barrier, which would wait for threads that never arrive.
A barrier the kernel wrote (``T.sync_threads``, with or without an id) orders what is around it
like an inserted one. A barrier needed inside an ``if`` whose condition depends on the thread (other
than a thread range's region, which has its own) is refused, in the block or in a group: the
threads that skip the branch would never reach it. Which accesses race is shared_races.py's
question: atomics never race with atomics, and accesses to provably disjoint parts of a buffer
(``s[r, i]`` against ``s[r ^ 1, j]``) don't either; a view (``T.reshape``, ``T.view``) is ordered
against the buffer it views, in the software pipeline's loops too.
The bodies of ``T.ws`` regions are synchronized by their author (mbarriers, language/barriers.py):
their accesses are ordered against the block-wide code around them, never against one another.
A run of ``T.tma_copy`` statements ends with a barrier among the threads that issued them: each
thread ties its part of the copy to the mbarrier's current phase (simt/transform/mbarriers.py),
and every part must be tied before any thread's arrival can complete that phase (TileLang's
kernels let one thread arrive for a copy its whole warpgroup issued).
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from tilelang_core.errors import LoweringError
from tilelang_core.ir import TileOp, is_tile_op
from tilelang_core.ir import intrinsics as IR
from tilelang_core.ir.atomic_calls import RMW_OP
from tilelang_core.lowering import source_location
from tilelang_core.transform.bindings import is_pure
from tilelang_core.transform.thread_ranges import THREAD_RANGE, WS_ATTR, region_lo

from .. import intrinsics as I
from .private_shared import private_to_threads
from .shared_races import collect, is_global, is_shared, races, varying_vars, view_roots
from .state import PIPELINE_REGION, is_pipeline_region, region_entry, seq

def touched(stmt) -> tuple[set, set]:
    """(buffers read, buffers written) anywhere in ``stmt``, every scope: tile ops declare theirs,
    loads and stores are scanned."""
    reads, writes = set(), set()

    def on_call(call):
        if is_tile_op(call):
            op = TileOp.from_stmt(call)
            reads.update(r.source for r in op.reads)
            writes.update(r.source for r in op.writes)

    def on_expr_call(call):  # an atomic with a result writes its destination (its load reads it)
        if isinstance(call.op, tvm.ir.Op) and str(call.op.name) == RMW_OP:
            writes.add(call.args[0].source)

    tvm_ffi.structural_walk(stmt, [(tirx.TilePrimitiveCall, on_call), (tvm.ir.Call, on_expr_call),
                                   (tvm.ir.TensorLoad, lambda load: reads.add(load.source)),
                                   (tirx.BufferStore, lambda store: writes.add(store.buffer))])
    return reads, writes


def accesses(stmt) -> tuple[set, set]:
    """(shared buffers read, shared buffers written) anywhere in ``stmt``."""
    reads, writes = touched(stmt)
    return {b for b in reads if is_shared(b)}, {b for b in writes if is_shared(b)}


def split_ws(stmt) -> tuple[set, set, set, set]:
    """``accesses`` of ``stmt`` as (reads, writes) outside T.ws bodies, then (reads, writes) inside them."""
    outside, bodies = _ws_parts(stmt)
    r, w = accesses(outside)
    ws_r, ws_w = set(), set()
    for body in bodies:
        br, bw = accesses(body)
        ws_r |= br
        ws_w |= bw
    return r, w, ws_r, ws_w


def _ws_parts(stmt):
    """``stmt`` with its T.ws bodies cut out, and those bodies."""
    bodies = []

    def on_attr(attr):
        if attr.attr_key == WS_ATTR:
            bodies.append(attr.body)
            return tirx.Evaluate(tirx.const(0, "int32"))
        return attr

    return tvm_ffi.structural_map(stmt, [(tirx.AttrStmt, on_attr)]), bodies


def conflict(reads, writes, pending_reads, pending_writes) -> bool:
    """Does an access (reads, writes) race with earlier ones (RAW, WAR or WAW)?"""
    return bool(reads & pending_writes or writes & pending_reads or writes & pending_writes)


def insert_barriers(stmt, group_barrier=None, range_barrier=None, global_barrier=None):
    """The kernel body with barriers inserted (see the module docstring). ``group_barrier(region)``:
    the barrier statement among the threads of a THREAD_RANGE region (None: such barriers are
    refused). ``range_barrier(branch, conditions)``: inside ``if`` statements on the thread whose
    ``conditions`` (the enclosing ones too; an else branch's negated) hold, a function making the
    barrier among the threads they select, or None where they select no range of threads (then the
    barrier is refused; without ``range_barrier`` always). ``global_barrier()``: the block barrier
    that also orders global memory (SimtDialect.device_barrier; None: the block barrier does)."""
    return _Inserter(group_barrier, _thread_vars(stmt), stmt, range_barrier, global_barrier).visit(stmt, I.syncthreads)


def _thread_vars(body) -> set:
    """The thread index and every name bound (transitively) from it."""
    found, binds = set(), []

    def on_attr(attr):
        if attr.attr_key == "thread_extent" and str(attr.node.thread_tag).startswith("threadIdx"):
            found.add(attr.node.var)
        elif attr.attr_key == THREAD_RANGE:
            found.add(attr.node)

    tvm_ffi.structural_walk(body, [(tirx.AttrStmt, on_attr), (tirx.Bind, binds.append)])
    grew = True
    while grew:
        grew = False
        for bind in binds:
            if bind.var not in found and any(v in found for v in _vars_in(bind.value)):
                found.add(bind.var)
                grew = True
    return found


class _Inserter:
    """``thread_vars`` None: the threads are not known (insert_barriers_in_seq), so no access box
    is proved disjoint from another (shared_races.py needs to know what differs between threads)."""

    def __init__(self, group_barrier=None, thread_vars: set | None = None, body=None, range_barrier=None,
                 global_barrier=None):
        self.group_barrier = group_barrier
        self.range_barrier = range_barrier
        self.global_barrier = global_barrier or I.syncthreads  # (insert_barriers' docstring)
        self.thread_vars = thread_vars or set()
        self.varying = varying_vars(body, self.thread_vars) if thread_vars is not None else None
        self.analyzer = tvm.sym.Analyzer() if thread_vars is not None else None
        self.roots = view_roots(body) if body is not None else {}  # views -> the buffers they view
        self.branch_conds = {}  # range_barrier's barriers -> the conditions they were made for
        # (private_shared.py's facts: the block's threads, the kernel's pure values, the loops
        # around the statement being visited)
        self.threads, self.values = (_threads_and_values(body) if thread_vars is not None and body is not None
                                     else ([], {}))
        self.enclosing: list = []
        self.conditions: list = []
        # statements under an if, a while, or a loop whose trip count reads memory or the thread:
        # their threads may differ (a condition on a per-thread register is no less divergent than
        # one on the thread index), so global accesses there are left in each thread's own order
        self.divergent = 0

    def global_accesses(self, stmt) -> tuple[list, list]:
        """Access records (shared_races.py) of ``stmt``'s global memory, T.ws bodies left out
        (their authors synchronize them)."""
        outside, _ = _ws_parts(stmt)
        return collect(outside, self.varying if self.varying is not None else set(), memory=is_global)

    def accesses(self, stmt) -> tuple[list, list, list, list]:
        """Access records (shared_races.py) of ``stmt``: (reads, writes) outside T.ws bodies, then inside."""
        varying = self.varying if self.varying is not None else set()
        outside, bodies = _ws_parts(stmt)
        r, w = collect(outside, varying, self.roots)
        ws_r, ws_w = [], []
        for body in bodies:
            br, bw = collect(body, varying, self.roots)
            ws_r += br
            ws_w += bw
        return r, w, ws_r, ws_w

    def visit(self, node, sync):
        if isinstance(node, tirx.SeqStmt):
            return _visit_seq(list(node.seq), self, sync=sync)
        if isinstance(node, tirx.AttrStmt):
            if node.attr_key == PIPELINE_REGION:
                return node.body  # planned by software_pipeline; the marker has done its job
            if node.attr_key == THREAD_RANGE:
                inner = (lambda: self.group_barrier(node)) if self.group_barrier is not None else _refused(node)
                if self.group_barrier is not None:  # an 'if' on the thread inside: its part of the group
                    lo, tx = region_lo(node), node.node
                    self.branch_conds[inner] = [tx >= lo, tx < lo + int(node.value)]
                return tirx.AttrStmt(node.node, node.attr_key, node.value, self.visit(node.body, inner))
            return tirx.AttrStmt(node.node, node.attr_key, node.value, self.visit(node.body, sync))
        if isinstance(node, tirx.For):
            if node.annotations is not None and ("tl.pipelined" in node.annotations
                                                 or "tl.parallel" in node.annotations):
                return node
            if self._on_thread(node.min) or self._on_thread(node.extent):
                # a trip count that differs between threads (`for i in T.serial(start + lane, n, 32)`):
                # a barrier inside would wait for threads that already left the loop
                sync = _divergent_loop(node)
            constant = isinstance(node.min, tirx.IntImm) and isinstance(node.extent, tirx.IntImm)
            self.enclosing.append((node.loop_var, int(node.extent.value), int(node.min.value)) if constant else None)
            varying = not (_uniform_bound(node.min, self) and _uniform_bound(node.extent, self))
            self.divergent += varying
            try:
                body = self.visit(node.body, sync)
            finally:
                self.enclosing.pop()
                self.divergent -= varying
            # the next iteration reading global memory this one wrote (or writing what it read),
            # in a loop every thread runs: the barrier that orders global memory ends the body
            global_carried = (sync is I.syncthreads and not self.divergent and not varying
                              and _global_loop_carried(node.body, self))
            if not _ends_with_barrier(body) and global_carried:
                body = _append_barrier(body, self.global_barrier)
            elif not _ends_with_barrier(body) and _loop_carried(node.body, self) and not self._private(node):
                body = _append_barrier(body, sync)
            return tirx.For(node.loop_var, node.min, node.extent, node.kind, body,
                            node.thread_binding, node.annotations)
        if isinstance(node, tirx.IfThenElse):
            # a condition on the thread (not one of transform/thread_ranges.py's ranges, whose
            # regions bring their own barrier): part of the threads skip the branch, so a barrier
            # counting the block or the group would hang (CUDA leaves a __syncthreads that part
            # of the block skips undefined). TileLang's top-k selector needs none there once its
            # double-buffered accesses are proved disjoint (shared_races.py).
            then_sync = else_sync = sync
            if self._on_thread(node.condition):
                then_sync = self._branch_sync(node, node.condition, sync)
                else_sync = self._branch_sync(node, tirx.Not(node.condition), sync)
            # (private_shared.py's facts; an integer condition, `if count:`, is left out)
            boolean = str(node.condition.ty) == "bool"
            self.conditions.append(node.condition if boolean else tirx.const(True, "bool"))
            self.divergent += 1
            try:
                then_case = self.visit(node.then_case, then_sync)
                self.conditions[-1] = tirx.Not(node.condition) if boolean else tirx.const(True, "bool")
                else_case = self.visit(node.else_case, else_sync) if node.else_case is not None else None
            finally:
                self.conditions.pop()
                self.divergent -= 1
            return tirx.IfThenElse(node.condition, then_case, else_case)
        return node

    def _private(self, *stmts) -> bool:
        """Is every shared element ``stmts`` touch one thread's alone (private_shared.py)?"""
        if not self.threads or any(e is None for e in self.enclosing):
            return False
        return private_to_threads(list(stmts), self.enclosing, self.threads, self.values, self.roots,
                                  tuple(self.conditions))

    def _branch_sync(self, node, cond, sync):
        """The barrier inside a branch on ``cond`` (a condition on the thread) of code whose barrier
        is ``sync``: among the threads the branch's conditions select (range_barrier), else refused."""
        if sync is I.syncthreads:
            conds = [cond]
        elif sync in self.branch_conds:
            conds = self.branch_conds[sync] + [cond]
        else:  # inside a thread group's region: its own barrier counts the group
            return _divergent(node)
        if self.range_barrier is None:
            return _divergent(node)

        def barrier():  # the range is worked out only where a barrier is needed
            made = self.range_barrier(node, conds)
            return made() if made is not None else _divergent(node)()

        self.branch_conds[barrier] = conds
        return barrier

    def _on_thread(self, cond) -> bool:
        return any(v in self.thread_vars for v in _vars_in(cond))


def _threads_and_values(body):
    """([(thread index, extent)] of the block, {handle: value} of its pure bound values); no
    threads where a region runs on a range of them (THREAD_RANGE: its index is offset)."""
    threads, values, ranged = [], {}, []

    def on_attr(attr):
        if attr.attr_key == "thread_extent" and str(attr.node.thread_tag).startswith("threadIdx") \
                and isinstance(attr.value, tirx.IntImm) and int(attr.value.value) > 1:
            threads.append((attr.node.var, int(attr.value.value)))
        elif attr.attr_key == THREAD_RANGE:
            ranged.append(attr)

    def on_bind(bind):
        if is_pure(bind.value):
            values[bind.var.__chandle__()] = bind.value

    tvm_ffi.structural_walk(body, [(tirx.AttrStmt, on_attr), (tirx.Bind, on_bind)])
    return ([] if ranged else threads), values


def _uniform_bound(expr, inserter) -> bool:
    """Whether a loop bound is the same in every thread as far as the pass can tell: no load, no
    thread index (nor a name bound from one)."""
    loads = []
    tvm_ffi.structural_walk(expr, [(tvm.ir.TensorLoad, loads.append)])
    return not loads and not inserter._on_thread(expr)


def _vars_in(node) -> list:
    found = []
    tvm_ffi.structural_walk(node, [(tirx.Var, found.append)])
    return found


def _divergent(branch):
    def sync():
        spanned = []
        tvm_ffi.structural_walk(branch, [(tirx.Stmt, lambda n: spanned.append(n) if source_location(n) else None)],
                                order="pre")
        where = source_location(branch) or (source_location(spanned[0]) if spanned else None)
        raise LoweringError(
            "shared memory accessed inside an 'if' whose condition depends on the thread needs a barrier "
            "there (one thread writes what another reads), but the threads that skip the branch would "
            "never reach it. Move the accesses that need ordering out of the branch, or make the condition "
            "select one range of threads ('if tx < n:'), whose threads get a barrier of their own"
            + (f"\n  --> {where}" if where else ""))

    return sync


def _divergent_loop(loop):
    def sync():
        where = source_location(loop)
        raise LoweringError(
            f"shared memory accessed in a loop whose trip count depends on the thread ('for "
            f"{loop.loop_var} in ...' from {loop.min}, {loop.extent} iterations) needs a barrier "
            "inside it (one thread writes what another reads), but the threads that leave the loop "
            "early would never reach it (the kernel would hang). Give every thread the same trip "
            "count and guard the body with 'if', or order the accesses yourself (T.sync_warp / "
            "T.sync_threads where every thread reaches them)" + (f"\n  --> {where}" if where else ""))

    return sync


def branch_barrier_error(branch, lo: int, hi: int, why: str) -> LoweringError:
    where = source_location(branch)
    return LoweringError(
        f"the threads {lo} <= tx < {hi} of an 'if' on the thread index need a barrier among them (one "
        f"writes shared memory another reads); a block barrier inside the branch would wait for threads "
        f"that never reach it, and {why}. Move the accesses that need ordering out of the branch"
        + (f"\n  --> {where}" if where else ""))


def _refused(region):
    def sync():
        raise group_barrier_error(region)

    return sync


def group_barrier_error(region, why: str = "this backend has no barrier over a group of threads") -> LoweringError:
    calls = []
    tvm_ffi.structural_walk(region.body, [(tirx.TilePrimitiveCall, calls.append)])
    where = next((source_location(c) for c in calls if source_location(c)), None)
    return LoweringError(
        f"the tile ops under a condition on the thread index (a group of {int(region.value)} threads) "
        f"need a barrier between them (one writes shared memory another reads); a block barrier "
        f"inside the branch would wait for threads that never reach it, and {why}. Close the branch "
        f"before the second op and open a new one after it" + (f"\n  --> {where}" if where else ""))


def _loop_carried(body, inserter) -> bool:
    """Could iteration i+1 race with iteration i? Whenever an access of the body races with one
    of the body from another thread (shared_races.py, no box proved disjoint: the loop variable
    differs between iterations); not when the body's first shared access comes after a barrier of
    its own (the author's)."""
    for stmt in (body.seq if isinstance(body, tirx.SeqStmt) else [body]):
        if _is_barrier(stmt):
            return False
        if any(split_ws(stmt)):
            break
    reads, writes, ws_reads, ws_writes = inserter.accesses(body)
    reads, writes = reads + ws_reads, writes + ws_writes
    return races(reads, writes, reads, writes)


def _global_loop_carried(body, inserter) -> bool:
    """Could iteration i+1 read global memory iteration i wrote, or write what it read (from another
    thread)? Two writes alone are left alone (each iteration's stores of an output)."""
    stmts = list(body.seq) if isinstance(body, tirx.SeqStmt) else [body]
    cuts = [k for k, s in enumerate(stmts) if _is_barrier(s)]
    head = stmts[:cuts[0]] if cuts else stmts  # what the next iteration does before its first barrier
    tail = stmts[cuts[-1] + 1:] if cuts else stmts  # what this one does after its last
    if not head or not tail:
        return False
    head_r, head_w = inserter.global_accesses(seq(head))
    tail_r, tail_w = inserter.global_accesses(seq(tail))
    return races(head_r, [], [], tail_w) or races([], head_w, tail_r, [])


def _ends_with_barrier(body) -> bool:
    """Is the last statement a barrier (the author's, or one placed by this pass)? Then the next
    iteration starts with nothing pending."""
    while isinstance(body, tirx.SeqStmt):
        body = body.seq[-1]
    return _is_barrier(body)


def _append_barrier(body, sync):
    stmts = list(body.seq) if isinstance(body, tirx.SeqStmt) else [body]
    return tirx.SeqStmt(stmts + [sync()])


def insert_barriers_in_seq(stmts, ignore=frozenset(), kernel=None):
    """Barriers inside one statement list, from a clean state; accesses to ``ignore`` don't count.
    ``kernel``: the body the list is part of, whose views (T.reshape, T.view) are ordered against
    the buffers they view (else only views declared in the list are known)."""
    inserter = _Inserter(body=kernel if kernel is not None else tirx.SeqStmt(list(stmts)))
    return _visit_seq(list(stmts), inserter, ignore)


def _visit_seq(stmts, inserter, ignore=frozenset(), sync=I.syncthreads):
    out = []
    pending_r, pending_w = [], []  # block-wide code's accesses since the last barrier
    pending = []  # ... and the statements that made them (private_shared.py's check)
    ws_pending_r, ws_pending_w = [], []  # T.ws bodies' (module docstring)
    # global memory, between block-wide statements only (a list every thread runs: inside a
    # branch on the thread each thread's own accesses keep their order): a T.Parallel loop that
    # reads what an earlier one wrote reads other threads' elements (their loops' layouts are
    # each their own), which only a barrier makes visible
    global_r, global_w = [], []
    block_wide = sync is I.syncthreads and not inserter.divergent
    global_too = inserter.global_barrier is I.syncthreads  # the block barrier orders global memory
    after_tma = False  # the statement before was a T.tma_copy (module docstring)
    for s in stmts:
        if _is_barrier(s):  # the author's own (T.sync_threads, with or without an id)
            pending_r, pending_w, ws_pending_r, ws_pending_w, pending = [], [], [], [], []
            global_r, global_w = [], []
            after_tma = False
            out.append(s)
            continue
        if after_tma and not _is_tma_copy(s):
            out.append(sync())
            pending_r, pending_w, ws_pending_r, ws_pending_w, pending = [], [], [], [], []
            global_r, global_w = ([], []) if global_too else (global_r, global_w)
        after_tma = _is_tma_copy(s)
        # a pipeline region's loop starts with a wait and a barrier: only its prologue can race
        # with what came before (an async preload of Q has nothing else between it and that wait)
        entry = region_entry(s) if is_pipeline_region(s) else s
        r, w, ws_r, ws_w = (_unignored(x, ignore) for x in inserter.accesses(entry))
        g_r, g_w = (_unignored(x, ignore) for x in inserter.global_accesses(entry)) if block_wide else ([], [])
        proof = inserter.analyzer
        racing = (races(r, w, pending_r + ws_pending_r, pending_w + ws_pending_w, proof)
                  or races(ws_r, ws_w, pending_r, pending_w, proof))
        # (no T.ws body involved and every element one thread's: no race after all)
        if racing and (ws_r or ws_w or ws_pending_r or ws_pending_w or not inserter._private(*pending, s)):
            out.append(sync())
            pending_r, pending_w, ws_pending_r, ws_pending_w, pending = [], [], [], [], []
            global_r, global_w = ([], []) if global_too else (global_r, global_w)
        if races(g_r, g_w, global_r, global_w, proof):
            out.append(inserter.global_barrier())
            pending_r, pending_w, ws_pending_r, ws_pending_w, pending = [], [], [], [], []
            global_r, global_w = [], []
        out.append(inserter.visit(s, sync))
        global_r += g_r
        global_w += g_w
        if is_pipeline_region(s):
            pending_r, pending_w, pending = [], [], []  # it ends with wait_group(0) + barrier
            global_r, global_w = ([], []) if global_too else (global_r, global_w)
        else:
            pending_r += r
            pending_w += w
            if r or w:
                pending.append(s)
            ws_pending_r += ws_r
            ws_pending_w += ws_w
    if after_tma:
        out.append(sync())
    return tirx.SeqStmt(out) if len(out) > 1 else out[0]


def _unignored(found, ignore) -> list:
    return [a for a in found if a.buffer not in ignore]


def _is_barrier(stmt) -> bool:
    """A barrier the kernel wrote: the block's, or a named one over the threads that reach it
    (simt/transform/named_barriers.py checks that they are exactly the threads of its branch)."""
    if not isinstance(stmt, tirx.Evaluate) or not isinstance(stmt.value, tvm.ir.Call):
        return False
    if getattr(stmt.value.op, "name", "") == "tirx.tvm_storage_sync":
        return True
    if getattr(stmt.value.op, "name", "") == "tirx.call_extern" and \
            str(stmt.value.args[0].value) in ("tl_named_barrier", "tl_sync_threads_device"):
        return True  # a group's barrier this pass placed (named_barriers.GroupBarriers), Metal's device one
    intrinsic = IR.intrinsic_of(stmt.value)
    return intrinsic is not None and intrinsic.name == "named_barrier"


def _is_tma_copy(stmt) -> bool:
    return is_tile_op(stmt) and TileOp.from_stmt(stmt).name == "tma_copy"
