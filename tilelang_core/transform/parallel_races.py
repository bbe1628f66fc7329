"""Reads, inside one ``T.Parallel`` loop, of an element another iteration of the loop writes.

The iterations of a ``T.Parallel`` loop are independent: they run at once, dealt over the block's
threads. One that reads an element another iteration writes (``f[i] = A[i]`` then
``B[i] = f[n - 1 - i]`` in the same body) reads it before or after the write, whatever the
threads happen to do, and a fragment element another thread holds is not even in the reading
thread's registers: the answer was garbage on every backend, silently. So such a read is refused,
naming both lines; what the author means is a second loop (the compiler moves fragment elements
between threads between loops) or a barrier between the two statements, which splits the loop
there (transform/parallel_barriers.py).

The test, for a read of ``X[r(v)]`` and a write of ``X[w(v')]`` in the same nest, where ``v`` and
``v'`` are two iterations' loop variables (serial loops inside the body included): the analyzer
must prove ``r(v) == w(v')`` only when ``v`` and ``v'`` are the same parallel iteration. A read of
an element the iteration itself writes is not judged (several iterations may write it: a fold
``m[i] = T.max(m[i], x[i, j])`` is TileLang's way to reduce a row on a GPU; docs/tile-ir.md). Names the
body binds to index arithmetic are substituted; an index that depends on a value read from memory
(a gather, ``f[idx[i]]``) is not judged, nor are per-thread buffers (``T.alloc_local``, which every
thread holds whole) and global memory (where other blocks may write too, beyond what one loop
shows).
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from ..ir.atomic_calls import is_parallel_loop
from ..ir.substitute import substitute, substitute_nested
from ..lowering import frontend_error_at as _error, source_location
from .bindings import is_pure
from .structural import stmt_children

#: memories that the threads of a block share, where one iteration can see another's writes
_SHARED_SCOPES = ("shared", "shared.dyn", "local.fragment")


def check_parallel_races(func: tirx.PrimFunc, kernel: str) -> None:
    """Raise a FrontendError at the first read in a ``T.Parallel`` nest of an element another
    iteration of the nest writes (see the module doc)."""
    for nest in _outer_parallel_loops(func.body):
        race = first_race(nest)
        if race is not None:
            read, write, buffer = race
            raise _error(read, kernel, f"this T.Parallel loop reads an element of '{buffer.name}' that another "
                         f"iteration of the same loop writes{_at(write)}; the iterations run at once on different "
                         f"threads, so the value read is undefined. Write the values in one T.Parallel loop and "
                         f"read them in a later one (a T.sync_threads() between the two statements splits the "
                         f"loop there)")


def first_race(nest):
    """``(read, write, buffer)`` of the first read in ``nest`` (the outermost loop of a T.Parallel
    nest) that may see another iteration's write, or None."""
    accesses = _accesses(nest)
    if not any(kind == "w" for kind, *_ in accesses):
        return None
    loops = []
    tvm_ffi.structural_walk(nest, [(tirx.For, loops.append)], order="pre")
    if any(loop.thread_binding is not None for loop in loops):
        return None
    bound = _pure_bindings(nest)
    if bound is None:
        return None
    env, impure = bound
    written = {}  # buffer handle -> [(store, its indices with the bindings substituted)]
    for kind, node, buffer, indices in accesses:
        if kind == "w":
            written.setdefault(buffer.__chandle__(), []).append((node, [substitute_nested(i, env) for i in indices]))
    other = {loop.loop_var.__chandle__(): tirx.Var(f"{loop.loop_var.name}_other", loop.loop_var.ty) for loop in loops}
    analyzer = tvm.sym.Analyzer()
    for loop in loops:
        for var in (loop.loop_var, other[loop.loop_var.__chandle__()]):
            analyzer.bind(var, tvm.ir.Range.from_min_extent(substitute_nested(loop.min, env),
                                                            substitute_nested(loop.extent, env)))
    same = None
    for loop in loops:
        if is_parallel_loop(loop):
            eq = loop.loop_var == other[loop.loop_var.__chandle__()]
            same = eq if same is None else tirx.And(same, eq)
    for kind, node, buffer, indices in accesses:
        if kind != "r" or buffer.__chandle__() not in written:
            continue
        r = [substitute_nested(i, env) for i in indices]
        if not _judged(r, impure):
            continue
        writes = written[buffer.__chandle__()]
        if any(_same_element(analyzer, r, w) for _, w in writes):
            continue  # the element this iteration writes itself (a fold's m[i] = max(m[i], x[i, j]) too)
        for w_node, w_own in writes:
            if not _judged(w_own, impure):
                continue
            w = [substitute(i, other) for i in w_own]
            overlap = None
            for a, b in zip(r, w):
                eq = a == b
                overlap = eq if overlap is None else tirx.And(overlap, eq)
            if overlap is None:
                continue
            if not analyzer.can_prove(tirx.Or(tirx.Not(overlap), same), tvm.sym.ProofStrength.SYMBOLIC_BOUND):
                return node, w_node, buffer
    return None


