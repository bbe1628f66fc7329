"""EmulateWarps (cpu): warp- and block-collective intrinsics (T.ballot_sync, T.shfl_*,
T.warp_reduce_*, T.match_*_sync, T.syncthreads_*, T.sync_warp, T.activemask, T.shuffle_elect) as
an exchange through block memory, so that the cpu backend, which runs a block's threads one
after another, computes what the warp would.

Why that is sound: a statement that calls a collective op becomes

    scratch[tid] = operand            every thread publishes its operand
    barrier                           (threads_to_loops ends the thread loop here)
    statement, the op replaced by     every thread reads its warp's (block's) operands
      a function of scratch[...]
    barrier                           the next publication cannot overwrite them early

and ThreadsToLoops runs each side as a loop over threads, so every thread has published before
any reads. That is only the GPU's meaning when every lane executes the op together, which is
what the op requires: the statement must not sit under an ``if``/loop whose condition differs
between threads (then it is refused), and lanes the warp does not have count as exited. What the
hardware leaves undefined is refused rather than guessed: shuffles and warp reductions in blocks
that are not whole warps (a lane could read a lane that does not exist), a collective inside a
lazily evaluated operand (``T.if_then_else``), in a loop bound or condition, or inside another
collective's operands. Warps are TileLang's default 32 lanes (lower_intrinsics.WARP_SIZE).
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from tilelang_core.errors import LoweringError
from tilelang_core.ir import intrinsics as I
from tilelang_core.lowering import source_location, user_span
from tilelang_core.transform.lower_tile_ops import kernel_name
from tilelang_core.transform.safe_values import is_if_then_else

THREAD_TAGS = ("threadIdx.x", "threadIdx.y", "threadIdx.z")
PRIVATE = ("local", "local.var", "local.fragment")


def _key(obj) -> int:
    return obj.__chandle__()


def block_sync():
    """The block's barrier statement (TVM's ``tvm_storage_sync("shared")``)."""
    return tirx.Evaluate(tirx.call_intrin("int32", "tirx.tvm_storage_sync", "shared"))


class _Emulation:
    def __init__(self, func, warp: int):
        self.func = func
        self.warp = warp
        launches = []

        def on_attr(attr):
            if attr.attr_key == "thread_extent" and isinstance(attr.node, tirx.IterVar) \
                    and str(attr.node.thread_tag) in THREAD_TAGS:
                launches.append((str(attr.node.thread_tag), attr.node.var, int(attr.value)))

        tvm_ffi.structural_walk(func.body, [(tirx.AttrStmt, on_attr)], order="pre")
        launches.sort(key=lambda t: t[0])  # x, y, z
        self.tid, stride = tirx.const(0, "int32"), 1
        for _, var, extent in launches:
            self.tid = self.tid + var * stride
            stride *= extent
        self.threads = stride
        self.tainted = {_key(var) for _, var, _ in launches}
        self.allocs: list = []
        self.count = 0

    # -- refusals -----------------------------------------------------------------------------
    def refuse(self, intrinsic, stmt, why: str, instead: str | None = None) -> LoweringError:
        where = source_location(stmt) if stmt is not None else None
        instead = instead or (
            f"The cpu backend runs a block's threads one after another and emulates a {intrinsic.scope}-"
            f"collective op only where every lane executes it together; otherwise it needs a GPU backend "
            f"(target='cuda', 'hip' or 'metal'; tilelang_core.testing.oracle runs their SIMT interpreters "
            f"without one)")
        return LoweringError(f"T.{intrinsic.spelling} in kernel '{kernel_name(self.func)}' cannot run on the cpu "
                             f"backend: {why}. {instead}" + (f"\n  --> {where}" if where else ""))

    def collectives(self, node):
        # (a named barrier is a barrier: threads_to_loops.py splits the thread loops there)
        return [c for c in I.calls_in(node) if I.intrinsic_of(c).collective
                and I.intrinsic_of(c).name != "named_barrier"]

    def depends_on_thread(self, expr) -> bool:
        found = []

        def on_var(v):
            if _key(v) in self.tainted:
                found.append(v)

        def on_load(load):
            if str(load.source.ty.storage_scope) in PRIVATE:
                found.append(load)

        tvm_ffi.structural_walk(expr, [(tirx.Var, on_var), (tvm.ir.TensorLoad, on_load)])
        return bool(found) or bool(self.collectives(expr))

    # -- walk ---------------------------------------------------------------------------------
    def visit(self, stmt, divergent: bool, where):
        where = stmt if user_span(stmt) is not None else where
        if isinstance(stmt, tirx.SeqStmt):
            out = []
            for s in stmt.seq:
                new = self.visit(s, divergent, where)
                out.extend(new.seq if isinstance(new, tirx.SeqStmt) else [new])
            return out[0] if len(out) == 1 else tirx.SeqStmt(out)
        if isinstance(stmt, tirx.For):
            for e in (stmt.min, stmt.extent):
                self.no_collective_in(e, where, "in a loop bound")
            if stmt.annotations is not None and "tl.parallel" in stmt.annotations and self.collectives(stmt.body):
                call = self.collectives(stmt.body)[0]
                raise self.refuse(I.intrinsic_of(call), where, "it is inside a T.Parallel loop")
            body = self.visit(stmt.body, divergent or self.depends_on_thread(stmt.extent)
                              or self.depends_on_thread(stmt.min), where)
            return tirx.For(stmt.loop_var, stmt.min, stmt.extent, stmt.kind, body, stmt.thread_binding,
                            stmt.annotations, step=stmt.step, span=stmt.span)
        if isinstance(stmt, tirx.IfThenElse):
            self.no_collective_in(stmt.condition, where, "in an 'if' condition (bind it to a name first)")
            inner = divergent or self.depends_on_thread(stmt.condition)
            then = self.visit(stmt.then_case, inner, where)
            other = self.visit(stmt.else_case, inner, where) if stmt.else_case is not None else None
            return tirx.IfThenElse(stmt.condition, then, other, stmt.span)
        if isinstance(stmt, tirx.While):
            self.no_collective_in(stmt.condition, where, "in a loop condition")
            return tirx.While(stmt.condition, self.visit(stmt.body, True, where), stmt.span)
        if isinstance(stmt, tirx.AttrStmt):
            self.no_collective_in(stmt.value, where, "in an attribute")
            return tirx.AttrStmt(stmt.node, stmt.attr_key, stmt.value, self.visit(stmt.body, divergent, where),
                                 stmt.span)
        if isinstance(stmt, tirx.Bind) and self.depends_on_thread(stmt.value):
            self.tainted.add(_key(stmt.var))
        calls = self.collectives(stmt)
        if not calls:
            return stmt
        if not isinstance(stmt, (tirx.BufferStore, tirx.Bind, tirx.Evaluate)):
            raise self.refuse(I.intrinsic_of(calls[0]), where, f"it is in a {type(stmt).__name__} statement")
        if divergent:
            raise self.refuse(I.intrinsic_of(calls[0]), where, "it is under an 'if' or loop that depends on the "
                              "thread index, so only some lanes would execute it")
        return self.expand(stmt, calls, where)

    def no_collective_in(self, expr, where, what: str):
        calls = self.collectives(expr)
        if calls:
            raise self.refuse(I.intrinsic_of(calls[0]), where, f"it is {what}")

    # -- one statement ------------------------------------------------------------------------
    def expand(self, stmt, calls, where):
        lazy, nested = [], []  # (raised after the walk: an exception would cross TVM's FFI)

        def on_call(call):
            if is_if_then_else(call):
                lazy.extend(self.collectives(call.args[1]) + self.collectives(call.args[2]))
            elif I.intrinsic_of(call) is not None and I.intrinsic_of(call).collective:
                nested.extend((inner, call) for a in call.args for inner in self.collectives(a))

        tvm_ffi.structural_walk(stmt, [(tvm.ir.Call, on_call)])
        if nested:
            inner, outer = nested[0]
            raise self.refuse(I.intrinsic_of(inner), where, f"it is in an operand of "
                              f"T.{I.intrinsic_of(outer).spelling} (bind it to a name first)")
        if lazy:
            raise self.refuse(I.intrinsic_of(lazy[0]), where, "it is in a branch of T.if_then_else, which only "
                              "some lanes would evaluate")
        publish, uniform, results = [], [], []
        for call in calls:
            results.append((call, self.emulate(call, publish, uniform, where)))

        def replace(node):
            for call, value in results:
                if node.same_as(call):
                    return value
            return node

        if isinstance(stmt, tirx.Evaluate) and I.intrinsic_of(stmt.value) is not None \
                and I.intrinsic_of(stmt.value).name == "sync_warp":
            rest = []  # a block barrier is a warp barrier for every warp
        else:
            rest = [tvm_ffi.structural_map(stmt, [(tvm.ir.Call, replace)])]
        return tirx.SeqStmt([*publish, block_sync(), *uniform, *rest, block_sync()])

    def scratch(self, value, publish, dtype=None):
        """A block array every thread writes its ``value`` to; returns the array."""
        dtype = dtype or str(value.ty)
        if dtype == "bool":
            dtype, value = "int32", tirx.Cast("int32", value)
        padded = -(-self.threads // self.warp) * self.warp  # lanes a partial warp lacks are read, then masked
        self.count += 1
        buf = tirx.decl_buffer((padded,), dtype, name=f"warp_exchange{self.count}", scope="shared")
        self.allocs.append(buf)
        publish.append(tirx.BufferStore(buf, value, [self.tid]))
        return buf

    def butterfly(self, values, combine) -> list:
        """Uniform loops that leave in ``values`` every warp's reduction, combined in the order of
        the GPU helpers' xor butterfly (offsets warp / 2 .. 1; the same rounding as there)."""
        ws, n = self.warp, self.threads
        self.count += 1
        partner = tirx.decl_buffer((n,), str(values.ty.dtype), name=f"warp_butterfly{self.count}", scope="shared")
        self.allocs.append(partner)
        loops, offset = [], ws // 2

        def each(body_of):
            i = tirx.Var("i", "int32")
            return tirx.For(i, tirx.const(0, "int32"), tirx.const(n, "int32"), tirx.ForKind.SERIAL, body_of(i))

        while offset:
            o = offset
            loops.append(each(lambda i: tirx.BufferStore(partner, combine(
                tirx.BufferLoad(values, [i]),
                tirx.BufferLoad(values, [tirx.floordiv(i, ws) * ws + tirx.bitwise_xor(tirx.floormod(i, ws), o)])),
                [i])))
            loops.append(each(lambda i: tirx.BufferStore(values, tirx.BufferLoad(partner, [i]), [i])))
            offset //= 2
        return loops

    def emulate(self, call, publish, uniform, where):
        intrinsic = I.intrinsic_of(call)
        name, args, ws = intrinsic.name, list(call.args), self.warp
        tid = self.tid
        base = tirx.floordiv(tid, ws) * ws
        lane = tirx.floormod(tid, ws)

        def exists(l):
            return base + l < self.threads

        def named(mask, l):
            return tirx.bitwise_and(tirx.shift_right(mask, tirx.const(l, "uint32")), tirx.const(1, "uint32")) \
                != tirx.const(0, "uint32")

        def gather(cond_of_lane, dtype):
            out = tirx.const(0, dtype)
            for l in range(ws):
                out = tirx.bitwise_or(out, tirx.Select(cond_of_lane(l), tirx.const(1 << l, dtype),
                                                       tirx.const(0, dtype)))
            return out

        def whole_warps():
            if self.threads % ws:
                raise self.refuse(intrinsic, where, f"the block's {self.threads} threads are not whole "
                                  f"{ws}-lane warps, so a lane could read one that does not exist")

        if name in ("ballot_sync", "ballot", "any_sync", "all_sync"):
            mask = tirx.const(I.FULL_MASK, "uint32") if name == "ballot" else args[0]
            votes = self.scratch(args[-1], publish)
            ballot = gather(lambda l: tirx.And(tirx.And(exists(l), named(mask, l)),
                                               tirx.BufferLoad(votes, [base + l]) != 0), "uint64")
            if name in ("ballot_sync", "ballot"):
                return ballot
            if name == "any_sync":
                return tirx.Cast("int32", ballot != tirx.const(0, "uint64"))
            voters = gather(lambda l: tirx.And(exists(l), named(mask, l)), "uint64")
            return tirx.Cast("int32", ballot == voters)
        if name == "activemask":
            return gather(exists, "uint64")
        if name in ("match_any_sync", "match_all_sync"):
            mask, value = args
            values = self.scratch(value, publish)

            def bits(v):
                dt = str(v.ty)
                return tirx.reinterpret(f"uint{tvm.runtime.DataType(dt).bits}", v) if dt.startswith("float") else v

            own = tirx.BufferLoad(values, [tid])
            peers = gather(lambda l: tirx.And(tirx.And(exists(l), named(mask, l)),
                                              bits(tirx.BufferLoad(values, [base + l])) == bits(own)), "uint32")
            if name == "match_any_sync":
                return peers
            voters = gather(lambda l: tirx.And(exists(l), named(mask, l)), "uint32")
            return tirx.Select(peers == voters, mask, tirx.const(0, "uint32"))
        if name in ("shfl_sync", "shfl_xor", "shfl_down", "shfl_up"):
            whole_warps()
            width = int(args[3].value)
            if width > ws:
                raise self.refuse(intrinsic, where, f"width={width} is more than the {ws} lanes of a warp")
            values = self.scratch(args[1], publish)
            return tirx.BufferLoad(values, [base + I.shuffle_source_lane(name, lane, args[2], width, ws)])
        if name.startswith("warp_reduce_"):
            whole_warps()
            values = self.scratch(args[0], publish)
            combine = {"sum": lambda a, b: a + b, "max": _fmax, "min": _fmin,
                       "bitand": tirx.bitwise_and, "bitor": tirx.bitwise_or}[name[len("warp_reduce_"):]]
            uniform += self.butterfly(values, combine)
            return tirx.BufferLoad(values, [tid])
        if name == "sync_warp":
            return tirx.const(0, "int32")  # the statement becomes the barriers themselves
        if name == "shuffle_elect":
            extent = int(args[1].value)
            if extent % ws:
                raise self.refuse(intrinsic, where, f"thread_extent={extent} is not 0 or a multiple of the "
                                  f"{ws}-lane warp")
            warp = tirx.floordiv(args[0], ws)
            first = warp == 0 if extent == 0 else tirx.floormod(warp, extent // ws) == 0
            return tirx.And(first, lane == 0)  # every lane executes it: the lowest is lane 0
        if name.startswith("syncthreads_"):
            votes = self.scratch(args[0], publish)
            self.count += 1
            total = tirx.decl_buffer((1,), "int32", name=f"block_votes{self.count}", scope="shared")
            self.allocs.append(total)
            t = tirx.Var("t", "int32")
            uniform += [tirx.BufferStore(total, tirx.const(0, "int32"), [0]),
                        tirx.For(t, tirx.const(0, "int32"), tirx.const(self.threads, "int32"), tirx.ForKind.SERIAL,
                                 tirx.BufferStore(total, tirx.BufferLoad(total, [0])
                                                  + tirx.Cast("int32", tirx.BufferLoad(votes, [t]) != 0), [0]))]
            count = tirx.BufferLoad(total, [0])
            if name == "syncthreads_count":
                return count
            if name == "syncthreads_and":
                return tirx.Cast("int32", count == self.threads)
            return tirx.Cast("int32", count > 0)
        if name == "mbarrier_init":
            raise self.refuse(intrinsic, where, "it runs a block's threads one after another, so a thread waiting "
                              "on an mbarrier for another thread's arrival would wait forever",
                              "Hand-written warp specialization needs target='cuda' (sm_80 or newer; "
                              "tilelang_core.testing.oracle runs its SIMT interpreter without a GPU)")
        if name in ("ldmatrix", "mma_sync"):
            raise self.refuse(intrinsic, where, "it is NVIDIA's warp matrix instruction (ldmatrix / mma.sync), "
                              "which the cpu backend does not emulate",
                              "Write the product with T.gemm (every backend lowers it), or compile for "
                              "target='cuda' (tilelang_core.testing.oracle runs its SIMT interpreter without a GPU)")
        raise self.refuse(intrinsic, where, "it has no cpu emulation (a gap in tilelang-cpu: please report it)")


def _fmax(a, b):  # NaN-ignoring, like fmaxf and the GPU helpers
    if str(a.ty).startswith(("float", "bfloat")):
        return tirx.Select(tirx.isnan(a), b, tirx.Select(tirx.isnan(b), a, tirx.max(a, b)))
    return tirx.max(a, b)


def _fmin(a, b):
    if str(a.ty).startswith(("float", "bfloat")):
        return tirx.Select(tirx.isnan(a), b, tirx.Select(tirx.isnan(b), a, tirx.min(a, b)))
    return tirx.min(a, b)


def emulate_warps(func: tirx.PrimFunc, warp: int) -> tirx.PrimFunc:
    emulation = _Emulation(func, warp)
    body = emulation.visit(func.body, False, None)
    if not emulation.allocs:
        return func.with_body(body)

    def insert(node):  # the block arrays go inside the innermost thread launch, before its body
        if isinstance(node, tirx.AttrStmt) and node.attr_key == "thread_extent" \
                and str(node.node.thread_tag) in THREAD_TAGS and not _has_thread_launch(node.body):
            allocs = [tirx.AllocBuffer(b) for b in emulation.allocs]
            inner = node.body.seq if isinstance(node.body, tirx.SeqStmt) else [node.body]
            return tirx.AttrStmt(node.node, node.attr_key, node.value, tirx.SeqStmt([*allocs, *inner]), node.span)
        return node

    return func.with_body(tvm_ffi.structural_map(body, [(tirx.AttrStmt, insert)]))


def _has_thread_launch(stmt) -> bool:
    found = []
    tvm_ffi.structural_walk(stmt, [(tirx.AttrStmt, lambda a: found.append(a) if a.attr_key == "thread_extent"
                                    and str(a.node.thread_tag) in THREAD_TAGS else None)])
    return bool(found)
