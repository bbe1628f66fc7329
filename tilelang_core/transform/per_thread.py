"""Per-thread buffers (``T.alloc_local``, ``T.alloc_var``) are each thread's own, so the tile
statements that only feed them run whole in every thread, as TileLang lowers them:

- a ``T.copy`` from or to one, or a ``T.fill`` of one, becomes loops every thread runs
  (:func:`local_copies_as_loops`);
- a ``T.Parallel`` nest that stores only into them and touches no fragment runs whole in every
  thread instead of being dealt over the threads (:func:`per_thread_parallel_loops`)::

      x_local = T.alloc_local((4,), T.int32)
      for j in T.Parallel(4):
          x_local[j] = X[t, j] * 2          # every thread fills all of its x_local

Both were dealt over the threads as block-wide tile statements: each thread filled one element of
its own buffer and read the others unset, a silent wrong answer (DeepSeek's TileKernels copy a row
per thread this way). Done at parse time, so every backend sees plain per-thread loops.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx


#: scopes of buffers each thread holds whole (T.alloc_local, T.alloc_var)
PER_THREAD_SCOPES = ("local", "local.var")


def local_copies_as_loops(func: tirx.PrimFunc, error) -> tirx.PrimFunc:
    """``func`` with every T.copy from or to a per-thread buffer, and every T.fill of one, written
    as loops every thread runs whole. ``error(msg)`` for extents known only at run time."""
    from ..ir import Copy, Fill, TileOp, is_tile_op
    from ..ir import region as R
    from ..ir.elementwise import cast_to, elementwise, serial_loop

    def per_thread(region) -> bool:
        return R.is_region(region) and str(region.source.ty.storage_scope) in PER_THREAD_SCOPES

    def on_call(call):
        if not is_tile_op(call):
            return call
        op = TileOp.from_stmt(call)
        if isinstance(op, Fill) and per_thread(op.dst):
            # (a fill is a copy of its value: the destination read stands in for the source)
            dst = op.dst.source
            loops = elementwise(op.dst, op.dst, lambda v, idx: tirx.BufferStore(dst, op.value, idx),
                                loop=serial_loop)
            what = f"T.fill of {dst.name}"
        elif isinstance(op, Copy) and (per_thread(op.src) or per_thread(op.dst)):
            dtype = str(op.dst.source.ty.dtype)
            loops = elementwise(op.src, op.dst,
                                lambda v, idx: tirx.BufferStore(op.dst.source, cast_to(v, dtype), idx),
                                loop=serial_loop)
            what = f"T.copy between {op.src.source.name} and {op.dst.source.name}"
        else:
            return call
        if loops is None:
            raise error(f"{what}: a tile statement on a T.alloc_local buffer needs extents known when "
                        "the kernel is compiled")
        return loops

    return func.with_body(tvm_ffi.structural_map(func.body, [(tirx.TilePrimitiveCall, on_call)]))


def per_thread_parallel_loops(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """``func`` with every outermost T.Parallel nest that stores only into per-thread buffers and
    touches no fragment (and holds no tile op, atomic or address taken, which may write elsewhere)
    made serial. Other calls (math, warp shuffles) are per-thread values like any expression."""
    from ..ir.atomic_calls import is_parallel_loop
    from .structural import stmt_children

    serialize = set()

    def qualifies(loop) -> bool:
        found = {"ok": True}

        def store(node):
            if str(node.buffer.ty.storage_scope) not in PER_THREAD_SCOPES:
                found["ok"] = False

        def load(node):
            if str(node.source.ty.storage_scope) == "local.fragment":
                found["ok"] = False

        def call(node):
            name = str(getattr(node.op, "name", ""))
            if name in _WRITING_CALLS or "atomic" in name or "access_ptr" in name:
                found["ok"] = False  # (an atomic, an address taken: it may write elsewhere)

        def tile(node):
            found["ok"] = False

        tvm_ffi.structural_walk(loop.body, [(tirx.BufferStore, store), (tvm.ir.TensorLoad, load),
                                            (tirx.Call, call), (tirx.TilePrimitiveCall, tile)])
        return found["ok"]

    def visit(node, inside_parallel: bool):
        for child in stmt_children(node):
            if isinstance(child, tirx.For) and is_parallel_loop(child) and not inside_parallel:
                if qualifies(child):
                    # by loop variable: the loops are rebuilt as their bodies change
                    tvm_ffi.structural_walk(child, [(tirx.For, lambda f: serialize.add(f.loop_var.__chandle__())
                                                     if is_parallel_loop(f) else None)])
                    serialize.add(child.loop_var.__chandle__())
                visit(child, True)
            else:
                visit(child, inside_parallel or (isinstance(child, tirx.For) and is_parallel_loop(child)))

    visit(func.body, False)
    if not serialize:
        return func

    def on_for(loop):
        if loop.loop_var.__chandle__() not in serialize:
            return loop
        ann = {k: v for k, v in (loop.annotations or {}).items() if not str(k).startswith("tl.")}
        return tirx.For(loop.loop_var, loop.min, loop.extent, tirx.ForKind.SERIAL, loop.body,
                        loop.thread_binding, ann or None, loop.step)

    return func.with_body(tvm_ffi.structural_map(func.body, [(tirx.For, on_for)]))


#: calls that write memory through an address
_WRITING_CALLS = {"tirx.address_of", "tirx.tvm_access_ptr", "tirx.call_extern", "tirx.call_pure_extern"}


__all__ = ["PER_THREAD_SCOPES", "local_copies_as_loops", "per_thread_parallel_loops"]
