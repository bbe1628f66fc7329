"""LowerAtomicCalls: the atomics that are expressions (tilelang_core/ir/atomic_calls.py) as plain
reads and writes, after ThreadsToLoops.

On the cpu backend a block is one sequential program and a kernel with atomics on global memory
runs its blocks one after another (see ../pipeline.py), so every atomic is a plain access in
program order, whatever its memory order (sequential execution is sequentially consistent):

- ``tl.atomic_load(A[i], order)`` is ``A[i]``;
- a statement holding ``tl.atomic_rmw(A[i], v, kind, order)`` (the frontend binds it:
  ``old = <call>``, which ThreadsToLoops may have made a per-thread register store) becomes
  ``prev = A[i]; A[i] = combine(prev, v); <statement with prev for the call>``.

T.Parallel loops of global tensors are guarded afterwards like any other access
(GuardParallelGlobals: past the end, the read gives 0 and the write is skipped).
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from tilelang_core.errors import LoweringError
from tilelang_core.ir.atomic_calls import LOAD_OP, RMW_OP, AtomicCall, atomic_calls
from tilelang_core.lowering import source_location
from tilelang_core.transform.lower_tile_ops import kernel_name

#: the new value of an element from its old value and the operand
COMBINE = {
    "add": lambda old, v: old + v, "max": tirx.max, "min": tirx.min,
    "or": lambda old, v: tirx.bitwise_or(old, v), "and": lambda old, v: tirx.bitwise_and(old, v),
    "xor": lambda old, v: tirx.bitwise_xor(old, v), "store": lambda old, v: v,
}
_HOLDERS = (tirx.Bind, tirx.BufferStore, tirx.Evaluate)


def lower_atomic_calls(func: tirx.PrimFunc) -> tirx.PrimFunc:
    if not atomic_calls(func.body):
        return func
    body = tvm_ffi.structural_map(func.body, [(tvm.ir.Call, _load_as_read)])
    body = _expand(body, kernel_name(func))
    left = atomic_calls(body)
    if left:
        raise LoweringError(f"kernel '{kernel_name(func)}': the atomic {left[0]} is used where the cpu "
                            f"backend cannot place it (not in a statement of its own); bind it first: "
                            f"old = T.atomic_add(..., return_prev=True)")
    return func.with_body(body)


def _load_as_read(call):
    if getattr(call.op, "name", "") == LOAD_OP:
        return call.args[0]
    return call


def _expand(body, kernel: str):
    def rewrite(stmt) -> list:
        calls = [c for c in atomic_calls(stmt) if str(c.op.name) == RMW_OP]
        if not calls:
            return [stmt]
        out, replace = [], {}
        for call in calls:
            atomic = AtomicCall.from_call(call)
            if atomic_calls(atomic.value) or atomic_calls(atomic.dst):
                where = source_location(stmt)
                raise LoweringError(f"kernel '{kernel}': an atomic inside the operands of another "
                                    f"atomic; bind the inner one first" + (f"\n  --> {where}" if where else ""))
            prev = tirx.Var("prev", atomic.dtype)
            out.append(tirx.Bind(prev, atomic.dst))
            out.append(tirx.BufferStore(atomic.buffer, COMBINE[atomic.kind](prev, atomic.value),
                                        list(atomic.dst.indices)))
            replace[call] = prev
        stmt = tvm_ffi.structural_map(stmt, [(tvm.ir.Call, lambda c: _replaced(c, replace))])
        return out + [stmt]

    def on_seq(seq):
        items = []
        for s in seq.seq:
            items += rewrite(s) if isinstance(s, _HOLDERS) else [s]
        return tirx.SeqStmt(items)

    def lone(stmt):  # a holder that is a whole branch or loop body, not an item of a sequence
        items = rewrite(stmt)
        return items[0] if len(items) == 1 else tirx.SeqStmt(items)

    def visit(node):
        if isinstance(node, tirx.SeqStmt):
            return on_seq(tirx.SeqStmt([visit(s) if not isinstance(s, _HOLDERS) else s for s in node.seq]))
        if isinstance(node, _HOLDERS):
            return lone(node)
        if isinstance(node, tirx.IfThenElse):
            return tirx.IfThenElse(node.condition, visit(node.then_case),
                                   visit(node.else_case) if node.else_case is not None else None, node.span)
        if isinstance(node, tirx.For):
            return tirx.For(node.loop_var, node.min, node.extent, node.kind, visit(node.body),
                            node.thread_binding, node.annotations, step=node.step, span=node.span)
        if isinstance(node, tirx.While):
            return tirx.While(node.condition, visit(node.body), node.span)
        if isinstance(node, tirx.AttrStmt):
            return tirx.AttrStmt(node.node, node.attr_key, node.value, visit(node.body), node.span)
        return node  # declarations (no body in TVM 0.27), tile ops

    return visit(body)


def _replaced(call, replace):
    for old, new in replace.items():
        if call.same_as(old):
            return new
    return call


__all__ = ["lower_atomic_calls"]
