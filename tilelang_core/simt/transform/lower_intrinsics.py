"""CheckIntrinsics and LowerIntrinsics: TileLang's thread-level intrinsics (votes, shuffles, warp
reductions, lane queries, bit scans, ``T.__ldg``; tilelang_core/ir/intrinsics.py) -> the kit's
device helpers (their contract is in tilelang_core/simt/__init__.py) and plain arithmetic.

CheckIntrinsics runs first, on the tile-level kernel, where the constructs that decide who
executes an op are still visible. It refuses, naming the op and the line:
* a warp- or block-collective op inside ``T.Parallel`` (each thread runs its own share of the
  elements, so the lanes would vote on different elements) or in a tile op's operands;
* a block vote (``T.syncthreads_*``) inside ``T.Pipelined`` (warp specialization may run the body
  on part of the block), under an ``if`` that depends on the thread index (a barrier that part
  of the block never reaches), or on a backend without them (``SimtDialect.block_votes``);
* a named barrier ``T.sync_threads(id, count)`` whose count is not the threads that reach it
  (named_barriers.py);
* an explicit vector access (T.ldg128 and kin) whose start is not provably aligned, or wider
  than ``SimtDialect.vector_bytes``;
and turns ``T.__ldg`` of a buffer the kernel writes into a plain load (the read-only cache is
not coherent with the kernel's own stores).

LowerIntrinsics runs after ApplyLayouts. Everything a warp size decides is computed here from
``SimtDialect.warp_size`` in TIRX, once for every backend: lane and warp indices, the source lane
of each shuffle form (CUDA's rules for ``width``, up/down clamping and xor groups), the
``shuffle_elect`` group test, and the lane mask widened to the helper's 64 bits. What is left to
a backend's prelude is the vendor instruction: ``tl_ballot_sync``, ``tl_shfl_sync`` (read lane L),
``tl_warp_reduce_*``, ... . Refused here: a 32-bit mask other than the full one on a warp wider
than 32 lanes (it cannot name lanes 32..63), ``T.match_*_sync`` there (its uint32 result cannot
either), a shuffle ``width`` above the warp size, ``T.warp_reduce_*`` in a block that is not whole
warps, ``T.shuffle_elect`` groups that are not whole warps. The lowered kernel records its warp
size as the attribute ``tl.warp_size`` (the interpreter's warps; simt/pipeline.py sets it on every kernel).
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from tilelang_core.errors import LoweringError
from tilelang_core.ir import intrinsics as I
from tilelang_core.lowering import source_location, user_span
from tilelang_core.transform.bindings import written_buffers
from tilelang_core.transform.lower_tile_ops import bind_loop_ranges

from .mbarriers import MBARRIER_OPS, lower_mbarrier
from .warp_matrix import WARP_MATRIX_OPS, lower_warp_matrix
from .named_barriers import check_named_barriers, lower_named_barrier
from .state import KernelState, uses_var

#: PrimFunc attribute: the warp size the kernel's helpers assume
WARP_SIZE_ATTR = "tl.warp_size"


def print_kind(value) -> tuple[str, tirx.PrimExpr]:
    """(kind, value widened): T.print's value as "int" (int64), "uint" (uint64), "float" (float64;
    every float type through float32, which half, bfloat16 and fp8 convert to) or "bool"."""
    dtype = tvm.DataType(str(value.ty))
    if str(value.ty) == "bool":
        return "bool", value
    if dtype.type_code == tvm.DataTypeCode.INT:
        return "int", tirx.Cast("int64", value)
    if dtype.type_code == tvm.DataTypeCode.UINT:
        return "uint", tirx.Cast("uint64", value)
    return "float", tirx.Cast("float64", value if dtype.bits == 64 else tirx.Cast("float32", value))


def _error(st: KernelState, intrinsic, stmt, message: str) -> LoweringError:
    where = source_location(stmt) if stmt is not None else None
    text = (f"T.{intrinsic.spelling} in kernel '{st.kernel}' cannot be lowered for backend "
            f"'{st.dialect.kind}': {message}")
    return LoweringError(text + (f"\n  --> {where}" if where else ""))


def check_intrinsics(body, st: KernelState):
    """Refuse intrinsics where the kit cannot keep their meaning (see the module docstring);
    ``T.__ldg`` of a written buffer becomes a plain load."""
    _check_vector_alignment(body, st)
    if not I.calls_in(body):
        return body
    check_named_barriers(body, st, lambda intrinsic, stmt, message: _error(st, intrinsic, stmt, message))
    written = written_buffers(body)

    def check(node, where, parallel: bool, pipelined: bool, divergent: bool):
        for call in I.calls_in(node):
            intrinsic = I.intrinsic_of(call)
            if intrinsic.name in ("cp_async_commit", "cp_async_wait") and pipelined:
                raise _error(st, intrinsic, where, "inside T.Pipelined, whose async-copy groups the software "
                             "pipeline counts itself; use a T.serial loop for a hand-written pipeline")
            if intrinsic.name in WARP_MATRIX_OPS and not st.dialect.warp_matrix:
                raise _error(st, intrinsic, where, f"it is NVIDIA's warp matrix instruction (ldmatrix / "
                             f"mma.sync), which the {st.dialect.kind} backend does not have; write the product "
                             f"with T.gemm (every backend lowers it), or compile for cuda")
            if not intrinsic.collective or intrinsic.name == "named_barrier":  # (named_barriers.py)
                continue
            if parallel:
                raise _error(st, intrinsic, where, "it is collective (the lanes execute it together) and is "
                             "inside a T.Parallel loop, where each thread runs its own share of the elements; "
                             "compute the operand into a T.alloc_local / T.alloc_var per thread and call it "
                             "outside the loop")
            if intrinsic.scope == "block" and not st.dialect.block_votes:
                raise _error(st, intrinsic, where, f"the {st.dialect.kind} backend has no block-wide vote; count "
                             "the predicate with T.atomic_add into a T.alloc_shared counter between "
                             "T.sync_threads() calls")
            if intrinsic.scope == "block" and pipelined:
                raise _error(st, intrinsic, where, "a block-wide vote inside T.Pipelined: the pipeline may run "
                             "the body on part of the block (warp specialization); vote outside the loop")
            if intrinsic.scope == "block" and divergent:
                raise _error(st, intrinsic, where, "a block-wide vote under an 'if' on the thread index: the "
                             "threads that skip it never reach the barrier; vote outside the 'if'")

    def visit(node, where, parallel=False, pipelined=False, divergent=False):
        where = node if user_span(node) is not None else where
        if isinstance(node, tirx.SeqStmt):
            for s in node.seq:
                visit(s, where, parallel, pipelined, divergent)
        elif isinstance(node, tirx.For):
            ann = node.annotations or {}
            check(node.min, where, parallel, pipelined, divergent)
            check(node.extent, where, parallel, pipelined, divergent)
            visit(node.body, where, parallel or "tl.parallel" in ann, pipelined or "tl.num_stages" in ann,
                  divergent)
        elif isinstance(node, tirx.IfThenElse):
            check(node.condition, where, parallel, pipelined, divergent)
            thread = divergent or uses_var(node.condition, st.thread_var)
            visit(node.then_case, where, parallel, pipelined, thread)
            if node.else_case is not None:
                visit(node.else_case, where, parallel, pipelined, thread)
        elif isinstance(node, tirx.While):
            check(node.condition, where, parallel, pipelined, divergent)
            visit(node.body, where, parallel, pipelined, divergent or uses_var(node.condition, st.thread_var))
        elif isinstance(node, tirx.AttrStmt):
            check(node.value, where, parallel, pipelined, divergent)
            visit(node.body, where, parallel, pipelined, divergent)
        elif isinstance(node, tirx.TilePrimitiveCall):
            for call in I.calls_in(node):
                intrinsic = I.intrinsic_of(call)
                if intrinsic.collective:
                    raise _error(st, intrinsic, where, "a collective op in the operands of a tile op (which "
                                 "the backend may evaluate per element); bind it to a name first")
        else:
            check(node, where, parallel, pipelined, divergent)

    visit(body, None)

    def on_call(call):
        intrinsic = I.intrinsic_of(call)
        if intrinsic is not None and intrinsic.name == "ldg" and any(call.args[0].source.same_as(b) for b in written):
            return call.args[0]
        return call

    return tvm_ffi.structural_map(body, [(tvm.ir.Call, on_call)])


def _check_vector_alignment(body, st: KernelState) -> None:
    """Every vector access the kernel wrote (T.ldg128 and kin: a Ramp index) must start at a
    provably aligned element: the C printers emit one ``*(uint4*)`` access, which faults on the
    GPU when it is not. The frontend refused what it could decide alone; here the names bound in
    the kernel (``base = bx * 64 + tx * 4``) and the loop ranges are known too."""
    if not I.vector_accesses(body):
        return
    analyzer = tvm.sym.Analyzer()
    bind_loop_ranges(analyzer, body)

    def check(stmt):
        for buffer, indices in I.vector_accesses(stmt):
            ramp = indices[-1]
            lanes = int(ramp.lanes)
            first = indices[:-1] + [ramp.base]
            nbytes = lanes * tvm.runtime.DataType(str(buffer.ty.dtype)).bits // 8
            if nbytes > st.dialect.vector_bytes:
                where = source_location(stmt)
                raise LoweringError(
                    f"kernel '{st.kernel}': a {nbytes}-byte vector access of {buffer.name} (T.ldg256/T.stg256, or "
                    f"a slice stored as one vector) is wider than the {st.dialect.kind} backend's vectors "
                    f"({st.dialect.vector_bytes} bytes); use two T.ldg128/T.stg128, or slices of "
                    f"{st.dialect.vector_bytes} bytes" + (f"\n  --> {where}" if where else ""))
            terms = [I.flat_offset(buffer, first)]
            if str(buffer.ty.storage_scope).startswith("shared"):
                terms += [ramp.base, buffer.ty.shape[-1]]
            if not all(analyzer.can_prove(tirx.floormod(t, lanes) == 0) for t in terms):
                where = source_location(stmt)
                raise LoweringError(
                    f"kernel '{st.kernel}': the {nbytes}-byte vector access of "
                    f"{buffer.name}[{', '.join(map(str, first))}] "
                    f"(T.ldg/T.stg/T.lds/T.sts, or a slice stored as one vector) cannot be proved aligned: its "
                    f"element offset must be a multiple "
                    f"of {lanes}, or the GPU faults; align the index (e.g. i * {lanes}) or load element by element"
                    + (f"\n  --> {where}" if where else ""))

    tvm_ffi.structural_walk(body, [(tirx.BufferStore, check), (tirx.Bind, check), (tirx.Evaluate, check),
                                   (tirx.IfThenElse, lambda s: check(tirx.Evaluate(s.condition)))])


def lower_intrinsics(func: tirx.PrimFunc, st: KernelState) -> tirx.PrimFunc:
    """Every ``tl.intrin.*`` call -> a device helper call or arithmetic (module docstring)."""
    if not I.calls_in(func.body):
        return func
    lowering = _Lowering(st)
    body = lower_warp_matrix(func.body, st)
    body = tvm_ffi.structural_map(body, [(tvm.ir.Call, lowering.on_call)])
    if lowering.refusal is not None:  # raised here: an exception would cross TVM's FFI as a RuntimeError
        refusal = lowering.refusal
        raise _error(st, refusal.intrinsic, _statement_of(func.body, refusal.call), refusal.message)
    body = _unvectorize_helper_loops(body)
    if lowering.rng_generator is not None:
        body = declare_rng_state(body, lowering.rng_generator)
    return func.with_body(body)


class _Refusal(Exception):
    def __init__(self, intrinsic, call, message: str):
        super().__init__(message)
        self.intrinsic, self.call, self.message = intrinsic, call, message


def _statement_of(body, call):
    """The innermost statement with a source line whose expressions contain ``call``."""
    found = [None]

    def visit(node):
        if isinstance(node, tirx.Stmt):
            if user_span(node) is not None:
                hits = [c for c in I.calls_in(node) if c.same_as(call) or tvm_ffi.structural_equal(c, call)]
                if hits:
                    found[0] = node
        return None

    tvm_ffi.structural_walk(body, [(tirx.Stmt, visit)], order="pre")
    return found[0]


class _Lowering:
    def __init__(self, st: KernelState):
        self.st = st
        self.ws = st.dialect.warp_size
        self.lane = tirx.floormod(st.thread_var, self.ws)
        self.call = None  # the call being lowered, for messages
        self.refusal = None
        self.rng_generator = None  # the cuRAND state type the kernel's draws use

    def fail(self, intrinsic, message):
        return _Refusal(intrinsic, self.call, message)

    def lanes(self, intrinsic, mask):
        """The user's 32-bit lane mask as the helpers' 64-bit one."""
        if self.ws <= 32:
            return tirx.Cast("uint64", mask)
        if isinstance(mask, tirx.IntImm) and int(mask.value) & 0xFFFFFFFF == I.FULL_MASK:
            return tirx.const((1 << self.ws) - 1, "uint64")  # TileLang: the full mask is the whole wave
        raise self.fail(intrinsic, f"a 32-bit lane mask ({mask}) cannot name the {self.ws} lanes of this "
                        f"target's warp; pass the full mask 0xFFFFFFFF (the whole warp)")

    def on_call(self, call):
        try:
            return self.lower(call)
        except _Refusal as refusal:
            self.refusal = self.refusal or refusal
            return call

    def lower(self, call):
        intrinsic = I.intrinsic_of(call)
        if intrinsic is None:
            return call
        self.call = call
        name, args, dtype = intrinsic.name, list(call.args), str(call.ty)
        if name in ("get_lane_idx", "get_warp_idx", "get_warp_idx_sync", "get_warp_group_idx"):
            ws = args[1] if not _is_const(args[1], -1) else tirx.const(self.ws, "int32")
            wpg = args[2] if len(args) > 2 and not _is_const(args[2], -1) else tirx.const(I.WARPS_PER_GROUP, "int32")
            return self.st.simplify(I.thread_query(name, args[0], ws, wpg))
        if name in ("any_sync", "all_sync", "ballot_sync", "match_any_sync", "match_all_sync"):
            if name.startswith("match") and self.ws > 32:
                raise self.fail(intrinsic, f"its uint32 result cannot hold the {self.ws} lanes of this target's warp")
            return tirx.call_extern(dtype, f"tl_{name}", self.lanes(intrinsic, args[0]), args[1])
        if name == "ballot":
            full = tirx.const(I.FULL_MASK, "uint32")
            return tirx.call_extern(dtype, "tl_ballot_sync", self.lanes(intrinsic, full), args[0])
        if name == "activemask":
            return tirx.call_extern(dtype, "tl_activemask")
        if name in ("shfl_sync", "shfl_xor", "shfl_down", "shfl_up"):
            width = int(args[3].value)
            if width > self.ws:
                raise self.fail(intrinsic, f"width={width} is more than the {self.ws} lanes of this target's warp")
            src = self.st.simplify(self.source_lane(name, args[2], width))
            return tirx.call_extern(dtype, "tl_shfl_sync", self.lanes(intrinsic, args[0]), args[1], src)
        if name.startswith("warp_reduce_"):
            if self.st.num_threads % self.ws:
                raise self.fail(intrinsic, f"it reduces over whole warps of {self.ws} lanes, and the block's "
                                f"{self.st.num_threads} threads are not a multiple of that")
            return tirx.call_extern(dtype, f"tl_{name}", args[0])
        if name == "sync_warp":
            return tirx.call_extern("void", "tl_sync_warp", self.lanes(intrinsic, args[0]))
        if name == "named_barrier":
            return lower_named_barrier(self.st, args)
        if name == "shuffle_elect":
            extent = int(args[1].value)
            if extent % self.ws:
                raise self.fail(intrinsic, f"thread_extent={extent} is not 0 or a multiple of the {self.ws}-lane warp")
            warp = tirx.floordiv(args[0], self.ws)
            first = warp == 0 if extent == 0 else tirx.floormod(warp, extent // self.ws) == 0
            return tirx.And(self.st.simplify(first), tirx.call_extern("bool", "tl_elect_one_sync"))
        if name.startswith("syncthreads_"):
            return tirx.call_extern(dtype, f"tl_{name}", args[0])
        if name in ("ffs", "fns"):
            return tirx.call_extern(dtype, f"tl_{name}", *args)
        if name == "ldg":
            return tirx.call_extern(dtype, "tl_ldg", tirx.address_of(args[0]))
        if name in MBARRIER_OPS:
            return lower_mbarrier(self.st, name, args, lambda message: self.fail(intrinsic, message))
        if name == "set_max_nreg":  # a hint: dropped where the backend has no register reallocation
            if not self.st.dialect.max_nreg:
                return tirx.const(0, "int32")
            return tirx.call_extern("void", f"tl_set_max_nreg<{int(args[0])}, {int(args[1])}>")
        if name in ("pdl_trigger", "pdl_sync"):  # scheduling: without it kernels run in stream order
            if not self.st.dialect.grid_dependency:
                return tirx.const(0, "int32")
            return tirx.call_extern("void", f"tl_{name}")
        if name == "sync_grid":
            if not self.st.dialect.grid_sync:
                raise self.fail(intrinsic, f"the {self.st.dialect.kind} backend has no barrier over the whole grid "
                                           f"(a cooperative launch); split the kernel in two at this point "
                                           f"(the second kernel reads what the first wrote), or compile for cuda")
            return tirx.call_extern("void", "tl_sync_grid")
        if name.startswith("cluster_") or name == "block_rank_in_cluster":
            return self.cluster(intrinsic, name, args)
        if name in ("cp_async_commit", "cp_async_wait"):  # no async copies without the dialect's
            if not self.st.dialect.async_copy:
                return tirx.const(0, "int32")
            if name == "cp_async_commit":
                return tirx.call_extern("void", "tl_cp_async_commit")
            return tirx.call_extern("void", f"tl_cp_async_wait<{int(args[0])}>")
        if name.startswith("rng_"):
            return self.rng(intrinsic, name, args, dtype)
        if name == "print":
            return self.print(intrinsic, args)
        if name == "device_assert":
            if self.st.dialect.kind == "metal":
                raise self.fail(intrinsic, "Metal has no trap to stop a kernel with; check the condition on the "
                                           "host or write the flag into an output")
            return tirx.call_extern("void", "tl_device_assert", args[0], args[1])
        raise self.fail(intrinsic, "no lowering rule (a gap in tilelang_core.simt: please report it)")

    def print(self, intrinsic, args):
        """T.print (language/debug_print.py) as the dialect's ``tl_print_<kind>``: the value as the
        widest type of its kind (int64, uint64, float64, bool) beside its dtype's name."""
        if not self.st.dialect.device_print:
            raise self.fail(intrinsic, "its kernels have no printf to print with; copy the values into an "
                                       "output tensor and print them on the host, or run the kernel on the "
                                       "cpu backend (target='cpu'), where T.print prints")
        head = list(args[:7])
        if len(args) == 7:
            return tirx.call_extern("void", "tl_print_msg", *head)
        value = args[7]
        kind, wide = print_kind(value)
        name, index = (args[8], args[9]) if len(args) > 8 else (tvm.ir.StringImm(""), tirx.const(-1, "int32"))
        return tirx.call_extern("void", f"tl_print_{kind}", *head, tvm.ir.StringImm(str(value.ty)), wide, name, index)

    def cluster(self, intrinsic, name: str, args):
        """Thread-block clusters (language/cluster.py): the dialect's helpers; without clusters a
        cluster of one block needs none (its rank is 0), anything more is refused."""
        if self.st.dialect.clusters:
            if name == "block_rank_in_cluster":
                return tirx.Cast("int32", tirx.call_extern("uint32", "tl_cluster_rank"))
            return tirx.call_extern("void", f"tl_{name}", *args)
        if name == "cluster_dims" and all(int(a) == 1 for a in args):
            return tirx.const(0, "int32")
        if name == "block_rank_in_cluster":
            return args[0]  # (only reached in a cluster of one block: the marker is refused otherwise)
        raise self.fail(intrinsic, f"thread-block clusters are NVIDIA's, sm_90 and newer; the "
                                   f"{self.st.dialect.kind} target here has none (compile for cuda sm_90a, or use "
                                   f"T.Kernel and T.sync_threads within a block)")

    def rng(self, intrinsic, name: str, args, dtype: str):
        """cuRAND draws (language/random.py) on the thread's state, ``tl_rng_state``, which
        ``declare_rng_state`` declares at the top of the kernel."""
        if self.st.dialect.kind != "cuda":
            raise self.fail(intrinsic, "random numbers come from cuRAND, which only the cuda backend has")
        self.rng_generator = str(args[-1].value) if name != "rng_rand_float" else str(args[0].value)
        if name == "rng_init":
            return tirx.call_extern("void", "tl_rng_init", *args[:3])
        if name == "rng_rand":
            return tirx.call_extern(dtype, "tl_rng_rand")
        dist = str(args[1].value)
        return tirx.call_extern(dtype, f"tl_rng_{dist}" + ("_double" if dtype == "float64" else ""))

    def source_lane(self, kind: str, operand, width: int):
        return I.shuffle_source_lane(kind, self.lane, operand, width, self.ws)


