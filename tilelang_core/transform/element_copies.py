"""Copies that are element loops in TileLang, written as such at parse time.

A ``T.copy`` of one element inside a ``T.Parallel`` body is that element's store.

TileLang writes gathers this way::

    for i, j in T.Parallel(block_M, block_N):
        T.copy(A[by * block_M + i, bx * block_N + j], B[by * block_M + i, bx * block_N + j])

Each iteration copies its own element; TileLang lowers the copy to ``B[...] = A[...]`` in the loop
body. So does this, at parse time, on every backend (the copy converts dtypes as a copy does). A
copy of several elements inside ``T.Parallel`` stays a tile op, which the backends refuse: it would
run once per element of the loop.

A ``T.copy`` between two fragments that takes part of one of them is a ``T.Parallel`` loop over
the part, as TileLang lowers it (its flash-decoding combine step)::

    T.copy(lse_local[k, :], lse_local_split)     # k: a serial or pipelined loop around it
    for i in T.Parallel(block_M):                # what it is
        lse_local_split[i] = lse_local[k, i]

Layout inference then lays ``lse_local`` out from the loop (thread ``i`` holds column ``i``, the
``k`` dimension in its registers: transform/serial_indexed.py) instead of giving every thread the
whole fragment, which took 512 registers a thread for a 4 x 128 fp16 tile and spilled.
"""

from __future__ import annotations

import tvm_ffi
from tvm import tirx


def tile_ops_in_parallel(body) -> list:
    """The tile-op statements that stand inside a T.Parallel loop body."""
    from ..ir.atomic_calls import is_parallel_loop

    found = []

    def on_for(loop):
        if is_parallel_loop(loop):
            tvm_ffi.structural_walk(loop.body, [(tirx.TilePrimitiveCall, found.append)])

    tvm_ffi.structural_walk(body, [(tirx.For, on_for)])
    return found


def element_copies_as_stores(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """``func`` with every one-element T.copy inside a T.Parallel body written as its store."""
    from ..ir import Copy, TileOp, is_tile_op
    from ..ir import region as R
    from ..ir.elementwise import cast_to, elementwise

    inside = tile_ops_in_parallel(func.body)
    if not inside:
        return func

    def on_call(call):
        if not is_tile_op(call) or not any(call.same_as(c) for c in inside):
            return call
        op = TileOp.from_stmt(call)
        if not isinstance(op, Copy) or any(R.as_int(e) != 1 for r in (op.src, op.dst) for e in R.extents_of(r)):
            return call
        dtype = str(op.dst.source.ty.dtype)
        return elementwise(op.src, op.dst, lambda v, idx: tirx.BufferStore(op.dst.source, cast_to(v, dtype), idx))

    return func.with_body(tvm_ffi.structural_map(func.body, [(tirx.TilePrimitiveCall, on_call)]))


def fragment_part_copies_as_loops(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """``func`` with every T.copy between two fragments that takes part of one of them (and stands
    outside T.Parallel) written as a T.Parallel loop over the part (module docstring). Copies of
    whole fragments, copies with a ``loop_layout``, and parts whose extents are known only at run
    time stay tile ops."""
    from ..ir import Copy, TileOp, is_tile_op
    from ..ir import region as R
    from ..ir.elementwise import cast_to, elementwise
    from .layout_inference import is_fragment

    inside = tile_ops_in_parallel(func.body)

    def on_call(call):
        if not is_tile_op(call) or any(call.same_as(c) for c in inside):
            return call
        op = TileOp.from_stmt(call)
        if not isinstance(op, Copy) or not all(R.is_region(r) and is_fragment(r.source) for r in (op.src, op.dst)):
            return call
        if R.covers_whole(op.src) and R.covers_whole(op.dst) or "loop_layout" in op.options:
            return call  # (an author's loop_layout lays the copy out itself)
        dtype = str(op.dst.source.ty.dtype)
        loops = elementwise(op.src, op.dst, lambda v, idx: tirx.BufferStore(op.dst.source, cast_to(v, dtype), idx))
        return call if loops is None else loops

    return func.with_body(tvm_ffi.structural_map(func.body, [(tirx.TilePrimitiveCall, on_call)]))


__all__ = ["element_copies_as_stores", "fragment_part_copies_as_loops", "tile_ops_in_parallel"]
