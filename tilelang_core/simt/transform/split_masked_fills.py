"""SplitMaskedFills: a mask fill inside a loop that is all zeros in some iterations writes plain
zeros there, instead of evaluating the mask for every element.

Causal attention fills S with its mask before ``S += Q K^T``::

    for k in T.Pipelined(n):
        for i, j in T.Parallel(M, N):
            S[i, j] = if_then_else(bx * M + i >= k * N + j, 0, -inf)

Left of the diagonal (``k * N + N - 1 <= bx * M``) every element is 0, and that is most
iterations; the mask costs each thread an index computation, a compare and a select per element,
zeros a move. The analyzer derives that condition (``zero_when``: each comparison of the mask
holds for the whole tile when it holds at the tile's worst corner, ``Analyzer.int_set``), and the
fill becomes::

    if zero_when(k): S[i, j] = 0            (T.Parallel)
    else:            S[i, j] = mask(i, j, k)

Runs after a backend's own specialization (sm_90a's warp-specialized loops fold such fills into
wgmma's zero-init instead, cuda's hopper/zero_fill.py) and before the software pipeline. A fill
whose condition the analyzer cannot derive is left as written.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx
from tvm.tirx.analysis import undefined_vars

from tilelang_core.ir.atomic_calls import is_parallel_loop
from tilelang_core.ir.conditions import conjuncts
from tilelang_core.transform.bindings import is_pure

from .state import substitute, uses_var


def split_masked_fills(body):
    """``body`` with every splittable mask fill directly inside a loop split (module docstring)."""
    def on_for(loop):
        new_body = _split_in(loop.body, loop)
        if new_body is loop.body:
            return None
        return tirx.For(loop.loop_var, loop.min, loop.extent, loop.kind, new_body, loop.thread_binding,
                        loop.annotations)

    return tvm_ffi.structural_map(body, [(tirx.For, on_for)])


def _split_in(body, loop):
    if is_parallel_loop(loop):
        return body
    stmts = list(body.seq) if isinstance(body, tirx.SeqStmt) else [body]
    out, changed = [], False
    for stmt in stmts:
        split = _split_fill(stmt, loop)
        changed |= split is not None
        out.append(split if split is not None else stmt)
    if not changed:
        return body
    return tirx.SeqStmt(out) if len(out) > 1 else out[0]


def _split_fill(stmt, loop):
    nest = fill_nest(stmt)
    if nest is None or not all(is_parallel_loop(f) for f in nest[1]):
        return None
    _, loops, value = nest
    if not uses_var(value, loop.loop_var):
        return None  # the same in every iteration: nothing to split on
    when = zero_when(value, loops)
    if when is None or not uses_var(when, loop.loop_var):
        return None
    zeros = _with_value(stmt, tirx.const(0, str(value.ty)))
    return tirx.IfThenElse(when, zeros, stmt)


def _with_value(nest, value):
    """A copy of the fill nest with fresh loop variables, storing ``value`` (its bindings, which
    only fed the mask, dropped)."""
    loops, stmt = [], nest
    while isinstance(stmt, tirx.For):
        loops.append(stmt)
        stmt = stmt.body
    if isinstance(stmt, tirx.SeqStmt):
        stmt = stmt.seq[-1]
    fresh = {f.loop_var: tirx.Var(str(f.loop_var.name), f.loop_var.ty) for f in loops}
    indices = [fresh[i] for i in stmt.indices]
    inner = tirx.BufferStore(stmt.buffer, value, indices)
    for f in reversed(loops):
        inner = tirx.For(fresh[f.loop_var], f.min, f.extent, f.kind, inner, f.thread_binding, f.annotations)
    return inner


def fill_nest(stmt):
    """(buffer, [loops], value) of ``for i: for j: buf[i, j] = value`` (loops from 0, one index per
    loop, in order), else None. Pure bindings before the store (TileLang's causal mask binds
    ``q_idx = bx * block_M + i``, ``k_idx = k * block_N + j``) are inlined into ``value``."""
    loops = []
    while isinstance(stmt, tirx.For):
        loops.append(stmt)
        stmt = stmt.body
    values = {}
    if isinstance(stmt, tirx.SeqStmt):
        *binds, stmt = list(stmt.seq)
        for b in binds:
            if not isinstance(b, tirx.Bind) or not is_pure(b.value):
                return None
            values[b.var] = substitute(b.value, values)
    if not loops or not isinstance(stmt, tirx.BufferStore):
        return None
    if len(stmt.indices) != len(loops) or any(not idx.same_as(f.loop_var) for idx, f in zip(stmt.indices, loops)):
        return None
    if any(not (isinstance(f.min, tirx.IntImm) and int(f.min) == 0) for f in loops):
        return None
    return stmt.buffer, loops, substitute(stmt.value, values)


def zero_when(value, loops):
    """A condition (free of the fill's loop variables) under which ``value`` is 0 at every point
    of the fill's loops, for ``if_then_else(c, 0, x)`` with ``c`` a conjunction of integer
    comparisons; None otherwise."""
    if not (isinstance(value, tvm.ir.Call) and str(getattr(value.op, "name", "")).endswith("if_then_else")):
        return None
    cond, then, _ = value.args
    if not is_const_zero(then):
        return None
    dom = {f.loop_var: tvm.sym.IntervalSet(f.min, f.min + f.extent - 1) for f in loops}
    analyzer = tvm.sym.Analyzer()
    holds = []
    for part in conjuncts(cond):
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


def is_const_zero(x) -> bool:
    return isinstance(x, (tirx.FloatImm, tirx.IntImm)) and float(x.value) == 0.0


def _unbounded(expr) -> bool:
    """An int_set bound that is an infinity (the analyzer writes them as pos_inf / neg_inf)."""
    return any(str(v.name) in ("pos_inf", "neg_inf") for v in undefined_vars(expr))


__all__ = ["fill_nest", "is_const_zero", "split_masked_fills", "zero_when"]