def _is_const(expr, value: int) -> bool:
    return isinstance(expr, tirx.IntImm) and int(expr.value) == value


def declare_rng_state(body, generator: str):
    """``body`` with the thread's cuRAND state declared first inside the kernel's launch (the
    helper ``TL_RNG_STATE_<generator>()`` declares ``tl_rng_state`` of that type)."""
    declare = tirx.Evaluate(tirx.call_extern("void", f"TL_RNG_STATE_{generator}"))

    def inside(stmt):
        if isinstance(stmt, tirx.AttrStmt) and stmt.attr_key == "thread_extent":
            return tirx.AttrStmt(stmt.node, stmt.attr_key, stmt.value, inside(stmt.body))
        return tirx.SeqStmt([declare, stmt])

    return inside(body)


def _unvectorize_helper_loops(body):
    """Vectorized loops that now call a helper per element run unrolled instead: TVM's C
    printers do not all scalarize a vector-typed helper call (Metal's prints one call on vectors)."""
    def on_for(loop):
        if loop.kind != tirx.ForKind.VECTORIZED:
            return loop
        calls = []
        tvm_ffi.structural_walk(loop.body, [(tvm.ir.Call, lambda c: calls.append(c) if
                                             getattr(c.op, "name", "") == "tirx.call_extern" else None)])
        if not calls:
            return loop
        return tirx.For(loop.loop_var, loop.min, loop.extent, tirx.ForKind.UNROLLED, loop.body,
                        loop.thread_binding, loop.annotations, step=loop.step, span=loop.span)

    return tvm_ffi.structural_map(body, [(tirx.For, on_for)])
