"""ParallelTileOps: tile ops written inside a T.Parallel body, lowered per element.

A T.Parallel body runs once per element, on the thread that owns the element. A tile op there is
an element's statement: TileLang's split-K epilogue ``for i, j in T.Parallel(bM, bN):
T.atomic_add(C[by * bM + i, bx * bN + j], C_local[i, j])`` is one atomic per element of C_local.
LowerTileOps' rules deal a tile op's elements over the whole block instead (a single element: one
thread), which is right for a statement the block runs once and lost all but one thread's adds
here. So before LowerTileOps this pass lowers the atomics of T.Parallel bodies to one helper call
per element (lower_atomic.atomic_per_element), with the loop variables still in the indices, and
LowerParallel maps them like any other statement of the body (keeping an atomic to one replica of
a replicated element). Any other tile op inside T.Parallel is refused with its source line: it
would run once per element, which is never what a tile-wide op means.

The analyzer gets the kernel's loop ranges and bindings first (as LowerTileOps binds them), so
bounds checks of the atomics can be proven away.
"""

from __future__ import annotations

import tvm_ffi
from tvm import tirx

from tilelang_core.ir import Atomic, TileOp
from tilelang_core.lowering import LoweringContext, short_name
from tilelang_core.transform.bindings import unique_bindings
from tilelang_core.transform.layout_inference import parallel_nests
from tilelang_core.transform.lower_tile_ops import bind_loop_ranges
from tilelang_core.transform.structural import structural_map

from .state import KernelState

#: what to write instead of a tile-wide op inside T.Parallel, by op
_INSTEAD = {
    "copy": "move T.copy out of the loop (it already covers the whole tile) or assign the element "
            "(dst[i, j] = src[i, j])",
    "fill": "move T.fill out of the loop or assign the element (dst[i, j] = value)",
}


def parallel_tile_ops(body, st: KernelState):
    """``body`` with every tile op of a T.Parallel body lowered per element (atomics) or refused."""
    from ..lower_atomic import atomic_per_element  # (the rules import this package's state)

    nests = parallel_nests(body)
    if not any(_has_tile_op(n.loop) for n in nests):
        return body
    body = unique_bindings(body)
    bind_loop_ranges(st.analyzer, body)

    def rewrite(call):
        op = TileOp.from_stmt(call)
        ctx = LoweringContext(backend_kind=st.dialect.kind, kernel=st.kernel, analyzer=st.analyzer,
                              options=st.options, call=call)
        name = short_name(str(call.op.name))
        if isinstance(op, Atomic):
            return atomic_per_element(op, st, lambda message: ctx.error(name, message))
        instead = _INSTEAD.get(name, "move it out of the T.Parallel loop")
        raise ctx.error(name, f"T.{name} inside a T.Parallel loop body would run once per element of "
                              f"the loop; {instead}")

    def visit(node):
        if isinstance(node, tirx.For) and node.annotations is not None and "tl.parallel" in node.annotations:
            return structural_map(node, [(tirx.TilePrimitiveCall, rewrite)]) if _has_tile_op(node) else node
        if isinstance(node, tirx.SeqStmt):
            return tirx.SeqStmt([visit(s) for s in node.seq])
        if isinstance(node, tirx.For):
            return tirx.For(node.loop_var, node.min, node.extent, node.kind, visit(node.body),
                            node.thread_binding, node.annotations, step=node.step, span=node.span)
        if isinstance(node, tirx.AttrStmt):
            return tirx.AttrStmt(node.node, node.attr_key, node.value, visit(node.body), node.span)
        if isinstance(node, tirx.IfThenElse):
            return tirx.IfThenElse(node.condition, visit(node.then_case),
                                   visit(node.else_case) if node.else_case is not None else None, node.span)
        if isinstance(node, tirx.While):
            return tirx.While(node.condition, visit(node.body), node.span)
        return node

    return visit(body)


def _has_tile_op(stmt) -> bool:
    found = []
    tvm_ffi.structural_walk(stmt, [(tirx.TilePrimitiveCall, found.append)])
    return bool(found)
