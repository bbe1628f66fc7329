"""Ping-pong (tl.enable_pingpong): the two consumer warpgroups of an attention-like loop take
turns at the tensor cores, a turn being one warpgroup's second gemm of iteration i and first gemm
of iteration i+1 (wgmma.py's gemm takes the turn before issuing and hands it over right after).

Measured slower on the H200 with today's gemm, which waits for its wgmma right after issuing
(bench/NOTES.md), hence opt-in.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from tilelang_core.ir import Gemm, TileOp, is_tile_op
from tilelang_core.simt import intrinsics as I
from tilelang_core.simt.transform.state import if_then, seq

from .wgmma import PINGPONG_BARRIER, PINGPONG_THREADS, WARPGROUP

#: AttrStmt around a ping-pong loop (named_barriers checks it for block barriers)
PINGPONG_LOOP = "tl.ws_pingpong"


def wants_pingpong(body_stmts, consumers: int) -> bool:
    """Two consumer warpgroups and a body of two gemms with work between them (attention's
    softmax): the warpgroups take turns at the tensor cores, a turn being one warpgroup's second
    gemm of iteration i and first gemm of iteration i+1, so each one's softmax runs under the
    other's two gemms (FlashAttention-3's ping-pong schedule)."""
    if consumers != PINGPONG_THREADS:
        return False
    gemms = [i for i, s in enumerate(body_stmts) if is_tile_op(s) and isinstance(TileOp.from_stmt(s), Gemm)]
    return len(gemms) == 2 and gemms[1] - gemms[0] > 1


def pingpong_loop(body, loop_var, tx, pingpong: bool):
    """The consumer loop (found by ``loop_var``, after barrier insertion so that a block barrier
    in front of it comes before the turn protocol) with the protocol's ends: warpgroup 0 starts
    holding the turn, warpgroup 1 waits for it; after the loop both hand over once more and
    warpgroup 0 takes the last hand-over, so every arrive on a turn barrier has its sync. The
    loop is marked PINGPONG_LOOP for named_barriers' deadlock check."""
    if not pingpong:
        return body
    wg = tirx.floordiv(tx, WARPGROUP)
    first = if_then(tx >= WARPGROUP, I.call("tl_named_barrier_sync", PINGPONG_BARRIER + 1, PINGPONG_THREADS))
    release = I.call("tl_named_barrier_arrive", PINGPONG_BARRIER + 1 - wg, PINGPONG_THREADS)
    last = if_then(tx < WARPGROUP, I.call("tl_named_barrier_sync", PINGPONG_BARRIER, PINGPONG_THREADS))

    def on_for(loop):
        if not loop.loop_var.same_as(loop_var):
            return loop
        marked = tirx.AttrStmt(tirx.const(0, "int32"), PINGPONG_LOOP, tirx.const(1, "int32"),
                               seq([first, loop, release, last]))
        return marked

    return tvm_ffi.structural_map(body, [(tirx.For, on_for)])


def strip_turns(stmt):
    """The ping-pong protocol removed (it only orders the warpgroups, so dropping it is safe)."""
    def on_eval(ev):
        call = ev.value
        if isinstance(call, tvm.ir.Call) and len(call.args) == 3 and isinstance(call.args[0], tirx.StringImm) \
                and call.args[0].value in ("tl_named_barrier_sync", "tl_named_barrier_arrive") \
                and isinstance(call.args[2], tirx.IntImm) and int(call.args[2]) == PINGPONG_THREADS \
                and not (isinstance(call.args[1], tirx.IntImm) and int(call.args[1]) == 1):
            return tirx.Evaluate(tirx.const(0, "int32"))
        return ev

    return tvm_ffi.structural_map(stmt, [(tirx.Evaluate, on_eval)])
