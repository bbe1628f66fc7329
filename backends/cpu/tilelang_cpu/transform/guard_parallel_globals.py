"""GuardParallelGlobals: TileLang's safe memory access in ``T.Parallel`` loops, on the CPU.

A tile that overhangs a tensor whose size it does not divide makes ``T.Parallel`` iterations past
the end: ``y[i] = A[k * 64 + j]`` with ``k * 64 + j >= K``. TileLang (and the GPU backends here, see
tilelang_core/simt/transform/lower_parallel.py) read 0 for such a global load and skip such a
global store (a tensor given a value by T.annotate_safe_value reads that instead). The cpu backend ran them as written: reads past the end and writes into whatever
memory follows the tensor (seen: an abort; silently wrong results are as likely). This pass gives
every global access inside a ``T.Parallel`` loop the bounds condition the analyzer cannot prove,
knowing the enclosing loops' ranges, the ``if`` conditions around the access and the values bound
with ``x = expr``.
"""

from __future__ import annotations

import contextlib

import tvm
import tvm_ffi
from tvm import tirx

from tilelang_core.ir.atomic_calls import is_parallel_loop
from tilelang_core.lowering import in_bounds
from tilelang_core.transform.safe_values import padding_for, take_safe_values


def _is_global(buffer) -> bool:
    return str(buffer.ty.storage_scope) in ("global", "")


def guard_parallel_globals(func: tirx.PrimFunc) -> tirx.PrimFunc:
    analyzer = tvm.sym.Analyzer()
    body, safe_values = take_safe_values(func.body)  # T.annotate_safe_value: pad with these

    def guard_loads(expr):
        def on_load(load):
            if _is_global(load.source):
                cond = in_bounds(analyzer, list(load.indices), load.source.ty.shape)
                if cond is not None:
                    return tirx.if_then_else(cond, load, padding_for(load, safe_values))
            return load

        return tvm_ffi.structural_map(expr, [(tvm.ir.TensorLoad, on_load)])

    def visit(node, inside: bool):
        if isinstance(node, tirx.SeqStmt):
            return tirx.SeqStmt([visit(s, inside) for s in node.seq])
        if isinstance(node, tirx.For):
            if isinstance(node.extent, tirx.IntImm) and isinstance(node.min, tirx.IntImm) and node.step is None:
                analyzer.bind(node.loop_var, tvm.ir.Range.from_min_extent(node.min, node.extent))
            return tirx.For(node.loop_var, node.min, node.extent, node.kind,
                            visit(node.body, inside or is_parallel_loop(node)), node.thread_binding,
                            node.annotations, node.step)
        if isinstance(node, tirx.IfThenElse):
            cond = guard_loads(node.condition) if inside else node.condition
            with analyzer.constraint_scope(node.condition):
                then_case = visit(node.then_case, inside)
            else_case = None
            if node.else_case is not None:
                with analyzer.constraint_scope(tirx.Not(node.condition)):
                    else_case = visit(node.else_case, inside)
            return tirx.IfThenElse(cond, then_case, else_case)
        if isinstance(node, tirx.AttrStmt):
            if node.attr_key == "thread_extent" and isinstance(node.value, tirx.IntImm):
                analyzer.bind(node.node.var, tvm.ir.Range.from_min_extent(0, node.value))
            return tirx.AttrStmt(node.node, node.attr_key, node.value, visit(node.body, inside))
        if isinstance(node, tirx.While):
            return tirx.While(node.condition, visit(node.body, inside))
        if isinstance(node, tirx.Bind):
            with contextlib.suppress(Exception):  # a value the analyzer cannot take stays unknown
                analyzer.bind(node.var, node.value)
            return tirx.Bind(node.var, guard_loads(node.value)) if inside else node
        if not inside:
            return node
        if isinstance(node, tirx.BufferStore):
            store = tirx.BufferStore(node.buffer, guard_loads(node.value), [guard_loads(i) for i in node.indices])
            if _is_global(node.buffer):
                cond = in_bounds(analyzer, list(node.indices), node.buffer.ty.shape)
                if cond is not None:
                    return tirx.IfThenElse(cond, store, None)
            return store
        if isinstance(node, tirx.Evaluate):
            return tirx.Evaluate(guard_loads(node.value))
        return node

    return func.with_body(visit(body, False))


__all__ = ["guard_parallel_globals"]
