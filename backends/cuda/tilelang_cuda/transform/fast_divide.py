"""FastDivide: float32 ``a / b`` in device code becomes ``div.full.f32`` (the ``tl_div`` helper),
with ``tl.fast_div`` only.

The default is CUDA's IEEE-rounded division, as in TileLang: kernels written for it (DeepSeek's
TileKernels normalize weights and compute FP8 scale factors with ``/``) are tested bit for bit
against torch, and 2 ulp fail them (found on the H100, stop 49). This pass is the opt-in for
kernels that can take the error:

CUDA's ``/`` on float32 is the IEEE-rounded division: a reciprocal, three refining FFMAs, an
FCHK range test and a branch around a slow-path call, per division. FlashAttention's epilogue
divides each of a thread's 64 accumulators by its row's sum: on the H200's mma.sync path ncu put
5.6% of causal attention's warp-stall samples there against FA2's 1.9% (bench/NOTES.md, s8).
``div.full.f32`` has a maximum error of 2 ulp over the full range (Triton's default for float32
``/``); with one divisor for many dividends ptxas computes its reciprocal once, leaving one FMUL
per element. Divisions by a constant stay as written (nvcc folds the exact ones to a multiply).
Applied at codegen inside the kernels' thread-bound
regions only (host code keeps ``/``), so the lowered IR and the interpreter that checks it keep
``/``.

Measured on the H200 (three paired runs each, bench/NOTES.md s8): attention S4096 D128 605 vs 586
TFLOP/s, S8192 D64 457 vs 452, the mma.sync path neutral (351 vs 350); but causal attention on
the dynamic tile scheduler 522-541 vs 540-560, so kernels that claim tiles from it
(``tl_claim_tile``) keep IEEE division until that is understood (ptxas spills nothing more in
either form; the consumer code is 20% shorter with div.full).
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from ..hopper.tile_scheduler import CLAIM
from .prim_funcs import map_prim_funcs


def _divisions(stmt):
    def on_div(div):
        if str(div.ty) == "float32" and not isinstance(div.b, tirx.FloatImm):
            return tirx.call_pure_extern("float32", "tl_div", div.a, div.b)
        return div

    return tvm_ffi.structural_map(stmt, [(tirx.Div, on_div)])


def _claims_tiles(func) -> bool:
    claims = []
    tvm_ffi.structural_walk(func.body, [(tvm.ir.Call, lambda c: claims.append(1) if getattr(
        c.op, "name", None) == "tirx.call_extern" and str(c.args[0]) == f'"{CLAIM}"' else None)])
    return bool(claims)


def fast_divide(mod: tvm.IRModule) -> tvm.IRModule:
    def on_attr(attr):
        # a launch attribute: its body is kernel code. Nested ones (threadIdx inside blockIdx) are
        # rewritten again, which finds nothing left to change (measured: 3.4 ms for attention's
        # module either way, most of it the other walks)
        if attr.attr_key == "thread_extent":
            return _divisions(attr)
        return attr

    def rewrite(func):
        if _claims_tiles(func):
            return func
        return func.with_body(tvm_ffi.structural_map(func.body, [(tirx.AttrStmt, on_attr)]))

    return map_prim_funcs(mod, rewrite)
