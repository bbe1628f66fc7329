"""Refuse on-chip accesses that provably leave their buffer (shared, fragment, local, var).

A global access past a tensor's end inside ``T.Parallel`` is defined (it reads 0 and writes
nothing, TileLang's safe memory access). An on-chip buffer has no such rule: an index past the
extent of a ``T.alloc_fragment`` / ``T.alloc_shared`` writes into a neighbour or into other
registers, and on the cpu backend into the stack. Seen in a TileLang example:
``sinks = T.alloc_fragment([heads])`` filled by ``for i in T.Parallel(block_M)`` with
``block_M > heads`` gave NaN on cpu. So when an index depends only on loop variables of constant
range (and constants), and its range reaches past the buffer's extent, the kernel is refused at
the line that builds it.

Fragments are the exception, because TileLang runs such kernels (its attention-sink examples do
exactly the above): a fragment's elements are private registers addressed through its layout,
so on TileLang an index past the declared extent is simply one more register of the loop's
layout, holding what was written there. Here the fragment is grown to the extent its accesses
reach, with a warning that names it: the same values, and no out-of-bounds access anywhere.
"""

from __future__ import annotations

import contextlib
import math
import warnings

import numpy as np

import tvm
import tvm_ffi
from tvm import tirx

from ..ir import TileOp, is_tile_op
from ..ir import region as R
from ..ir.numpy_ops import Unsupported as _Unsupported
from ..ir.numpy_ops import evaluate as _evaluate

ON_CHIP = ("shared", "shared.dyn", "local", "local.fragment", "local.var")


class FragmentGrownWarning(UserWarning):
    """A fragment indexed past its declared shape was grown to what its accesses reach."""


def check_on_chip_bounds(func, error, warn=None):
    """Raise ``error(msg)`` for the first on-chip access whose index provably leaves the buffer.

    Returns ``func``, with fragments indexed past their declared extent grown (see the module doc)
    and ``warn(msg, category)`` told so (``warnings.warn`` when None).
    """
    warn = warn or warnings.warn
    analyzer = tvm.sym.Analyzer()
    conditions: list = []  # the enclosing if conditions (else branches: negated)
    ranges: dict[int, tuple] = {}  # handle -> (min, extent) of the loop/thread variables of known range
    grow: dict[int, tuple] = {}  # fragment handle -> (buffer, needed extent per dimension)

    def check(buffer, indices, what):
        if str(buffer.ty.storage_scope) not in ON_CHIP:
            return
        for dim, (index, extent) in enumerate(zip(indices, buffer.ty.shape)):
            extent = R.as_int(extent)
            if extent is None or not _only_ranged_vars(index, ranges):
                continue
            if _vars_of(index) & {v for c in conditions for v in _vars_of(c)}:
                # under a condition on the index's variables the bound below need not be attained
                # (``if tx < 256 - (1 << i): s[tx + (1 << i)]`` stays below 256): look for a point
                # of the loop ranges where the conditions hold and the index leaves the buffer
                bad = _witness(index, extent, conditions, ranges)
                if bad is not None:
                    raise error(f"{what} {buffer.name}[{', '.join(str(i) for i in indices)}]: index {index} of "
                                f"dimension {dim} reaches {bad} where the enclosing conditions hold, but "
                                f"{buffer.name} has {extent} elements there; an on-chip buffer has no safe "
                                "out-of-bounds access: size it to the loop, or bound the index")
                continue
            bound = analyzer.const_int_bound(analyzer.simplify(index))
            if (str(buffer.ty.storage_scope) == "local.fragment" and bound.min_value >= 0
                    and extent <= bound.max_value < 1 << 16):
                _, needed = grow.setdefault(buffer.__chandle__(), (buffer, [R.as_int(e) for e in buffer.ty.shape]))
                needed[dim] = max(needed[dim], bound.max_value + 1)
                continue
            if bound.max_value >= extent or bound.min_value < 0:
                raise error(f"{what} {buffer.name}[{', '.join(str(i) for i in indices)}]: index {index} of "
                            f"dimension {dim} ranges over {bound.min_value}..{bound.max_value}, but "
                            f"{buffer.name} has {extent} elements there (declared shape "
                            f"{[int(s) for s in buffer.ty.shape]}); an on-chip buffer has no safe "
                            "out-of-bounds access: size it to the loop, or bound the index")

    def exprs(e):
        # the right side of `and` / `or` and the branches of T.if_then_else read only where the
        # condition lets them (``k != 0 and top[k - 1] == x``): checked under that condition
        guarded = _guarded_operands(e)
        inside, nested = set(), set()  # every node of a guarded operand; those below its root
        for _, operand in guarded:
            def note(n, root=operand.__chandle__()):
                inside.add(n.__chandle__())
                if n.__chandle__() != root:
                    nested.add(n.__chandle__())

            tvm_ffi.structural_walk(operand, [(tvm.ir.Expr, note)])
        for cond, operand in guarded:
            if operand.__chandle__() in nested:
                continue  # inside another guarded operand: checked with both conditions there
            conditions.append(cond)
            with analyzer.constraint_scope(cond):
                exprs(operand)
            conditions.pop()

        def on_load(load):
            if load.__chandle__() not in inside:
                check(load.source, list(load.indices), "a read of")
            return load

        tvm_ffi.structural_map(e, [(tvm.ir.TensorLoad, on_load)])

    def visit(node):
        if isinstance(node, tirx.SeqStmt):
            for s in node.seq:
                visit(s)
        elif isinstance(node, tirx.For):
            if R.as_int(node.extent) is not None and R.as_int(node.extent) <= 0:
                return  # a loop that never runs reads and writes nothing
            if R.as_int(node.min) is not None and R.as_int(node.extent) is not None and node.step is None:
                analyzer.bind(node.loop_var, tvm.ir.Range.from_min_extent(node.min, node.extent))
                ranges[node.loop_var.__chandle__()] = (R.as_int(node.min), R.as_int(node.extent))
            visit(node.body)
        elif isinstance(node, tirx.AttrStmt):
            if node.attr_key == "thread_extent" and R.as_int(node.value) is not None:
                with contextlib.suppress(Exception):
                    analyzer.bind(node.node.var, tvm.ir.Range.from_min_extent(0, node.value))
                    ranges[node.node.var.__chandle__()] = (0, R.as_int(node.value))
            visit(node.body)
        elif isinstance(node, tirx.IfThenElse):
            exprs(node.condition)
            conditions.append(node.condition)
            with analyzer.constraint_scope(node.condition):
                visit(node.then_case)
            cond = node.condition
            conditions[-1] = tirx.Not(cond) if str(cond.ty) == "bool" else cond == tirx.const(0, str(cond.ty))
            if node.else_case is not None:
                visit(node.else_case)
            conditions.pop()
        elif isinstance(node, tirx.While):
            visit(node.body)
        elif isinstance(node, tirx.BufferStore):
            exprs(node.value)
            check(node.buffer, list(node.indices), "a write of")
        elif isinstance(node, tirx.Bind):
            exprs(node.value)
        elif isinstance(node, tirx.Evaluate):
            exprs(node.value)
        elif isinstance(node, tirx.TilePrimitiveCall) and is_tile_op(node):
            for arg in TileOp.from_stmt(node).args():
                if R.is_region(arg):
                    mins, exts = R.mins_of(arg), R.extents_of(arg)
                    last = [m + e - 1 if R.as_int(e) is not None else m for m, e in zip(mins, exts)]
                    check(arg.source, mins, "a tile op on")
                    check(arg.source, last, "a tile op on")

    visit(func.body)
    if not grow:
        return func
    replaced = {}
    for handle, (buffer, needed) in grow.items():
        if None in needed:  # a symbolic extent elsewhere: nothing safe to grow to
            raise error(f"fragment {buffer.name} is indexed past its declared shape "
                        f"{list(buffer.ty.shape)}; size it to the loop that indexes it")
        declared = [int(s) for s in buffer.ty.shape]
        warn(f"fragment '{buffer.name}' is declared with shape {declared} but indexed up to "
             f"{[n - 1 for n in needed]}; grown to {needed}, as TileLang's layouts hold it. "
             "Declare it with that shape.", FragmentGrownWarning)
        replaced[handle] = tirx.decl_buffer(needed, str(buffer.ty.dtype), name=str(buffer.name),
                                            scope="local.fragment")
    body = tvm_ffi.structural_map(func.body, [(tirx.Var, lambda v: replaced.get(v.__chandle__(), v))])
    return func.with_body(body)


