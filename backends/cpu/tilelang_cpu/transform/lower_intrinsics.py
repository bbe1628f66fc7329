"""LowerIntrinsics (cpu): TileLang's thread-level intrinsics (tilelang_core/ir/intrinsics.py) as
plain TIRX.

The cpu backend runs a block's threads one after another (threads_to_loops.py). Ops that lanes
execute together (votes, shuffles, warp reductions, ``T.sync_warp``, ``T.shuffle_elect``,
``T.syncthreads_*``) become an exchange through block memory between barriers where every lane
executes them together, and are refused with the op, the kernel and the line elsewhere
(emulate_warps.py). Ops of one thread's operands are arithmetic: lane/warp/warp-group indices
(of 32-lane warps, TileLang's default, unless the kernel gives a size), ``T.__ffs`` and
``T.__fns`` (bit arithmetic), ``T.__ldg`` (a plain load); ``T.set_max_nreg`` (a register hint) and
``T.ptx_commit_group`` / ``T.ptx_wait_group`` (the cpu backend's copies are synchronous) and
``T.pdl_trigger`` / ``T.pdl_sync`` (kernels run one after another) are dropped.
``T.device_assert`` is an assertion: the call fails (LaunchError) with its message. ``T.print``
calls back into Python, which prints (debug_print.py).
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from tilelang_core.errors import LoweringError
from tilelang_core.ir import intrinsics as I
from tilelang_core.simt.transform.lower_intrinsics import print_kind
from tilelang_core.transform.lower_tile_ops import kernel_name

from .emulate_warps import emulate_warps

#: the warp the lane queries count in when the kernel gives no size (TileLang's CUDA default)
WARP_SIZE = 32


def _size(expr, default: int):
    return tirx.const(default, "int32") if isinstance(expr, tirx.IntImm) and int(expr.value) == -1 else expr


def _device_asserts(body):
    """``T.device_assert(cond, msg)`` statements as host assertions: the call fails with the
    message where a thread's condition is false."""
    def on_evaluate(stmt):
        intrinsic = I.intrinsic_of(stmt.value)
        if intrinsic is None or intrinsic.name != "device_assert":
            return stmt
        cond, message = stmt.value.args
        return tirx.AssertStmt(cond, tvm.ir.StringImm("RuntimeError"),
                               [tvm.ir.StringImm(f"T.device_assert failed: {message.value}")])

    return tvm_ffi.structural_map(body, [(tirx.Evaluate, on_evaluate)])


def _prints(body):
    """``T.print`` statements as calls back into Python (debug_print.py), the value widened to
    int64, uint64, float64 or bool (what a packed call carries). Inside a T.Parallel loop, which
    runs as one loop here, no thread prints: ThreadIdx shows -1 there."""
    from tilelang_core.ir.atomic_calls import is_parallel_loop

    from ..debug_print import PRINT_FUNC

    def print_args(stmt):
        intrinsic = I.intrinsic_of(stmt.value)
        return list(stmt.value.args) if intrinsic is not None and intrinsic.name == "print" else None

    def no_thread(stmt):
        args = print_args(stmt)
        if args is None:
            return stmt
        args[4:7] = [tirx.const(-1, "int32")] * 3
        return tirx.Evaluate(I.call("print", "void", *args))

    def on_for(loop):
        if not is_parallel_loop(loop):
            return loop
        return tirx.For(loop.loop_var, loop.min, loop.extent, loop.kind,
                        tvm_ffi.structural_map(loop.body, [(tirx.Evaluate, no_thread)]),
                        loop.thread_binding, loop.annotations)

    body = tvm_ffi.structural_map(body, [(tirx.For, on_for)])

    def on_evaluate(stmt):
        args = print_args(stmt)
        if args is None:
            return stmt
        if len(args) > 7:
            args[7:8] = [tvm.ir.StringImm(str(args[7].ty)), print_kind(args[7])[1]]
        return tirx.Evaluate(tirx.call_packed(PRINT_FUNC, *args))

    return tvm_ffi.structural_map(body, [(tirx.Evaluate, on_evaluate)])


def lower_intrinsics(func: tirx.PrimFunc) -> tirx.PrimFunc:
    if not I.calls_in(func.body):
        return func
    func = func.with_body(_prints(_device_asserts(func.body)))
    if not I.calls_in(func.body):
        return func
    func = emulate_warps(func, WARP_SIZE)  # collective ops: an exchange through block memory, or refused

    def on_call(call):
        intrinsic = I.intrinsic_of(call)
        if intrinsic is None:
            return call
        args = list(call.args)
        if intrinsic.name.startswith("get_"):
            wpg = _size(args[2], I.WARPS_PER_GROUP) if len(args) > 2 else I.WARPS_PER_GROUP
            return I.thread_query(intrinsic.name, args[0], _size(args[1], WARP_SIZE), wpg)
        if intrinsic.name == "ffs":
            return I.expand_ffs(args[0])
        if intrinsic.name == "fns":
            return I.expand_fns(*args)
        if intrinsic.name == "ldg":
            return args[0]
        if intrinsic.name == "named_barrier":
            return call  # a barrier: threads_to_loops.py splits the thread loops there
        if intrinsic.name in ("set_max_nreg", "cp_async_commit", "cp_async_wait", "pdl_trigger", "pdl_sync"):
            # a register hint; async-copy groups (the copies here are plain); launch overlap (kernels
            # run one after the other here)
            return tirx.const(0, "int32")
        if intrinsic.name == "cluster_dims":  # blocks run one after another here: a cluster is a grouping
            return tirx.const(0, "int32")
        if intrinsic.name == "block_rank_in_cluster":
            return args[0]  # the rank from the block indices (language/cluster.py)
        if intrinsic.name in (*I.CLUSTER_BARRIERS, "mbarrier_arrive_remote", "mbarrier_wait_cluster"):
            raise LoweringError(f"T.{intrinsic.spelling} in kernel '{kernel_name(func)}': the cpu backend runs the "
                                f"blocks one after another, so no block of a cluster can wait for the others; "
                                f"compile for cuda (sm_90 and newer), or split the kernel at this point")
        if intrinsic.name == "sync_grid":
            raise LoweringError(f"T.sync_grid in kernel '{kernel_name(func)}': the cpu backend runs the blocks one "
                                f"after another, so no block can wait for the others; split the kernel in two at "
                                f"this point (the second kernel reads what the first wrote), or compile for cuda")
        if intrinsic.name.startswith("rng_"):
            raise LoweringError(f"T.{intrinsic.spelling} in kernel '{kernel_name(func)}': random numbers come from "
                                f"cuRAND, which only the cuda backend has (compile for target='cuda')")
        raise LoweringError(f"T.{intrinsic.spelling} in kernel '{kernel_name(func)}' has no cpu lowering "
                            f"(a gap in tilelang-cpu: please report it)")

    return func.with_body(tvm_ffi.structural_map(func.body, [(tvm.ir.Call, on_call)]))
