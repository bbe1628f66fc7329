"""What TVM's C printers would print into code the vendor compiler rejects, rewritten first.

Vectors. TVM 0.27's VectorizeLoop turns ``for i in T.vectorized(4): A[i] = T.cast(i + 1, "int8")`` into
one vector cast, and the CUDA printer then writes code nvcc rejects: ``make_int(...)`` for an
int8x4, ``int2`` converted to ``__nv_fp8x2_e4m3``, no type at all for int64x8, and a one-lane
vector fails inside the printer (``lanes > 1``). Every such loop computes one element per lane
with nothing carried between lanes (vector_loops.py made the others serial), so running it
unrolled is the same computation, and nvcc still merges neighbouring stores where it can.

Which loops: a vectorized loop of extent 1, and one whose body converts to or from an element
type narrower than 16 bits or a 64-bit integer (TileLang's ``test_vectorize_all_dtypes`` family),
unless the backend prints that conversion at that width as one call (vector_casts.py: fp8 <->
fp16/bf16/fp32 on CUDA). Plain copies of those types keep their vectors: the printer handles loads
and stores of them.

fp8 minimum and maximum. ``T.max(a, b)`` on float8 values prints as ``max(a, b)``, which no CUDA
overload takes (``__nv_fp8_e4m3`` converts to several types). Both operands are widened to
float32 and the result narrowed back: exact, since the result is one of the operands.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx


def _awkward(dtype) -> bool:
    dt = tvm.DataType(str(dtype))
    return dt.bits < 16 or (dt.bits == 64 and str(dtype).split("x")[0] in ("int64", "uint64"))


def _needs_unrolling(loop, vector_casts=None) -> bool:
    lanes = int(loop.extent.value) if isinstance(loop.extent, tirx.IntImm) else 0
    if lanes == 1:
        return True
    paired = set()  # casts stored as they are, which the backend prints as one call
    if vector_casts is not None and lanes:
        from .vector_casts import stored_cast_helper

        def on_store(store):
            if stored_cast_helper(store, vector_casts, lanes) is not None:
                paired.add(store.value.__chandle__())

        tvm_ffi.structural_walk(loop.body, [(tirx.BufferStore, on_store)])
    casts = []
    tvm_ffi.structural_walk(loop.body, [(tirx.Cast, casts.append)])
    return any(_awkward(c.dtype) or _awkward(c.value.dtype) for c in casts
               if str(c.dtype) != str(c.value.dtype) and c.__chandle__() not in paired)


def unroll_unprintable_vectors(body, vector_casts=None):
    """``body`` with every vectorized loop of the module docstring made an unrolled loop."""
    def on_for(loop):
        if loop.kind != tirx.ForKind.VECTORIZED or not _needs_unrolling(loop, vector_casts):
            return loop
        return tirx.For(loop.loop_var, loop.min, loop.extent, tirx.ForKind.UNROLLED, loop.body,
                        loop.thread_binding, loop.annotations, step=loop.step, span=loop.span)

    return tvm_ffi.structural_map(body, [(tirx.For, on_for)])


def _is_fp8(dtype) -> bool:
    dt = tvm.DataType(str(dtype))
    return dt.bits == 8 and str(dtype).startswith("float")


def widen_fp8_min_max(body):
    """``body`` with every float8 ``Min``/``Max`` computed in float32 (module docstring)."""
    def widen(node, make):
        if not _is_fp8(node.dtype):
            return node
        wide = str(node.dtype).replace(str(node.dtype).split("x")[0], "float32")
        return tirx.Cast(str(node.dtype), make(tirx.Cast(wide, node.a), tirx.Cast(wide, node.b)))

    return tvm_ffi.structural_map(body, [(tirx.Max, lambda n: widen(n, tirx.Max)),
                                         (tirx.Min, lambda n: widen(n, tirx.Min))], order="post")


def Printable(vector_casts=None):  # noqa: N802  (a pass factory, named like TVM's)
    """Pass form of this module, run just before TVM's VectorizeLoop."""

    @tirx.transform.prim_func_pass(opt_level=0, name="tl.Printable")
    def _pass(func, _mod, _ctx):
        return func.with_body(widen_fp8_min_max(unroll_unprintable_vectors(func.body, vector_casts)))

    return _pass


__all__ = ["Printable", "unroll_unprintable_vectors", "widen_fp8_min_max"]
