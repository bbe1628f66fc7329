"""Where ``T.sync_grid()`` and the cluster barriers (``T.cluster_sync()`` and its halves) may stand:
reached by every thread of every block (of the grid, of the cluster), the same number of times
(language/launch_dependency.py, language/cluster.py). Such a barrier that some thread skips never
opens: the kernel hangs. So a call under a branch whose condition reads the thread or block index,
or in a loop whose bounds do, is refused with the line, before any lowering. One inside
``T.Parallel`` (which deals iterations over threads) is refused too; the frontend has split such
loops at the barriers at the top of their bodies (transform/parallel_barriers.py) and refused the
rest, so only IR built by other means gets here with one."""

from __future__ import annotations

import tvm_ffi
from tvm import tirx

from tilelang_core.errors import LoweringError
from tilelang_core.ir import intrinsics as I
from tilelang_core.ir.atomic_calls import is_parallel_loop
from tilelang_core.lowering import source_location
from tilelang_core.transform.structural import stmt_children


#: barriers every thread of every block (of the grid, of the cluster) must reach
_EVERYONE = ("sync_grid", *I.CLUSTER_BARRIERS)


def check_grid_syncs(body, kernel: str) -> None:
    if not any(_barrier_name(c) for c in I.calls_in(body)):
        return
    indices = []

    def on_attr(attr):
        if attr.attr_key == "thread_extent":
            indices.append(attr.node.var)

    tvm_ffi.structural_walk(body, [(tirx.AttrStmt, on_attr)])

    def uses_index(expr) -> bool:
        used = tirx.analysis.undefined_vars(expr) if expr is not None else []
        return any(v.same_as(i) for v in used for i in indices)

    def refuse(node, name, why):
        where = source_location(node)
        scope = "the grid" if name == "sync_grid" else "the cluster"
        raise LoweringError(f"kernel '{kernel}': T.{name}() {why}; every thread of every block of {scope} must "
                            f"reach this barrier the same number of times, or the kernel hangs. Call it at the "
                            f"top level of the kernel (or in loops of the same trip count everywhere)"
                            + (f"\n  --> {where}" if where else ""))

    def visit(node, context):
        name = _barrier_name(node.value) if isinstance(node, tirx.Evaluate) else None
        if name and context:
            refuse(context[-1], name, context_reason(context[-1]))
        if isinstance(node, tirx.For):
            if is_parallel_loop(node) or uses_index(node.min) or uses_index(node.extent):
                context = context + [node]
        elif isinstance(node, tirx.IfThenElse) and uses_index(node.condition):
            context = context + [node]
        elif isinstance(node, tirx.While) and uses_index(node.condition):
            context = context + [node]
        for child in stmt_children(node):
            visit(child, context)

    def context_reason(node) -> str:
        if isinstance(node, tirx.For) and is_parallel_loop(node):
            return "is inside a T.Parallel loop, whose iterations are dealt over the threads"
        if isinstance(node, tirx.For):
            return f"is inside a loop whose bounds ({node.min}, {node.extent}) depend on the thread or block index"
        return f"is under a condition on the thread or block index ({node.condition})"

    visit(body, [])


def _barrier_name(expr) -> str | None:
    intrinsic = I.intrinsic_of(expr)
    return intrinsic.name if intrinsic is not None and intrinsic.name in _EVERYONE else None


__all__ = ["check_grid_syncs"]
