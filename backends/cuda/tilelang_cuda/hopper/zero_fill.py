"""FoldZeroFill: ``T.Parallel`` filling a gemm's accumulator with zeros, right before that gemm,
becomes the gemm's own ``clear_accum`` (wgmma with scale-d 0 on its first k-step).

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
from tvm.tirx.analysis import undefined_vars

from tilelang_core.ir import Gemm, TileOp, is_tile_op
from tilelang_core.simt.transform.state import uses_var

from .wgmma import WGMMA_CLEAR_IF


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
        nest = _fill_nest(stmt)
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
            if when is not None:
                out.append(tirx.IfThenElse(tirx.Not(when), stmt, None))
                out.append(op.replace(options={**op.options, WGMMA_CLEAR_IF: when}).to_stmt())
                skip = True
                continue
        out.append(stmt)
    return out


def zero_when(value, loops):
    """A condition (free of the fill's loop variables) under which ``value`` is 0 at every point
    of the fill's loops, for ``if_then_else(c, 0, x)`` / ``if_then_else(c, x, 0)`` with ``c`` a
    conjunction of integer comparisons; None otherwise."""
    if not (isinstance(value, tvm.ir.Call) and str(getattr(value.op, "name", "")).endswith("if_then_else")):
        return None
    cond, then, other = value.args
    if _is_const_zero(then):
        wanted = True
    elif _is_const_zero(other):
        wanted = False
    else:
        return None
    dom = {f.loop_var: tvm.sym.IntervalSet(f.min, f.min + f.extent - 1) for f in loops}
    analyzer = tvm.sym.Analyzer()
    parts = _conjuncts(cond) if wanted else None
    if not parts:
        return None
    holds = []
    for part in parts:
        kind = type(part).__name__
        if kind not in ("GE", "GT", "LE", "LT") or "int" not in str(part.a.ty):
            return None
        span = analyzer.int_set(part.a - part.b, dom)
        bound = span.min_value if kind in ("GE", "GT") else span.max_value
        if _unbounded(bound) or any(uses_var(bound, f.loop_var) for f in loops):
            return None
        holds.append({"GE": bound >= 0, "GT": bound > 0, "LE": bound <= 0, "LT": bound < 0}[kind])
    when = holds[0]
    for h in holds[1:]:
        when = tirx.And(when, h)
    return analyzer.simplify(when)


def _conjuncts(cond) -> list:
    if type(cond).__name__ in ("And", "BitwiseAnd"):
        return _conjuncts(cond.a) + _conjuncts(cond.b)
    return [cond]


def _is_const_zero(x) -> bool:
    return isinstance(x, (tirx.FloatImm, tirx.IntImm)) and float(x.value) == 0.0


def _unbounded(expr) -> bool:
    """An int_set bound that is an infinity (the analyzer writes them as pos_inf / neg_inf)."""
    return any(str(v.name) in ("pos_inf", "neg_inf") for v in undefined_vars(expr))



def _is_zero(value, loop, loops) -> bool:
    analyzer = tvm.sym.Analyzer()
    analyzer.bind(loop.loop_var, tvm.ir.Range.from_min_extent(loop.min, loop.extent))
    for f in loops:
        analyzer.bind(f.loop_var, tvm.ir.Range.from_min_extent(f.min, f.extent))
    return _is_const_zero(analyzer.simplify(value))
