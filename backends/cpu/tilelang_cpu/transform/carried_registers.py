"""Refuse a T.Parallel loop that carries a thread's register from one iteration to the next.

On a GPU a T.Parallel nest is dealt over the threads by a layout (layout inference, or the
author's ``loop_layout``), and a ``T.alloc_local``/``T.alloc_var`` buffer is each thread's own:
``m[0] = T.max(m[0], x[i, j])`` folds only the iterations that thread runs, which the layout
decides. The cpu backend runs such a nest once over the whole tile with one copy of the
register, so it would fold every element: another answer, silently. A nest that only stores
into registers (and touches no fragment) runs whole in every thread (core's per_thread.py) and
is not one of these; a register written and then read within one iteration (a temporary) is
the same in any layout and is allowed.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from tilelang_core.errors import LoweringError
from tilelang_core.ir.atomic_calls import is_parallel_loop
from tilelang_core.lowering import source_location
from tilelang_core.transform.per_thread import PER_THREAD_SCOPES
from tilelang_core.transform.structural import stmt_children


def _carried(body) -> list:
    """Registers the nest body reads before (or while) it stores them: values from an earlier
    iteration."""
    stored, carried = set(), []

    def reads(expr):
        found = []
        tvm_ffi.structural_walk(expr, [(tvm.ir.TensorLoad, lambda ld: found.append(ld.source))])
        return [b for b in found if str(b.ty.storage_scope) in PER_THREAD_SCOPES]

    def visit(node):
        if isinstance(node, tirx.BufferStore):
            for b in reads(node.value) + [r for i in node.indices for r in reads(i)]:
                if b.__chandle__() not in stored:
                    carried.append(b)
            if str(node.buffer.ty.storage_scope) in PER_THREAD_SCOPES:
                stored.add(node.buffer.__chandle__())
            return
        if isinstance(node, (tirx.Bind, tirx.Evaluate)):
            carried.extend(b for b in reads(node.value) if b.__chandle__() not in stored)
        elif isinstance(node, (tirx.IfThenElse, tirx.While)):
            carried.extend(b for b in reads(node.condition) if b.__chandle__() not in stored)
        for child in stmt_children(node):
            visit(child)

    visit(body)
    written = set()
    tvm_ffi.structural_walk(body, [(tirx.BufferStore, lambda st: written.add(st.buffer.__chandle__()))])
    return [b for b in carried if b.__chandle__() in written]


def refuse_carried_registers(func: tirx.PrimFunc, kernel: str) -> None:
    def visit(node):
        if is_parallel_loop(node):
            carried = _carried(node.body)
            if carried:
                where = source_location(node)
                raise LoweringError(
                    f"kernel '{kernel}': the T.Parallel loop over {node.loop_var} updates register "
                    f"'{carried[0].name}' from one iteration to the next (e.g. a running maximum). On a "
                    f"GPU each thread folds only the iterations the loop's layout gives it; the cpu "
                    f"backend runs the loop whole with one copy of the register and would fold every "
                    f"element, another answer. Use T.reduce_* on a fragment, or a GPU backend "
                    f"(tilelang_core.testing.oracle runs their SIMT interpreters without a GPU)"
                    + (f"\n  --> {where}" if where else ""))
            return
        for child in stmt_children(node):
            visit(child)

    visit(func.body)
