"""StageEpilogue: off the warp-specialized path, a fragment -> global ``T.copy`` after the
kernel's pipelined loop goes through a shared tile the loop has left dead, where one has the
destination tile's shape and dtype (``tl.disable_staged_epilogue`` keeps the direct copy).

From registers each thread stores its own fragment elements: on the mma.sync path a thread
holds pairs of columns in rows 8 apart, so one warp's store touches 8 rows and half of each
32-byte sector. Through shared memory the same tile leaves as 16-byte row-contiguous vectors,
FlashAttention-2's epilogue. FlashAttention's Q tile is such a dead tile for O: written before
the loop, only read in it, and of O's tile shape and dtype. Causal attention S4096 D128 on the
H200's mma.sync path (128x64 tiles, 4 warps): 315 against 307 TFLOP/s with the per-thread stores,
same run (bench/NOTES.md, s10). Since Q loads asynchronously (s11) the staged build is the slower
one for causal attention and still the faster one non-causal: what decides it is ptxas's schedule
of the softmax at 255 registers, not the stores (bench/NOTES.md, s11). Measured with nvcc's code,
staged vs per-thread: non-causal 363 vs 357 and 353 vs 348, causal 320 vs 330 and 314 vs 324
(s11, s12; NVRTC 13.0: causal 305-311 vs 320-327). So a loop whose trip count depends on the block
index (causal attention's triangle: row block bx runs about bx + 1 key blocks) keeps the
per-thread stores; ``tl.enable_staged_epilogue`` stages it anyway, ``tl.disable_staged_epilogue``
stages nothing.

A tile qualifies when the loop does not write it (no copy into it can still be in flight after
the loop) and nothing after the loop touches it; each serves one copy. The barriers between the
loop's last reads and the new writes come from InsertBarriers like any other shared access. The
warp-specialized sm_90a path has its own epilogue through shared memory (TMA stores).
"""

from __future__ import annotations

import tvm_ffi
from tvm import tirx

from tilelang_core.ir import Copy, TileOp, is_tile_op
from tilelang_core.ir import region as R
from tilelang_core.simt.lowering import FRAGMENT, SHARED, scope
from tilelang_core.simt.transform.insert_barriers import touched
from tilelang_core.simt.transform.software_pipeline import num_stages
from tilelang_core.simt.transform.state import bound_values, substitute, uses_var


def stage_epilogue(func: tirx.PrimFunc, triangular: bool = False) -> tirx.PrimFunc:
    """``func`` with its epilogue copies staged (module docstring); ``triangular``: also after a
    loop whose trip count depends on the block index."""
    per_block = (lambda loop: False) if triangular else _trip_count_per_block(func.body)
    return func.with_body(tvm_ffi.structural_map(func.body, [(tirx.SeqStmt, lambda n: _stage_in(n, per_block))]))


def _trip_count_per_block(body):
    """A test of whether a loop's extent, with the kernel's bound names (``loop_range = ...``)
    resolved, depends on a blockIdx variable."""
    bound, blocks = bound_values(body), []

    def on_attr(attr):
        if attr.attr_key == "thread_extent" and isinstance(attr.node, tirx.IterVar) \
                and str(attr.node.thread_tag).startswith("blockIdx"):
            blocks.append(attr.node.var)

    tvm_ffi.structural_walk(body, [(tirx.AttrStmt, on_attr)])
    return lambda loop: any(uses_var(substitute(loop.extent, bound), b) for b in blocks)


def _stage_in(node, per_block):
    stmts = list(node.seq)
    loops = [i for i, s in enumerate(stmts) if isinstance(s, tirx.For) and num_stages(s)]
    if len(loops) != 1 or per_block(stmts[loops[0]]):
        return node
    at = loops[0]
    after = stmts[at + 1:]
    busy = set(touched(stmts[at])[1])  # tiles the loop writes
    for s in after:
        busy |= set().union(*touched(s))
    free = [s.buffer for s in stmts[:at] if isinstance(s, tirx.AllocBuffer)
            and str(s.buffer.ty.storage_scope) in SHARED and s.buffer not in busy]
    out, changed = stmts[:at + 1], False
    for stmt in after:
        op = TileOp.from_stmt(stmt) if is_tile_op(stmt) else None
        tile = _staging_tile(op, free) if isinstance(op, Copy) else None
        if tile is None:
            out.append(stmt)
            continue
        free.remove(tile)
        out += [op.replace(dst=R.full_region(tile)).to_stmt(), op.replace(src=R.full_region(tile)).to_stmt()]
        changed = True
    return tirx.SeqStmt(out) if changed else node


def _staging_tile(op: Copy, free: list):
    """A free shared tile of the copy's destination shape and dtype, when ``op`` copies a whole
    fragment to global memory; else None."""
    if scope(op.src) != FRAGMENT or scope(op.dst) != "global":
        return None
    shape = [int(s) for s in op.src.source.ty.shape]
    if not (R.same_extents(R.squeeze(R.extents_of(op.dst)), R.squeeze(shape))
            and R.same_extents(R.extents_of(op.src), shape)):
        return None
    for tile in free:
        if str(tile.ty.dtype) == str(op.dst.source.ty.dtype) and [int(s) for s in tile.ty.shape] == shape:
            return tile
    return None


__all__ = ["stage_epilogue"]
