"""Shared memory that one thread alone touches in a loop: no barrier between its iterations.

insert_barriers.py ends a loop's body with a barrier when an access of the body may race with
one of the next iteration from another thread, and shared_races.py can only prove two accesses
apart by a dimension whose index is the same in every thread, so a thread-indexed staging loop
(``for i in T.serial(n): S[i + m_id * 16, j + k_id * 4] = ...``, DeepSeek's TileKernels casts)
got a barrier per iteration, and a ``T.vectorized`` one a barrier between lanes (it then runs
scalar). TVM's own ThreadSync leaves such loops alone by assuming that structurally equal indices
are the same thread's; here it is checked instead: every shared element the loop's plain loads and
stores can touch, over all iterations, the serial loops inside and every thread, is computed
(numpy over the index expressions, values bound in the kernel put in), and the loop needs no
barrier of its own when no element is touched by two threads. For each value of the enclosing
loops separately: iterations of those are their own loops' business.

Anything it cannot evaluate (a tile op or an atomic on shared memory, a view, an index naming a
value read from memory or a block index) keeps the barrier.

Example::

    if not private_to_threads([loop], enclosing, threads, values, views):
        body = append_barrier(body)
"""

from __future__ import annotations

import numpy as np
import tvm
import tvm_ffi
from tvm import tirx

from tilelang_core.ir import is_tile_op
from tilelang_core.ir.atomic_calls import LOAD_OP, RMW_OP
from tilelang_core.ir.substitute import substitute_nested

#: the most (thread x iteration) points evaluated for one loop
MAX_POINTS = 1 << 21
#: calls that take an element's address (what they touch is not read off the indices here)
_ADDRESS_CALLS = ("tirx.address_of", "tirx.tvm_access_ptr", RMW_OP, LOAD_OP)


def _shared(buffer) -> bool:
    return str(buffer.ty.storage_scope).startswith("shared")


def _accesses(body):
    """(buffer, indices) of the shared loads and stores of ``body``; None when it touches shared
    memory another way (a tile op, a call taking an address)."""
    found, other = [], []

    def on_call(call):
        op = getattr(call, "op", None)
        name = str(op.name) if isinstance(op, tvm.ir.Op) else ""
        if is_tile_op(call) or name in _ADDRESS_CALLS or "access_ptr" in name or "cp_async" in name:
            other.append(call)

    tvm_ffi.structural_walk(body, [(tirx.TilePrimitiveCall, on_call), (tvm.ir.Call, on_call),
                                   (tvm.ir.TensorLoad, lambda l: found.append((l.source, list(l.indices)))
                                    if _shared(l.source) else None),
                                   (tirx.BufferStore, lambda s: found.append((s.buffer, list(s.indices)))
                                    if _shared(s.buffer) else None)])
    return None if other else found


def _inner_loops(body) -> list | None:
    """[(var, extent, min)] of the loops in ``body``; None when one's range is known only at run
    time (its iterations are not enumerated here)."""
    loops = []

    def on_for(loop):
        constant = isinstance(loop.min, tirx.IntImm) and isinstance(loop.extent, tirx.IntImm)
        # (an extent below 1: the loop runs never, an empty axis)
        loops.append((loop.loop_var, max(int(loop.extent.value), 0), int(loop.min.value)) if constant else None)

    tvm_ffi.structural_walk(body, [(tirx.For, on_for)])
    return None if None in loops else loops


def private_to_threads(stmts: list, enclosing: list, threads: list, values: dict, views: dict,
                       conditions: tuple = ()) -> bool:
    """Does each shared element that ``stmts`` touch (a loop: all its iterations; statements since
    a barrier: all of them) belong to one thread, for each value of the ``enclosing`` loops
    ([(var, extent, min)])? ``threads``: [(thread var, extent)]; ``values``: pure values bound in
    the kernel, by variable handle; ``views``: view -> buffer; ``conditions``: those of the ``if``
    statements around (the threads and iterations where one is false do not run ``stmts``; one
    that cannot be evaluated here is left out, which only counts more accesses)."""
    from tilelang_core.ir.numpy_ops import Unsupported, evaluate

    body = tirx.SeqStmt(list(stmts)) if len(stmts) > 1 else stmts[0]
    accesses = _accesses(body)
    if accesses is None or any(b in views or any(v.same_as(b) for v in views.values()) for b, _ in accesses):
        return False  # (a view's elements are another shape's: not compared here)
    loops = _inner_loops(body)
    if loops is None:
        return False
    threads = [(v, n, 0) for v, n in threads]
    axes = threads + list(enclosing) + loops
    extents = [max(n, 0) for _, n, _ in axes]
    if not accesses or int(np.prod(extents)) > MAX_POINTS:
        return not accesses
    # open grids: each access is evaluated over the axes its index and the conditions vary with
    # (numpy broadcasting), not over all of them; a statement that does not use a loop's variable
    # is not repeated for each of the loop's iterations
    grids = np.indices(extents, dtype=np.int64, sparse=True)
    env = {v.__chandle__(): g + lo for (v, _, lo), g in zip(axes, grids)}
    thread = np.zeros((1,) * len(axes), dtype=np.int64)
    for g, (_, n, _) in zip(grids[:len(threads)], threads):
        thread = thread * n + g
    outer = np.zeros((1,) * len(axes), dtype=np.int64)  # the enclosing loops' values, as one number
    for g, (_, n, _) in zip(grids[len(threads):len(threads) + len(enclosing)], enclosing):
        outer = outer * n + g
    runs = np.ones((1,) * len(axes), dtype=bool)
    for cond in conditions:
        try:
            runs = runs & np.asarray(evaluate(substitute_nested(cond, values), env), dtype=bool)
        except Unsupported:
            continue
    by_buffer: dict = {}
    for buffer, indices in accesses:
        try:
            flat = np.zeros((1,) * len(axes), dtype=np.int64)
            for index, size in zip(indices, buffer.ty.shape):
                if not isinstance(size, tirx.IntImm):
                    return False
                value = evaluate(substitute_nested(index, values), env)
                flat = flat * int(size.value) + np.asarray(value, dtype=np.int64)
        except Unsupported:
            return False
        shape = np.broadcast_shapes(flat.shape, thread.shape, outer.shape, runs.shape)
        where = np.broadcast_to(runs, shape)
        by_buffer.setdefault(buffer, []).append(tuple(np.broadcast_to(a, shape)[where]
                                                      for a in (flat, outer, thread)))
    for found in by_buffer.values():
        address, where_outer, owner = (np.concatenate(parts) for parts in zip(*found))
        if not address.size:
            continue
        address = address - address.min()
        key = where_outer * (int(address.max()) + 1) + address
        order = np.argsort(key, kind="stable")
        key, owner = key[order], owner[order]
        if np.any((key[1:] == key[:-1]) & (owner[1:] != owner[:-1])):
            return False
    return True


__all__ = ["private_to_threads"]
