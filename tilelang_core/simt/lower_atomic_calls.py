"""LowerAtomicCalls: the atomics that are expressions (tilelang_core/ir/atomic_calls.py) ->
calls of the backend's helpers, after LowerParallel and before ApplyLayouts.

``old = tl.atomic_rmw(A[i], v, kind, order)`` becomes ``old = tl_atomic_<kind>_ret(&A[i], v,
order_id)`` and ``tl.atomic_load(A[i], order)`` becomes ``tl_atomic_load(&A[i], order_id)``
(helper contract in tilelang_core/simt/__init__.py). Running after LowerParallel lets it map
fragment operands and T.Parallel indices like those of any expression, and shows which
destinations it guarded: a global element that may lie past the tensor's end (a ragged tile) is
TileLang's safe access there, ``if_then_else(in bounds, A[i], 0)``. Such an atomic is skipped and
gives 0, as a load past the end reads 0. ApplyLayouts then flattens and swizzles the shared
destinations inside ``&A[i]`` as it does for the statement atomics.

Checks (with the statement's source line): the backend has the kind on the element type and the
memory order (SimtDialect), and the element is in global or shared memory. LowerParallel refuses an
atomic whose value is used in a T.Parallel nest that replicates elements over threads
(``refuse_replicated``): each replica would perform it.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from tilelang_core.errors import LoweringError
from tilelang_core.ir.atomic_calls import RMW_OP, atomic_calls, fmt_element, is_atomic_call, user_name
from tilelang_core.lowering import in_bounds, source_location
from tilelang_core.transform.safe_values import guarded_load

from . import intrinsics as I
from .lower_atomic import ORDER_IDS, check_atomic
from .lowering import GLOBAL

#: statements whose expressions may hold an atomic call (their span names the user's line)
_STATEMENTS = (tirx.Bind, tirx.BufferStore, tirx.Evaluate, tirx.IfThenElse, tirx.While, tirx.For)


def lower_atomic_calls(body, st):
    """``body`` with every atomic call lowered to its helper (see the module docstring)."""
    if not atomic_calls(body):
        return body
    _check(body, st)
    body = _scalar_loops(body)

    def on_call(call):
        if not is_atomic_call(call):
            return call
        return _lower(call, st)

    return tvm_ffi.structural_map(body, [(tvm.ir.Call, on_call)])


def _destination(arg):
    """(element, guard) of an atomic call's first operand: the element as written, or as
    LowerParallel guarded it (``if_then_else(cond, A[i], 0)``)."""
    if isinstance(arg, tvm.ir.TensorLoad):
        return arg, None
    return guarded_load(arg) or (None, None)


def _parts(call):
    """(AtomicCall fields, element, guard) without re-validating the rewritten operands."""
    name = str(call.op.name)
    element, guard = _destination(call.args[0])
    if name == RMW_OP:
        return str(call.args[2].value), element, guard, call.args[1], str(call.args[3].value)
    return "load", element, guard, None, str(call.args[1].value)


def _check(body, st) -> None:
    def on_stmt(stmt):
        for call in [c for e in _own_expressions(stmt) for c in atomic_calls(e)]:
            kind, element, _guard, _value, order = _parts(call)

            def error(message, call=call):
                where = source_location(stmt)
                return LoweringError(f"cannot lower {user_name(call)} in kernel '{st.kernel}' for backend "
                                     f"'{st.dialect.kind}': {message}" + (f"\n  --> {where}" if where else ""))

            if element is None:
                raise error(f"its element operand became {call.args[0]}; atomics take an element of "
                            f"a global or shared buffer written directly, like A[i]")
            check_atomic(st, kind, str(call.ty), order, element.source, error)

    tvm_ffi.structural_walk(body, [(t, on_stmt) for t in _STATEMENTS])


def _own_expressions(stmt) -> list:
    """The expressions of ``stmt`` itself, not of the statements nested in it."""
    if isinstance(stmt, tirx.Bind):
        return [stmt.value]
    if isinstance(stmt, tirx.BufferStore):
        return [stmt.value, *stmt.indices]
    if isinstance(stmt, tirx.Evaluate):
        return [stmt.value]
    if isinstance(stmt, (tirx.IfThenElse, tirx.While)):
        return [stmt.condition]
    return [stmt.min, stmt.extent]


def _scalar_loops(body):
    """A vectorized loop holding an atomic stays a loop: each lane's atomic is its own access,
    which TVM's vectorizer would turn into one vector access (T.Parallel's vectorization sees an
    atomic load as a plain contiguous read)."""
    def on_for(loop):
        if loop.kind == tirx.ForKind.VECTORIZED and atomic_calls(loop.body):
            return tirx.For(loop.loop_var, loop.min, loop.extent, tirx.ForKind.UNROLLED, loop.body,
                            loop.thread_binding, loop.annotations)
        return loop

    return tvm_ffi.structural_map(body, [(tirx.For, on_for)])


def _lower(call, st):
    kind, element, guard, value, order = _parts(call)
    dt = str(call.ty)
    if guard is None and str(element.source.ty.storage_scope) in GLOBAL:
        guard = in_bounds(st.analyzer, list(element.indices), element.source.ty.shape)
    args = [tirx.address_of(element)]
    if value is not None:
        args.append(value if str(value.ty) == dt else tirx.Cast(dt, value))
    args.append(tirx.const(ORDER_IDS[order], "int32"))
    name = "tl_atomic_load" if kind == "load" else f"{I.ATOMIC_HELPER}{kind}_ret"
    lowered = I.call(name, *args, dtype=dt)
    return lowered if guard is None else tirx.if_then_else(guard, lowered, tirx.const(0, dt))


def refuse_replicated(body, kernel: str, kind: str) -> None:
    """LowerParallel's check for a nest whose elements several threads hold (replicas): an atomic
    whose previous value the body uses would happen once per replica."""
    def on_stmt(stmt):
        for call in [c for e in _own_expressions(stmt) for c in atomic_calls(e)]:
            if str(call.op.name) != RMW_OP:
                continue
            element, _ = _destination(call.args[0])
            target = fmt_element(element if element is not None else call.args[0])
            where = source_location(stmt)
            raise LoweringError(
                f"cannot lower {user_name(call)} in kernel '{kernel}' for backend '{kind}': the atomic "
                f"on {target} is in a T.Parallel loop whose fragment layout "
                f"gives each element to several threads, so it would happen once per thread. Use "
                f"the statement form (no return_prev) there, or loop over elements one thread owns"
                + (f"\n  --> {where}" if where else ""))

    tvm_ffi.structural_walk(body, [(t, on_stmt) for t in _STATEMENTS])


__all__ = ["lower_atomic_calls", "refuse_replicated"]
