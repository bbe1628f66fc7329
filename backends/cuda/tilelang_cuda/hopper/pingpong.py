"""Ping-pong: the two consumer warpgroups of an overlapped attention loop (consumer_schedule.py)
take turns at the tensor cores. A turn is what one iteration issues, S = Q K^T of iteration j and
P V of j-1 (wgmma.py's gemm takes the turn before the first issue and hands it over after the
second, before either is awaited), so each warpgroup's softmax runs under the other's two gemms:
FlashAttention-3's schedule. On the H200: 599 TFLOP/s vs 568 without turns (bench/NOTES.md);
``tl.disable_pingpong`` turns it off. An earlier version without the overlap (turns around gemms
that wait for themselves) was slower than no turns at all, so turns need the overlap.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from tilelang_core.ir import Gemm, TileOp, is_tile_op
from tilelang_core.simt import intrinsics as I
from tilelang_core.simt.transform.state import if_then, seq

from .wgmma import PINGPONG, PINGPONG_BARRIER, PINGPONG_THREADS, WARPGROUP

#: AttrStmt around a ping-pong loop (named_barriers checks it for block barriers)
PINGPONG_LOOP = "tl.ws_pingpong"


def wants_pingpong(body_stmts, consumers: int) -> bool:
    """Two consumer warpgroups and a body of two gemms with work between them (attention's
    softmax): worth taking turns (module docstring)."""
    if consumers != PINGPONG_THREADS:
        return False
    gemms = [i for i, s in enumerate(body_stmts) if is_tile_op(s) and isinstance(TileOp.from_stmt(s), Gemm)]
    return len(gemms) == 2 and gemms[1] - gemms[0] > 1


def turn_options(events) -> dict:
    """event position -> gemm options: in one overlapped iteration the first issue takes the turn,
    the last hands it over (one issue alone does both)."""
    issues = [i for i, e in enumerate(events) if e.kind == "issue"]
    if not issues:
        return {}
    if len(issues) == 1:
        return {issues[0]: {PINGPONG: "turn"}}
    return {issues[0]: {PINGPONG: "acquire"}, issues[-1]: {PINGPONG: "release"}}


def pingpong_overlap(body, tx, region_key: str):
    """The overlapped consumer loop (the AttrStmt ``region_key``, value 1 for turns) with the
    protocol's ends: warpgroup 1 hands warpgroup 0 the first turn, and warpgroup 0 takes the last
    hand-over, so every arrive has its sync; marked PINGPONG_LOOP for named_barriers' deadlock check."""
    def on_attr(attr):
        if attr.attr_key != region_key:
            return attr
        if not int(attr.value):
            return attr.body
        first = if_then(tx >= WARPGROUP, I.call("tl_named_barrier_arrive", PINGPONG_BARRIER, PINGPONG_THREADS))
        last = if_then(tx < WARPGROUP, I.call("tl_named_barrier_sync", PINGPONG_BARRIER, PINGPONG_THREADS))
        return tirx.AttrStmt(tirx.const(0, "int32"), PINGPONG_LOOP, tirx.const(1, "int32"),
                             seq([first, attr.body, last]))

    return tvm_ffi.structural_map(body, [(tirx.AttrStmt, on_attr)])


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
