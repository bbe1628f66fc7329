"""FoldZeroFill: ``T.Parallel`` filling a gemm's accumulator with zeros, right before that gemm,
becomes the gemm's own ``clear_accum`` (wgmma with scale-d 0 on its first k-step).

Attention writes its mask into S before ``S += Q K^T``; where the mask is provably all zeros for
every iteration (no key past the sequence end: ``k * block_N + j < seq_len`` for all k and j),
the fill is 64 register writes per thread per iteration that the instruction's zero-init does for
free, and one less dependency in front of the first wgmma. Proved with the analyzer over the
loop's and the fill's ranges; anything else is left as written.
"""

from __future__ import annotations

import tvm
from tvm import tirx

from tilelang_core.ir import Gemm, TileOp, is_tile_op


def _fill_nest(stmt):
    """(buffer, [loop vars], [extents], value) of ``for i: for j: buf[i, j] = value``, else None."""
    loops = []
    while isinstance(stmt, tirx.For):
        loops.append(stmt)
        stmt = stmt.body
    if not loops or not isinstance(stmt, tirx.BufferStore):
        return None
    if len(stmt.indices) != len(loops) or any(not idx.same_as(f.loop_var) for idx, f in zip(stmt.indices, loops)):
        return None
    if any(not (isinstance(f.min, tirx.IntImm) and int(f.min) == 0) for f in loops):
        return None
    return stmt.buffer, loops, stmt.value


def _covers(region, loops) -> bool:
    shape = [int(s) for s in region.source.ty.shape]
    return len(shape) == len(loops) and all(
        isinstance(f.extent, tirx.IntImm) and int(f.extent) == n for f, n in zip(loops, shape)) and all(
        isinstance(r.min, tirx.IntImm) and int(r.min) == 0 and isinstance(r.extent, tirx.IntImm)
        and int(r.extent) == n for r, n in zip(region.region, shape))


def fold_zero_fill(body: list, loop) -> list:
    """``body`` (a pipelined loop's statements) with each provable zero fill folded into the
    gemm that follows it."""
    out, skip = [], False
    for i, stmt in enumerate(body):
        if skip:
            skip = False
            continue
        nxt = body[i + 1] if i + 1 < len(body) else None
        nest = _fill_nest(stmt)
        if nest is not None and nxt is not None and is_tile_op(nxt):
            op = TileOp.from_stmt(nxt)
            buf, loops, value = nest
            if isinstance(op, Gemm) and not op.clear_accum and op.C.source.same_as(buf) \
                    and _covers(op.C, loops) and _is_zero(value, loop, loops):
                out.append(op.replace(clear_accum=True).to_stmt())
                skip = True
                continue
        out.append(stmt)
    return out


def _is_zero(value, loop, loops) -> bool:
    analyzer = tvm.sym.Analyzer()
    analyzer.bind(loop.loop_var, tvm.ir.Range.from_min_extent(loop.min, loop.extent))
    for f in loops:
        analyzer.bind(f.loop_var, tvm.ir.Range.from_min_extent(f.min, f.extent))
    simple = analyzer.simplify(value)
    return isinstance(simple, (tirx.FloatImm, tirx.IntImm)) and float(simple.value) == 0.0
