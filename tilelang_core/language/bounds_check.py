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
import warnings

import tvm
import tvm_ffi
from tvm import tirx

from ..ir import TileOp, is_tile_op
from ..ir import region as R

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
    ranged: set[int] = set()
    grow: dict[int, tuple] = {}  # fragment handle -> (buffer, needed extent per dimension)

    def check(buffer, indices, what):
        if str(buffer.ty.storage_scope) not in ON_CHIP:
            return
        for dim, (index, extent) in enumerate(zip(indices, buffer.ty.shape)):
            extent = R.as_int(extent)
            if extent is None or not _only_ranged_vars(index, ranged):
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
        def on_load(load):
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
                ranged.add(node.loop_var.__chandle__())
            visit(node.body)
        elif isinstance(node, tirx.AttrStmt):
            if node.attr_key == "thread_extent" and R.as_int(node.value) is not None:
                with contextlib.suppress(Exception):
                    analyzer.bind(node.node.var, tvm.ir.Range.from_min_extent(0, node.value))
                    ranged.add(node.node.var.__chandle__())
            visit(node.body)
        elif isinstance(node, tirx.IfThenElse):
            exprs(node.condition)
            with analyzer.constraint_scope(node.condition):
                visit(node.then_case)
            if node.else_case is not None:
                visit(node.else_case)
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


def _only_ranged_vars(expr, ranged: set[int]) -> bool:
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