def _same_element(analyzer, r, w) -> bool:
    return len(r) == len(w) and all(analyzer.can_prove(a == b) for a, b in zip(r, w))


def _outer_parallel_loops(body) -> list:
    found = []

    def visit(node):
        if isinstance(node, tirx.For) and is_parallel_loop(node):
            found.append(node)
            return
        for child in stmt_children(node):
            visit(child)

    visit(body)
    return found


def _accesses(nest) -> list:
    """(``"r"`` or ``"w"``, the statement or load, buffer, indices) of every access in ``nest`` to a
    buffer the block's threads share; a read's node is its statement (for the line)."""
    out = []

    def shared(buffer) -> bool:
        return str(buffer.ty.storage_scope) in _SHARED_SCOPES

    def visit(stmt):
        if isinstance(stmt, (tirx.BufferStore, tirx.Bind, tirx.Evaluate, tirx.IfThenElse, tirx.While)):
            loads = []
            exprs = {tirx.BufferStore: lambda s: [s.value, *s.indices], tirx.Bind: lambda s: [s.value],
                     tirx.Evaluate: lambda s: [s.value], tirx.IfThenElse: lambda s: [s.condition],
                     tirx.While: lambda s: [s.condition]}[type(stmt)](stmt)
            for e in exprs:
                tvm_ffi.structural_walk(e, [(tvm.ir.TensorLoad, loads.append)])
            out.extend(("r", stmt, load.source, list(load.indices)) for load in loads if shared(load.source))
            if isinstance(stmt, tirx.BufferStore) and shared(stmt.buffer):
                out.append(("w", stmt, stmt.buffer, list(stmt.indices)))
        if isinstance(stmt, tirx.For):
            for e in (stmt.min, stmt.extent):
                loads = []
                tvm_ffi.structural_walk(e, [(tvm.ir.TensorLoad, loads.append)])
                out.extend(("r", stmt, load.source, list(load.indices)) for load in loads if shared(load.source))
        for child in stmt_children(stmt):
            visit(child)

    visit(nest)
    return out


def _pure_bindings(nest):
    """({var handle: value} of the Binds in ``nest`` whose values are index arithmetic, {handles of
    the others}: an index using one of those is not judged); None if a name is bound twice."""
    env: dict = {}
    impure: set = set()
    binds = []
    tvm_ffi.structural_walk(nest, [(tirx.Bind, binds.append)], order="pre")
    for b in binds:
        key = b.var.__chandle__()
        if key in env or key in impure:
            return None
        if is_pure(b.value):
            env[key] = substitute_nested(b.value, env)
        else:
            impure.add(key)
    return env, impure


def _judged(indices, impure: set) -> bool:
    """Whether ``indices`` (bindings substituted) are arithmetic of the loop variables and names
    bound outside the nest only: no load, no name bound in the nest to a value read from memory."""
    found = []
    for index in indices:
        tvm_ffi.structural_walk(index, [(tvm.ir.TensorLoad, found.append),
                                        (tvm.ir.Var, lambda v: found.append(v) if v.__chandle__() in impure else None)])
    return not found


def _at(node) -> str:
    where = source_location(node)
    return f" (at {where})" if where else ""


__all__ = ["check_parallel_races", "first_race"]
