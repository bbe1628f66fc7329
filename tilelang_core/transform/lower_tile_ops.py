"""LowerTileOps: replace every tile-op call by the statement its backend's rule returns.

Rules come from the table in ``tilelang_core.lowering`` (``@register_lowering(op, kind)``); this
pass only walks the function, gives each rule a ``LoweringContext`` and splices the result in. It
knows nothing about any target.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from ..errors import LoweringError
from ..lowering import LoweringContext, get_lowering, source_location
from .bindings import is_pure, memory_bindings, register_stores, unique_bindings, uses_any
from .structural import structural_map
from .thread_ranges import THREAD_RANGE, group_firsts, in_thread_ranges, region_thread_var


def bind_loop_ranges(analyzer, stmt, _elementwise=None) -> None:
    """Bind every loop variable and launch index in ``stmt`` to its range, and every name bound
    in kernel code (``k0 = (bz * k_tiles + ko) * 32``) to its value.

    Variables are unique objects in TIRX, so binding them all up front is the same as binding them
    scope by scope, and lets rules prove bounds checks away (``bx * 64 + i < 256``) and alignment
    (a copy from ``A[row, k0]`` is 16-byte aligned, so it may become cp.async). It goes in program
    order: a loop's extent or a value may use names bound before it, and the analyzer refuses to
    rebind a name with different bounds (so a second call must bind exactly the same facts; passes
    that copy code leave duplicates, which ``unique_bindings`` renames first).

    The analyzer rewrites a bound name into its value wherever it simplifies, so a value goes in
    only where that rewrite is always right: a value that reads memory (``v = idx[i]``) could be
    rewritten past a store to that memory, and one that uses a T.Parallel loop variable
    (``q_idx = bx * 64 + i``) would bring back ``i`` after LowerParallel replaced it by the
    thread's element. Those names get their range only (or nothing, for memory reads). The thread
    index of a THREAD_RANGE group (transform/thread_ranges.py) gets its group's range, not its
    value ``tx - lo``, so that the group's lowering sees ``0 <= tx_r < extent``.
    """
    elementwise = [] if _elementwise is None else _elementwise  # T.Parallel variables, and names bound from them
    if isinstance(stmt, tirx.AttrStmt) and stmt.attr_key == THREAD_RANGE:
        group_var = region_thread_var(stmt)
        analyzer.bind(group_var, tvm.ir.Range.from_min_extent(0, stmt.value))
        elementwise = elementwise + [group_var]  # (its Bind: range only, as bound just above)
    elif isinstance(stmt, tirx.For):
        analyzer.bind(stmt.loop_var, tvm.ir.Range.from_min_extent(stmt.min, stmt.extent))
        if stmt.annotations is not None and "tl.parallel" in stmt.annotations:
            elementwise = elementwise + [stmt.loop_var]
    elif isinstance(stmt, tirx.AttrStmt):
        if stmt.attr_key == "thread_extent" and isinstance(stmt.node, tirx.IterVar):
            analyzer.bind(stmt.node.var, tvm.ir.Range.from_min_extent(0, stmt.value))
    elif isinstance(stmt, tirx.Bind) and isinstance(stmt.value.ty, tvm.ir.PrimType) and is_pure(stmt.value):
        # (not host-side handles such as tensor maps)
        if any(stmt.var.same_as(v) for v in elementwise):
            pass  # a thread group's index, bound to its range above
        elif uses_any(stmt.value, elementwise):
            elementwise.append(stmt.var)
            analyzer.update(stmt.var, analyzer.const_int_bound(stmt.value))
        else:
            analyzer.bind(stmt.var, stmt.value)
    if isinstance(stmt, tirx.SeqStmt):
        children = list(stmt.seq)
    elif isinstance(stmt, tirx.IfThenElse):
        children = [stmt.then_case] + ([stmt.else_case] if stmt.else_case is not None else [])
    else:
        body = getattr(stmt, "body", None)
        children = [body] if isinstance(body, tirx.Stmt) else []
    for child in children:
        bind_loop_ranges(analyzer, child, elementwise)


def kernel_name(func) -> str:
    name = func.attrs.get("global_symbol") if func.attrs is not None else None
    return str(name) if name is not None else "<unnamed>"


def lower_tile_ops(func: tirx.PrimFunc, backend_kind: str, options=None,
                   context: LoweringContext | None = None) -> tirx.PrimFunc:
    """Lower every ``TilePrimitiveCall`` in ``func`` with ``backend_kind``'s rules.

    A backend may pass its own ``context`` (a LoweringContext subclass carrying per-kernel state);
    its analyzer is used as is, with this function's loop ranges bound into it (binding a variable
    again to the same range is a no-op).
    """
    ctx = context or LoweringContext(backend_kind=backend_kind, kernel=kernel_name(func),
                                     analyzer=tvm.sym.Analyzer(), options=options)
    func = func.with_body(unique_bindings(func.body))
    bind_loop_ranges(ctx.analyzer, func.body)
    ctx.memory_bindings = memory_bindings(func.body)
    ctx.register_stores = register_stores(func.body)
    ctx.group_firsts = group_firsts(func.body)

    def lower_all(body, context):
        def rewrite(call):
            try:
                rule = get_lowering(call.op.name, backend_kind)
            except LoweringError as err:
                where = source_location(call)
                raise LoweringError(f"{err}\n  --> in kernel '{ctx.kernel}'"
                                    + (f", {where}" if where else "")) from None
            context.call = call
            return rule(call, context)

        # Post-order: a rule never sees a tile op nested in another's operands (there are none
        # today), and the result of a rule is not walked again, so rules must not emit tile ops.
        return structural_map(body, [(tirx.TilePrimitiveCall, rewrite)])

    # ops under a condition on the thread index first, each with its group of threads
    body = in_thread_ranges(func.body, lambda region, var, extent: lower_all(region, ctx.narrowed(var, extent)))
    return func.with_body(lower_all(body, ctx))


def LowerTileOps(backend_kind: str, options=None):  # noqa: N802 (TVM pass naming)
    """Pass form of :func:`lower_tile_ops`."""

    @tirx.transform.prim_func_pass(opt_level=0, name="tl.LowerTileOps")
    def _pass(func, _mod, _ctx):
        return lower_tile_ops(func, backend_kind, options)

    return _pass
