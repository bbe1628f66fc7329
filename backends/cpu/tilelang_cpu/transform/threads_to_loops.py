"""ThreadsToLoops: make a block one sequential program, turning per-thread code into thread loops.

Tile-level code (tile ops, ``T.Parallel``) is written per block and does not mention the thread
index, so for it the ``threadIdx`` launch simply disappears. A kernel that does use the thread index
(``T.get_thread_binding()``) has per-thread code; we run it as ``for tx in range(threads)`` around
each maximal run of per-thread statements between barriers, tile ops and ``T.Parallel`` loops.

Why that is sound: between two barriers, a race-free GPU program gives the same result under every
interleaving of its threads, and running the threads one after another is one such interleaving.
Tile ops, ``T.Parallel`` loops and explicit syncs are block-wide (they synchronize), so they stay
outside the thread loops and split the runs. Registers (``T.alloc_local``/``T.alloc_var``, and
``x = <expr>`` binds whose value depends on the thread) become per-thread once threads are loops:
they get a leading thread dimension.

A condition that selects a range of threads around tile ops (``if tx < 128: T.copy(A, s)``)
means, as in TileLang, that those threads perform the whole op (transform/thread_ranges.py): the
op runs once, and the per-thread statements of the branch keep the condition.

What we refuse, with a LoweringError saying why: the thread index inside a tile op, a ``T.Parallel``
loop, a loop bound, or a condition around block-wide code that is not one range of threads or that
encloses a barrier (each thread would have to stop at a different barrier, which has no
sequential equivalent).
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from tilelang_core.errors import LoweringError
from tilelang_core.ir import intrinsics as I
from tilelang_core.ir.atomic_calls import RMW_OP, atomic_calls, has_thread_atomics, is_parallel_loop
from tilelang_core.lowering import source_location
from tilelang_core.simt.transform.insert_barriers import insert_barriers
from tilelang_core.transform.bindings import is_pure
from tilelang_core.transform.lower_tile_ops import kernel_name
from tilelang_core.transform.thread_ranges import is_block_wide as tile_level, range_of, selected_range
from tilelang_core.transform.buffer_views import view_source
from tilelang_core.transform.structural import structural_map as raising_structural_map

from .emulate_warps import block_sync

THREAD_TAGS = ("threadIdx.x", "threadIdx.y", "threadIdx.z")
#: scopes that are per-thread registers on a GPU
PRIVATE_SCOPES = ("local", "local.var")
SYNC_OPS = ("tirx.tvm_storage_sync",)


def _key(obj) -> int:
    return obj.__chandle__()


def is_thread_launch(stmt) -> bool:
    return (isinstance(stmt, tirx.AttrStmt) and stmt.attr_key == "thread_extent"
            and isinstance(stmt.node, tirx.IterVar) and str(stmt.node.thread_tag) in THREAD_TAGS)


def is_sync(stmt) -> bool:
    if not isinstance(stmt, tirx.Evaluate) or not isinstance(stmt.value, tvm.ir.Call):
        return False
    op = stmt.value.op
    name = str(op.name) if isinstance(op, tvm.ir.Op) else ""
    return name in SYNC_OPS or "sync_threads" in name or name.endswith("barrier")


def named_barrier_count(stmt) -> int | None:
    """``count`` of a ``T.sync_threads(id, count)`` statement, else None."""
    if isinstance(stmt, tirx.Evaluate) and I.intrinsic_of(stmt.value) is not None \
            and I.intrinsic_of(stmt.value).name == "named_barrier":
        return int(stmt.value.args[1].value)
    return None


def _whole_block_named_barriers(body, threads: _Threads, extent):
    """Named barriers outside any branch on the thread: the block's barrier when they count the
    whole block, else refused (they would count threads that never arrive)."""
    def on_eval(stmt):
        count = named_barrier_count(stmt)
        if count is None:
            return stmt
        if not isinstance(extent, tirx.IntImm) or count != int(extent.value):
            raise LoweringError(f"kernel '{threads.kernel}': T.sync_threads(id, {count}) is outside any branch "
                                f"on the thread index, so the whole block ({extent} threads) reaches it; the "
                                "count must be the threads that reach it")
        return block_sync()

    return raising_structural_map(body, [(tirx.Evaluate, on_eval)])


def uses_vars(node, keys: set[int]) -> bool:
    found = []

    def on_var(var):
        if _key(var) in keys:
            found.append(var)

    tvm_ffi.structural_walk(node, [(tirx.Var, on_var)])
    return bool(found)


def is_per_thread(node, keys: set[int]) -> bool:
    """Does ``node`` run once per thread: it uses the thread index, or it performs a thread-level
    atomic (``T.atomic_add(count[0], 1)`` adds once per thread without naming the thread)?"""
    return uses_vars(node, keys) or has_thread_atomics(node)


def is_block_wide(node) -> bool:
    """Does ``node`` contain code all threads of a block execute together (tile ops other than
    per-thread atomics, T.Parallel loops, barriers)?"""
    if tile_level(node):
        return True
    found = []
    tvm_ffi.structural_walk(node, [(tirx.Evaluate, lambda stmt: found.append(stmt) if is_sync(stmt) else None)])
    return bool(found)


class _Threads:
    """The thread launches of one kernel and the rewriting that depends on them."""

    def __init__(self, func, launches):
        self.kernel = kernel_name(func)
        self.launches = launches  # [(Var, extent)] outermost first
        self.keys = {_key(var) for var, _ in launches}
        self.registers: list[str] = []  # names of the register buffers made per-thread

    def error(self, what: str, node=None) -> LoweringError:
        names = ", ".join(str(var) for var, _ in self.launches)
        if self.registers:  # registers carry the thread index once threads are loops
            names += " or a register " + ", ".join(repr(r) for r in self.registers)
        return LoweringError(
            f"kernel '{self.kernel}': the thread index ({names}) is used {what}. The cpu backend runs "
            f"a block as one sequential program and turns per-thread code into a loop over threads "
            f"only between block-wide operations (tile ops, T.Parallel loops, barriers). Compute "
            f"per-thread values in statements of their own, or write the block-wide part with "
            f"T.Parallel instead of the thread index."
            + (f"\n  --> {source_location(node)}" if source_location(node) else ""))

    # -- step 1: thread-dependent scalars become registers ----------------------------------------
    def binds_to_registers(self, body):
        """``x = <value using tx or a register>`` becomes a one-element register written where the
        bind was: each thread keeps its own x (step 2), and a later change to what the value read
        does not leak into x, as it would if we substituted the value into x's uses."""
        registers: dict[int, tirx.Var] = {}
        private = set()

        def collect_private(alloc):
            if str(alloc.buffer.ty.storage_scope) in PRIVATE_SCOPES:
                private.add(_key(alloc.buffer))

        elementwise = set()  # binds in T.Parallel bodies: per element, not per thread

        def collect_elementwise(loop):
            if is_parallel_loop(loop):
                tvm_ffi.structural_walk(loop.body, [(tirx.Bind, lambda b: elementwise.add(_key(b.var)))])

        def collect(bind):  # pre-order: a bind is seen before the binds that use it
            # a thread-level atomic's previous value: each thread gets its own
            returned = _key(bind.var) not in elementwise and any(
                str(c.op.name) == RMW_OP for c in atomic_calls(bind.value))
            if returned or uses_vars(bind.value, self.keys | private | set(registers)):
                registers[_key(bind.var)] = tirx.decl_buffer([1], bind.var.ty.dtype,
                                                             name=str(bind.var), scope="local")

        tvm_ffi.structural_walk(body, [(tirx.AllocBuffer, collect_private), (tirx.For, collect_elementwise)])
        tvm_ffi.structural_walk(body, [(tirx.Bind, collect)], order="pre")
        if not registers:
            return body

        def splice(seq):
            out = []
            for stmt in seq.seq:
                reg = registers.get(_key(stmt.var)) if isinstance(stmt, tirx.Bind) else None
                if reg is None:
                    out.append(stmt)
                else:  # the declaration stays in this sequence so it scopes over the same statements
                    out += [tirx.AllocBuffer(reg), tirx.BufferStore(reg, stmt.value, [0])]
            return tirx.SeqStmt(out)

        def use(var):
            reg = registers.get(_key(var))
            return var if reg is None else tirx.BufferLoad(reg, [0])

        # Two maps: the bind's own variable (a definition) must be gone before uses are replaced.
        body = tvm_ffi.structural_map(body, [(tirx.SeqStmt, splice)])
        return tvm_ffi.structural_map(body, [(tirx.Var, use)])

    # -- step 2: registers get one copy per thread ------------------------------------------------
    def privatize_registers(self, body):
        expanded: dict[int, tirx.Var] = {}

        def collect(alloc):
            buf = alloc.buffer
            if str(buf.ty.storage_scope) in PRIVATE_SCOPES:
                shape = [extent for _, extent in self.launches] + list(buf.ty.shape)
                expanded[_key(buf)] = tirx.decl_buffer(shape, buf.ty.dtype, name=str(buf),
                                                       scope="local")
                self.registers.append(str(buf))

        view_data = {}  # view -> the data of the expanded register it views

        def collect_view(decl):  # T.view / T.reshape of a register: a view of its thread's copy
            source = view_source(decl)
            if source is not None and _key(source) in expanded:
                shape = [extent for _, extent in self.launches] + list(decl.buffer.ty.shape)
                expanded[_key(decl.buffer)] = tirx.decl_buffer(shape, decl.buffer.ty.dtype,
                                                               name=str(decl.buffer), scope="local")
                view_data[_key(decl.buffer)] = expanded[_key(source)].data

        tvm_ffi.structural_walk(body, [(tirx.AllocBuffer, collect)])
        tvm_ffi.structural_walk(body, [(tirx.DeclBuffer, collect_view)], order="pre")
        if not expanded:
            return body
        thread_index = [var for var, _ in self.launches]

        def load(node):
            new = expanded.get(_key(node.source))
            return node if new is None else tirx.BufferLoad(new, thread_index + list(node.indices))

        def store(node):
            new = expanded.get(_key(node.buffer))
            if new is None:
                return node
            return tirx.BufferStore(new, node.value, thread_index + list(node.indices))

        def alloc(node):
            new = expanded.get(_key(node.buffer))
            return node if new is None else tirx.AllocBuffer(new, node.annotations)

        def decl(node):
            new = expanded.get(_key(node.buffer))
            return node if new is None else tirx.DeclBuffer(new, data=view_data[_key(node.buffer)])

        def region(node):
            if _key(node.source) in expanded:
                raise self.error(f"through the register buffer '{node.source}' passed to a tile op",
                                 node)
            return node

        # Post-order: loads inside a store's value are rewritten before the store itself.
        return raising_structural_map(body, [(tvm.ir.TensorLoad, load), (tirx.BufferStore, store),
                                             (tirx.AllocBuffer, alloc), (tirx.DeclBuffer, decl),
                                             (tvm.ir.TensorRegion, region)])

    # -- step 3: wrap runs of per-thread statements in thread loops ------------------------------
    def wrap(self, stmt):
        fresh = {_key(var): tirx.Var(str(var), var.ty.dtype) for var, _ in self.launches}
        stmt = tvm_ffi.structural_map(stmt, [(tirx.Var, lambda v: fresh.get(_key(v), v))])
        for var, extent in reversed(self.launches):
            loop_var = fresh[_key(var)]
            stmt = tirx.For(loop_var, tirx.const(0, loop_var.ty.dtype), extent, tirx.ForKind.SERIAL, stmt)
        return stmt

    def split(self, stmt):
        if not is_per_thread(stmt, self.keys):
            return stmt
        # Launch chains, attributes and sequences are structure, never wrapped whole: block launches
        # and shared allocations must stay outside the thread loops (one copy per block).
        if isinstance(stmt, tirx.AttrStmt):
            return tirx.AttrStmt(stmt.node, stmt.attr_key, stmt.value, self.split(stmt.body))
        if isinstance(stmt, tirx.SeqStmt):
            return self._split_seq(list(stmt.seq))
        if not is_block_wide(stmt):
            return self.wrap(stmt)
        if isinstance(stmt, tirx.For):
            if stmt.annotations is not None and "tl.parallel" in stmt.annotations:
                raise self.error("inside a T.Parallel loop", stmt)
            if uses_vars(stmt.min, self.keys) or uses_vars(stmt.extent, self.keys):
                raise self.error(f"in the bounds of loop '{stmt.loop_var}', which contains block-wide "
                                 f"operations", stmt)
            return tirx.For(stmt.loop_var, stmt.min, stmt.extent, stmt.kind, self.split(stmt.body),
                            annotations=stmt.annotations)
        if isinstance(stmt, tirx.IfThenElse):
            if uses_vars(stmt.condition, self.keys):
                return self.split(self.distribute(stmt))
            else_case = self.split(stmt.else_case) if stmt.else_case is not None else None
            return tirx.IfThenElse(stmt.condition, self.split(stmt.then_case), else_case)
        if isinstance(stmt, tirx.TilePrimitiveCall):
            raise self.error(f"in an operand of tile op '{stmt.op.name}'", stmt)
        raise self.error(f"in a {type(stmt).__name__} statement that also holds block-wide "
                         f"operations", stmt)

    def distribute(self, branch):
        """``if <thread range>: ...`` around block-wide code (TileLang: the selected threads
        perform the whole op): the block-wide statements run once, when the range is not empty
        (and the terms of the condition that do not involve the thread hold); every other
        statement keeps the whole condition and becomes per-thread code."""
        def refuse():
            return self.error("in a condition that encloses block-wide operations (tile ops, "
                              "T.Parallel loops or barriers) and does not select one range of "
                              "threads (write it as 'tx >= lo and tx < hi' with constant bounds)", branch)

        if len(self.launches) != 1 or not isinstance(self.launches[0][1], tirx.IntImm):
            raise refuse()
        tx, extent = self.launches[0][0], int(self.launches[0][1].value)
        selected, uniform = selected_range(branch.condition, tx, extent)
        if selected is None:
            raise refuse()
        lo, hi = selected
        uniform_cond = None
        for term in uniform:
            uniform_cond = term if uniform_cond is None else tirx.And(uniform_cond, term)
        then_case = self._spread(branch.then_case, branch.condition, hi > lo, uniform_cond, branch, hi - lo)
        if branch.else_case is None:
            return then_case
        if uniform and is_block_wide(branch.else_case):
            raise refuse()
        runs = not (lo <= 0 and hi >= extent)  # the complement of the range is not empty
        else_case = self._spread(branch.else_case, tirx.Not(branch.condition), runs, None, branch, None)
        return tirx.SeqStmt([then_case, else_case])

    def _spread(self, stmt, cond, runs: bool, uniform_cond, branch, size):
        if isinstance(stmt, tirx.Bind) and uses_vars(stmt.value, self.keys) and not is_pure(stmt.value):
            # it would run for every thread: a read past the range's data
            raise self.error(f"in the value of '{stmt.var}', which reads memory in a branch on the "
                             f"thread index that also holds tile ops; read it in a branch of its own",
                             branch)
        if isinstance(stmt, (tirx.Bind, tirx.AllocBuffer, tirx.DeclBuffer)):
            # declarations scope over the rest of their sequence: under a condition of their own
            # they would end there, before the statements (now each under the condition) using them
            return stmt
        if not is_block_wide(stmt):
            return tirx.IfThenElse(cond, stmt, None)
        if isinstance(stmt, tirx.SeqStmt):
            return tirx.SeqStmt([self._spread(s, cond, runs, uniform_cond, branch, size) for s in stmt.seq])
        if isinstance(stmt, tirx.For) and not is_parallel_loop(stmt):
            return tirx.For(stmt.loop_var, stmt.min, stmt.extent, stmt.kind,
                            self._spread(stmt.body, cond, runs, uniform_cond, branch, size),
                            stmt.thread_binding, stmt.annotations, stmt.step)
        if isinstance(stmt, tirx.IfThenElse) and uses_vars(stmt.condition, self.keys):
            # a range inside a range: each branch with both conditions
            parts = [self.distribute(tirx.IfThenElse(tirx.And(cond, stmt.condition), stmt.then_case, None))]
            if stmt.else_case is not None:
                parts.append(self.distribute(tirx.IfThenElse(tirx.And(cond, tirx.Not(stmt.condition)),
                                                             stmt.else_case, None)))
            return parts[0] if len(parts) == 1 else tirx.SeqStmt(parts)
        if isinstance(stmt, tirx.IfThenElse):
            else_case = (self._spread(stmt.else_case, cond, runs, uniform_cond, branch, size)
                         if stmt.else_case is not None else None)
            return tirx.IfThenElse(stmt.condition, self._spread(stmt.then_case, cond, runs, uniform_cond, branch, size),
                                   else_case)
        count = named_barrier_count(stmt)
        if count is not None:
            # TileLang's T.sync_threads(id, count) over the threads of this branch: a split point
            # between the branch's thread loops, like the block's barrier
            if count != size:
                raise self.error(f"in a condition around T.sync_threads(id, {count}) that selects "
                                 f"{'no single range of' if size is None else size} threads (the count must "
                                 "be the threads of the branch)", branch)
            return block_sync()
        if is_sync(stmt) or not tile_level(stmt):
            raise self.error("in a condition that encloses a barrier", branch)
        if not runs:
            return tirx.Evaluate(tirx.const(0, "int32"))
        return stmt if uniform_cond is None else tirx.IfThenElse(uniform_cond, stmt, None)

    def _split_seq(self, seq):
        """Consecutive per-thread statements share one thread loop. Everything else stays in place
        and runs once: declarations (they scope over the rest of the sequence), block-wide
        statements (split recursively), and uniform statements, which mean "once per block" in
        tile-level code; running them per thread would differ only for a race on the GPU."""
        out, run = [], []

        def flush():
            if run:
                out.append(self.wrap(run[0] if len(run) == 1 else tirx.SeqStmt(list(run))))
                run.clear()

        for stmt in seq:
            if isinstance(stmt, (tirx.AllocBuffer, tirx.DeclBuffer, tirx.Bind)) \
                    or not is_per_thread(stmt, self.keys) or is_block_wide(stmt):
                flush()
                out.append(self.split(stmt))
            else:
                run.append(stmt)
        flush()
        return out[0] if len(out) == 1 else tirx.SeqStmt(out)  # (TVM refuses a SeqStmt of one)