def _negated(cond):
    return tirx.Not(cond) if str(cond.ty) == "bool" else cond == tirx.const(0, str(cond.ty))


def _guarded_operands(e) -> list:
    """(condition, operand) for every operand of ``e`` evaluated only under a condition."""
    found = []
    ite = tvm.ir.Op.get("prim.if_then_else")

    def on_and(n):
        found.append((n.a, n.b))

    def on_or(n):
        found.append((_negated(n.a), n.b))

    def on_call(n):
        if n.op.same_as(ite):
            found.append((n.args[0], n.args[1]))
            found.append((_negated(n.args[0]), n.args[2]))

    tvm_ffi.structural_walk(e, [(tirx.And, on_and), (tirx.Or, on_or), (tirx.Call, on_call)])
    return found


#: at most this many points of the loop ranges are tried by _witness
_WITNESS_POINTS = 1 << 16


def _witness(index, extent: int, conditions: list, ranges: dict):
    """The farthest value of ``index`` outside [0, extent) at a point of the loop ranges where every one of
    ``conditions`` holds, else None (also when the points are too many or an expression is not
    plain integer arithmetic: nothing is proven then)."""
    names = _vars_of(index)
    for cond in conditions:
        names |= _vars_of(cond)
    if not names <= set(ranges) or math.prod(ranges[n][1] for n in names) > _WITNESS_POINTS:
        return None
    order = sorted(names)
    grids = np.meshgrid(*[np.arange(lo, lo + extent, dtype=np.int64) for lo, extent in (ranges[n] for n in order)],
                        indexing="ij")
    env = {n: g.reshape(-1) for n, g in zip(order, grids)}
    try:
        holds = np.ones(env[order[0]].shape, dtype=bool)
        for cond in conditions:
            holds &= np.broadcast_to(_evaluate(cond, env), holds.shape).astype(bool)
        values = np.broadcast_to(_evaluate(index, env), holds.shape)[holds]
    except _Unsupported:
        return None
    if values.size and values.max() >= extent:
        return int(values.max())
    return int(values.min()) if values.size and values.min() < 0 else None


def _vars_of(expr) -> set[int]:
    found: set[int] = set()
    tvm_ffi.structural_walk(expr, [(tirx.Var, lambda v: found.add(v.__chandle__()))])
    return found


def _only_ranged_vars(expr, ranged) -> bool:
    """Does ``expr`` depend on nothing but loop/thread variables of known range (no loads)?"""
    ok = [True]

    def on_var(v):
        if v.__chandle__() not in ranged:
            ok[0] = False

    def on_load(load):
        ok[0] = False

    tvm_ffi.structural_walk(expr, [(tvm.ir.TensorLoad, on_load), (tirx.Var, on_var)])
    return ok[0]


__all__ = ["FragmentGrownWarning", "check_on_chip_bounds"]
