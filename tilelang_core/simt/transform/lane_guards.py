"""Guards inside a run of vector lanes: which can be dropped, and under what condition.

A T.Parallel element past the end of a ragged tensor reads the padding and writes nothing
(``guard_global_accesses``), and authors guard their own elements (``if row < M and col < N``).
Such guards compare each lane's index with a bound, so TVM's vectorizer would have to scalarize
every guarded statement. TileLang splits the tail off instead; here a run of ``vec`` lanes is
emitted twice: the vector form where every lane passes every guard, the scalar lanes with their
own guards elsewhere (the tile's ragged edge)::

    for lo in unroll(n):
        if every_lane(lo):   # e.g. base + lo * 4 + 3 < N
            for vi in vectorized(4): C[...] = A[...] * 2       # guards dropped
        else:
            for vi in range(4): if base + lo * 4 + vi < N: C[...] = A[...] * 2

A guard holds on every lane when it holds on the first and the last, provided it is a conjunction
of comparisons affine in the lane (each then holds on an interval of lanes; an equality of a
non-constant affine term holds on one lane at most, so at both ends only if constant). Any other
guard that varies over the lanes (``A[i] > 0``, ``c != 3``, an ``or``) keeps the loop scalar, as
does one that reads memory the run writes (it cannot be evaluated ahead of the run). A guard the
same on every lane is its own condition for all of them: those at the top of the body stand
around the vector loop, the others join the split above (TVM's vectorizer would otherwise emit
the run lane by lane under them). Guards the analyzer proves are replaced by their branch.
"""

from __future__ import annotations

import contextlib

import tvm
import tvm_ffi
from tvm import tirx

from tilelang_core.transform.bindings import reads_any, uses_any, written_buffers
from tilelang_core.transform.safe_values import guarded_load

from .state import KernelState, substitute

_ORDERED = (tirx.LT, tirx.LE, tirx.GT, tirx.GE, tirx.EQ)
_LANES = object()  # a guard dropped from the vector run, its every-lane condition recorded


def _defined_vars(body) -> list:
    """Variables that ``body`` itself binds (its loops and Binds): a condition naming one cannot
    be hoisted above the body."""
    found = []
    tvm_ffi.structural_walk(body, [(tirx.For, lambda f: found.append(f.loop_var)),
                                   (tirx.Bind, lambda b: found.append(b.var))])
    return found


def _affine_in(expr, vi, st: KernelState) -> bool:
    """Whether ``expr(vi) - expr(0)`` is ``vi * (expr(1) - expr(0))`` for every lane."""
    at = lambda k: substitute(expr, {vi: tirx.const(k, "int32")})  # noqa: E731
    slope = st.simplify(at(1) - at(0))
    return st.analyzer.can_prove(st.simplify(expr - at(0) - vi * slope) == 0)


def every_lane(cond, vi, vec: int, st: KernelState):
    """A condition free of ``vi`` that holds exactly when ``cond`` holds on lanes 0..vec-1;
    None when ``cond`` is not a conjunction of comparisons affine in ``vi``."""
    if isinstance(cond, tirx.And):
        a, b = every_lane(cond.a, vi, vec, st), every_lane(cond.b, vi, vec, st)
        return None if a is None or b is None else tirx.And(a, b)
    if not isinstance(cond, _ORDERED) or str(cond.a.dtype).startswith(("float", "bfloat")):
        return None  # (a float comparison: the analyzer's algebra is integer algebra)
    if not (_affine_in(cond.a, vi, st) and _affine_in(cond.b, vi, st)):
        return None
    ends = [substitute(cond, {vi: tirx.const(k, "int32")}) for k in (0, vec - 1)]
    return st.simplify(tirx.And(*ends))


def split_lane_guards(body, vi, vec: int, st: KernelState):
    """``(vector_body, every, outer)``: ``body`` with its guards that vary over the lanes dropped,
    the condition under which that is exact (``every``), and the guards the same on every lane
    peeled off its top (``outer``), to stand around the vector loop (TVM's vectorizer scalarizes
    the run under any ``if``); None for a condition that is always true. Returns None when a guard
    varies over the lanes in a way ``every_lane`` cannot bound, or names a variable the body binds.
    ``vi`` and the loops around it must be bound in ``st.analyzer``."""
    outer, written = [], written_buffers(body)
    with contextlib.ExitStack() as known:  # (the loads' guards repeat the store's: proven under it)
        while isinstance(body, tirx.IfThenElse) and body.else_case is None:
            cond = st.simplify(body.condition)
            if uses_any(cond, [vi]) or reads_any(cond, written):
                break
            if not st.analyzer.can_prove(cond):
                outer.append(cond)
                known.enter_context(st.analyzer.constraint_scope(cond))
            body = body.then_case
        split = _drop_lane_guards(body, vi, vec, st, written)
    if split is None:
        return None
    return split[0], split[1], _conjunction(outer)


def _conjunction(conds):
    return tirx.all(*conds) if conds else None


def _drop_lane_guards(body, vi, vec: int, st: KernelState, written: list):
    """(body without its lane-varying guards, every_lane of them) or None; see split_lane_guards.
    ``written``: the buffers the body writes."""
    inner_vars = _defined_vars(body)
    conditions, ok = [], [True]

    def decide(cond):
        """True/False when proven, else _LANES, the condition for all lanes recorded (a guard the
        same on every lane is its own: ``col < 776`` over aligned runs of 8 is ``col // 8 < 97``;
        TVM's vectorizer would split a run under it into lanes); None when it cannot be bounded."""
        cond = st.simplify(cond)
        if st.analyzer.can_prove(cond):
            return True
        if st.analyzer.can_prove(tirx.Not(cond)):
            return False
        every = every_lane(cond, vi, vec, st) if uses_any(cond, [vi]) else cond
        if every is None or uses_any(every, inner_vars) or reads_any(every, written):
            ok[0] = False
            return None
        conditions.append(every)
        return _LANES

    def on_if(node):
        verdict = decide(node.condition)
        if verdict is True or verdict is _LANES:
            return node.then_case
        if verdict is False:
            return node.else_case if node.else_case is not None else tirx.Evaluate(tirx.const(0, "int32"))
        return node  # (refused: the loop stays scalar)

    def on_call(call):
        # only a guarded load of global memory (``if_then_else(in bounds, A[i], padding)``); a
        # select of values (a causal mask's ``if_then_else(q >= k, 0, -inf)``) vectorizes as a
        # select, and passes after this one recognize it in that form
        guarded = guarded_load(call)
        if guarded is None or str(guarded[0].source.ty.storage_scope) not in ("global", ""):
            return call
        load, condition = guarded
        verdict = decide(condition)
        if verdict is True or verdict is _LANES:
            return load
        return call.args[2] if verdict is False else call

    out = tvm_ffi.structural_map(body, [(tvm.ir.Call, on_call)])
    out = tvm_ffi.structural_map(out, [(tirx.IfThenElse, on_if)])
    if not ok[0]:
        return None
    every = _conjunction(conditions)
    return out, (None if every is None else st.simplify(every))
