"""``T.thread_return()``: the calling thread stops running the kernel (CUDA's ``return``).

DeepSeek's TileKernels guard their tails this way::

    token = pid * block + tid
    if token >= num_tokens:
        T.thread_return()
    ...                                  # only threads with a token get here

No backend needs to know the statement: at parse time (:func:`guard_after_thread_return`) each
return sets a per-thread flag, and everything that could run after it (the rest of every enclosing
sequence, the later iterations of every enclosing loop) runs only while the flag is clear. Local
and shared allocations in a guarded tail are moved before the guard: they are declarations, and
the layout and shared-memory passes expect them at the level they were written.

A thread that returned does not reach the barriers after its return. On CUDA that is what
``return`` means too (a barrier waits for the threads that have not exited); a kernel that returns
from some threads and then synchronizes the block is the author's to get right, as in TileLang.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from ..errors import FrontendError
from ..transform.structural import seq

_OP = "tirx.thread_return"


def thread_return():
    """Stop the calling thread (TileLang's ``T.thread_return()``; see the module doc)."""
    from tvm.script.ir_builder import tirx as B

    B.evaluate(tirx.call_intrin("int32", _OP))


def _is_return(stmt) -> bool:
    return (isinstance(stmt, tirx.Evaluate) and isinstance(stmt.value, tirx.Call)
            and stmt.value.op.same_as(tvm.ir.Op.get(_OP)))


def _contains(stmt, pred) -> bool:
    found = []
    tvm_ffi.structural_walk(stmt, [(tirx.Stmt, lambda n: found.append(n) if pred(n) else None)])
    return bool(found)


def guard_after_thread_return(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """``func`` with every ``T.thread_return()`` turned into a per-thread flag that guards what
    could run after it (see the module doc)."""
    if not _contains(func.body, _is_return):
        return func
    from ..ir.atomic_calls import is_parallel_loop

    def refuse_in_parallel(loop):
        if is_parallel_loop(loop) and _contains(loop.body, _is_return):
            raise FrontendError("T.thread_return() inside a T.Parallel loop: its iterations are dealt "
                                "over the threads, so no thread owns the return; return outside the loop")

    tvm_ffi.structural_walk(func.body, [(tirx.For, refuse_in_parallel)])
    flag = tirx.decl_buffer((1,), "int32", "thread_returned", scope="local.var")

    def sets_flag(node) -> bool:
        return isinstance(node, tirx.BufferStore) and node.buffer.same_as(flag)

    def may_return(stmt) -> bool:
        return _contains(stmt, sets_flag)

    def clear():
        return tirx.BufferLoad(flag, [0]) == tirx.IntImm("int32", 0)

    def guarded(stmts: list):
        """``stmts`` run only by threads that have not returned; allocations hoisted out."""
        hoisted = [s for s in stmts if isinstance(s, tirx.AllocBuffer)]
        rest = [s for s in stmts if not isinstance(s, tirx.AllocBuffer)]
        return hoisted + ([tirx.IfThenElse(clear(), seq(rest), None)] if rest else [])

    def on_evaluate(stmt):
        return tirx.BufferStore(flag, tirx.IntImm("int32", 1), [0]) if _is_return(stmt) else stmt

    def split(items: list) -> list:
        # what follows a statement that may return is guarded, and split again at its own returns
        for i, item in enumerate(items[:-1]):
            if may_return(item):
                return items[:i + 1] + guarded(split(items[i + 1:]))
        return items

    def on_seq(node):
        return seq(split(list(node.seq)))

    def on_for(loop):
        if not may_return(loop.body):
            return loop
        # a later iteration must not run for a thread that returned in an earlier one
        return tirx.For(loop.loop_var, loop.min, loop.extent, loop.kind, seq(guarded([loop.body])),
                        loop.thread_binding, loop.annotations, loop.step)

    def on_while(loop):
        if not may_return(loop.body):
            return loop
        return tirx.While(tirx.And(clear(), loop.condition), loop.body)

    body = tvm_ffi.structural_map(func.body, [(tirx.Evaluate, on_evaluate), (tirx.SeqStmt, on_seq),
                                              (tirx.For, on_for), (tirx.While, on_while)])
    return func.with_body(_declare_flag(body, flag))


def _declare_flag(body, flag):
    """``body`` with the flag allocated and cleared inside the kernel's thread launches."""
    if isinstance(body, tirx.AttrStmt) and str(body.attr_key) == "thread_extent":
        return tirx.AttrStmt(body.node, body.attr_key, body.value, _declare_flag(body.body, flag))
    init = [tirx.AllocBuffer(flag), tirx.BufferStore(flag, tirx.IntImm("int32", 0), [0])]
    return tirx.SeqStmt(init + (list(body.seq) if isinstance(body, tirx.SeqStmt) else [body]))


__all__ = ["guard_after_thread_return", "thread_return"]