def _thread_launches(body):
    launches = []

    def on_attr(attr):
        if is_thread_launch(attr):
            launches.append((attr.node.var, attr.value))

    tvm_ffi.structural_walk(body, [(tirx.AttrStmt, on_attr)], order="pre")
    return launches


def threads_to_loops(func: tirx.PrimFunc) -> tirx.PrimFunc:
    launches = _thread_launches(func.body)
    if not launches:
        return func
    keys = {_key(var) for var, _ in launches}
    if is_per_thread(func.body, keys):
        # the barriers the GPU backends would insert (TileLang's rule: the compiler orders the
        # threads' shared accesses) are this backend's split points too; without them one thread
        # loop would run a read before the write of a later thread it depends on
        func = func.with_body(insert_barriers(func.body, range_barrier=_range_barrier(launches)))
    body = tvm_ffi.structural_map(func.body, [(tirx.AttrStmt,
                                               lambda a: a.body if is_thread_launch(a) else a)])
    threads = _Threads(func, launches)
    if not is_per_thread(body, threads.keys):
        # tile-level kernel: the threads just disappear
        return func.with_body(_whole_block_named_barriers(body, threads, launches[0][1]))
    body = threads.binds_to_registers(body)
    body = threads.privatize_registers(body)
    body = _whole_block_named_barriers(threads.split(body), threads, launches[0][1])
    if uses_vars(body, threads.keys):  # a use the split could not place in a thread loop
        raise threads.error("outside any statement that can become a loop over threads")
    return func.with_body(body)


def _range_barrier(launches):
    """insert_barriers' barrier inside ``if <thread range>:``: a named barrier counting the range,
    which ``_Threads._spread`` turns into a split between the branch's thread loops."""
    def barrier(_branch, conds):
        if len(launches) != 1 or not isinstance(launches[0][1], tirx.IntImm):
            return None
        selected = range_of(conds, launches[0][0], int(launches[0][1].value))
        if selected is None:
            return None
        count = selected[1] - selected[0]
        return lambda: tirx.Evaluate(I.call("named_barrier", "void", tirx.const(1, "int32"),
                                            tirx.const(count, "int32")))

    return barrier


def ThreadsToLoops():  # noqa: N802 (TVM pass naming)
    @tirx.transform.prim_func_pass(opt_level=0, name="tl.cpu.ThreadsToLoops")
    def _pass(func, _mod, _ctx):
        return threads_to_loops(func)

    return _pass
