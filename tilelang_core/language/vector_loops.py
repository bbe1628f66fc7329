"""``T.vectorized`` loops that vectorizing would get wrong run serially instead.

``for k in T.vectorized(K): B[row] = B[row] + A[row, k]`` carries ``B[row]`` from one iteration to
the next. TVM 0.27's VectorizeLoop turns the body into one vector statement anyway: wrong sums on
the cpu backend (silently) and uncompilable CUDA. A loop is vectorized only when each iteration
writes its own elements (every store's index uses the loop variable) and reads back only what that
same iteration wrote (a load of a stored buffer uses the store's exact index); otherwise it becomes
a serial loop, which computes what the kernel says.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx


def _uses(node, var) -> bool:
    found = []
    tvm_ffi.structural_walk(node, [(tirx.Var, lambda v: found.append(v) if v.same_as(var) else None)])
    return bool(found)


def _vectorizable(loop) -> bool:
    stores, loads = [], []
    tvm_ffi.structural_walk(loop.body, [(tirx.BufferStore, stores.append), (tvm.ir.TensorLoad, loads.append)])
    for store in stores:
        if not any(_uses(i, loop.loop_var) for i in store.indices):
            return False
    written = {}
    for store in stores:
        written.setdefault(store.buffer.__chandle__(), []).append(list(store.indices))
    for load in loads:
        for indices in written.get(load.source.__chandle__(), []):
            if len(indices) != len(load.indices) or not all(
                    tvm_ffi.structural_equal(a, b) for a, b in zip(indices, load.indices)):
                return False
    return True


def serialize_unsafe_vectorized(func):
    """``func`` with every unsafe ``T.vectorized`` loop made serial (see the module docs)."""
    def on_for(loop):
        if loop.kind == tirx.ForKind.VECTORIZED and not _vectorizable(loop):
            return tirx.For(loop.loop_var, loop.min, loop.extent, tirx.ForKind.SERIAL, loop.body,
                            loop.thread_binding, loop.annotations, loop.step)
        return loop

    hits = []
    tvm_ffi.structural_walk(func.body, [(tirx.For, lambda f: hits.append(f)
                                         if f.kind == tirx.ForKind.VECTORIZED else None)])
    if not hits:
        return func
    return func.with_body(tvm_ffi.structural_map(func.body, [(tirx.For, on_for)], order="post"))


__all__ = ["serialize_unsafe_vectorized"]
