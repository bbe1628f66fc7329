"""Back-to-back wgmma gemms into one accumulator, issued as one batch.

``S = Q K^T`` then ``S += Q_pe K_pe^T`` (MLA decode's two score gemms) are two gemms in a row
that accumulate into the same registers. Lowered one by one, each is issued and then awaited
(``wgmma.wait_group 0``), so the tensor cores drain between them. The first is only issued
(WGMMA_PHASE "issue": fence, instructions, commit); the second's ``wait_group 0`` then waits for
both. wgmma orders instructions on one accumulator in issue order, so the values are the same.

Opt-in (``tl.enable_gemm_batches``) until it has run on the H200. Only where nothing runs
between the two, the first reads A from shared memory (a register A
would have to stay tied until the second's wait) and the warp-specialized schedule
(consumer_schedule.py) has not placed the gemm itself.
"""

from __future__ import annotations

import tvm_ffi
from tvm import tirx

from tilelang_core.ir import Gemm, TileOp, is_tile_op
from tilelang_core.simt.lowering import FRAGMENT, scope

from .wgmma import WGMMA_PHASE


def _gemm(stmt):
    if not is_tile_op(stmt):
        return None
    op = TileOp.from_stmt(stmt)
    return op if isinstance(op, Gemm) and WGMMA_PHASE not in op.options else None


def batch_gemms(body, is_wgmma):
    """``body`` with every wgmma gemm followed at once by another wgmma gemm into the same
    accumulator only issued (module docstring). ``is_wgmma(op)``: the planner's answer."""
    def on_seq(seq):
        stmts = list(seq.seq)
        changed = False
        for i in range(len(stmts) - 1):
            first, second = _gemm(stmts[i]), _gemm(stmts[i + 1])
            if first is None or second is None or not first.C.source.same_as(second.C.source):
                continue
            if scope(first.A) == FRAGMENT or second.clear_accum or not (is_wgmma(first) and is_wgmma(second)):
                continue
            stmts[i] = first.replace(options={**first.options, WGMMA_PHASE: "issue"}).to_stmt()
            changed = True
        return tirx.SeqStmt(stmts) if changed else seq

    return tvm_ffi.structural_map(body, [(tirx.SeqStmt, on_seq)])


__all__ = ["batch_gemms"]
