"""FoldZeroFill: ``T.Parallel`` filling a gemm's accumulator with zeros, right before that gemm,
becomes the gemm's own ``clear_accum`` (wgmma with scale-d 0 on its first k-step); a mask that
provably masks nothing (``S[i, j] = if_then_else(c, S[i, j], -inf)`` with c true throughout) is
dropped.

Attention writes its mask into S before ``S += Q K^T``; where the mask is provably all zeros for
every iteration (no key past the sequence end: ``k * block_N + j < seq_len`` for all k and j),
the fill is 64 register writes per thread per iteration that the instruction's zero-init does for
free, and one less dependency in front of the first wgmma. Proved with the analyzer over the
loop's and the fill's ranges; anything else is left as written.

Conditional (default; ``tl.disable_conditional_mask`` turns it off): where the mask is all zeros only in some
iterations (causal attention: every key block left of the diagonal, ``k * block_N + block_N - 1
<= bx * block_M``), the analyzer derives that condition from the mask's comparisons (each holds
for every i, j when it holds at the worst corner of the tile: ``tvm.sym.Analyzer.int_set``), the
fill runs only where the condition fails, and the gemm starts from zero where it holds::

    if not zero_when(k): S[i, j] = mask(i, j, k)         (T.Parallel)
    S = (0 if zero_when(k) else S) + Q K^T               (wgmma scale-d = !zero_when(k))
"""

from __future__ import annotations

import tvm
from tvm import tirx

from tilelang_core.ir import Gemm, TileOp, is_tile_op
from tilelang_core.simt.transform.split_masked_fills import fill_nest, is_const_zero, zero_when

from .wgmma import WGMMA_CLEAR_IF


def _covers(region, loops) -> bool:
    shape = [int(s) for s in region.source.ty.shape]
    return len(shape) == len(loops) and all(
        isinstance(f.extent, tirx.IntImm) and int(f.extent) == n for f, n in zip(loops, shape)) and all(
        isinstance(r.min, tirx.IntImm) and int(r.min) == 0 and isinstance(r.extent, tirx.IntImm)
        and int(r.extent) == n for r, n in zip(region.region, shape))


def fold_zero_fill(body: list, loop, conditional=None) -> list:
    """``body`` (a pipelined loop's statements) with each provable zero fill folded into the
    gemm that follows it; with ``conditional(gemm)`` (true where the gemm's lowering honours
    WGMMA_CLEAR_IF: wgmma), each fill that is zero only in some iterations is skipped there."""
    out, skip = [], False
    for i, stmt in enumerate(body):
        if skip:
            skip = False
            continue
        nxt = body[i + 1] if i + 1 < len(body) else None
        nest = fill_nest(stmt)
        if nest is not None and _is_identity(nest, loop):
            continue  # a mask after the gemm that masks nothing in any iteration (keys divide the tiles)
        if nest is not None and nxt is not None and is_tile_op(nxt):
            op = TileOp.from_stmt(nxt)
            buf, loops, value = nest
            if isinstance(op, Gemm) and not op.clear_accum and op.C.source.same_as(buf) \
                    and _covers(op.C, loops) and _is_zero(value, loop, loops):
                out.append(op.replace(clear_accum=True).to_stmt())
                skip = True
                continue
            when = zero_when(value, loops) if conditional is not None and isinstance(op, Gemm) \
                and not op.clear_accum and op.C.source.same_as(buf) and _covers(op.C, loops) \
                and conditional(op) else None
            if isinstance(when, tirx.IntImm):  # zero in every iteration, or in none
                if int(when.value):
                    out.append(op.replace(clear_accum=True).to_stmt())
                    skip = True
                    continue
                when = None
            if when is not None:
                out.append(tirx.IfThenElse(tirx.Not(when), stmt, None))
                out.append(op.replace(options={**op.options, WGMMA_CLEAR_IF: when}).to_stmt())
                skip = True
                continue
        out.append(stmt)
    return out


def _simplified(value, loop, loops):
    analyzer = tvm.sym.Analyzer()
    analyzer.bind(loop.loop_var, tvm.ir.Range.from_min_extent(loop.min, loop.extent))
    for f in loops:
        analyzer.bind(f.loop_var, tvm.ir.Range.from_min_extent(f.min, f.extent))
    return analyzer.simplify(value)


def _is_zero(value, loop, loops) -> bool:
    return is_const_zero(_simplified(value, loop, loops))


def _is_identity(nest, loop) -> bool:
    """``buf[i, j] = value`` where ``value`` is provably ``buf[i, j]`` itself over the loop's and
    the nest's ranges (``if_then_else(k * block_N + j < seq_len, S[i, j], -inf)`` where the keys
    divide the tiles): a statement that changes nothing, yet reads the iteration index."""
    buf, loops, value = nest
    value = _simplified(value, loop, loops)
    return isinstance(value, tvm.ir.TensorLoad) and value.source.same_as(buf) and all(
        idx.same_as(f.loop_var) for idx, f in zip(value.indices, loops))
