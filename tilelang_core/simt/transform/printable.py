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

Loop-invariant 8-bit values. ``for i in T.vectorized(4): a[i] = b`` with ``b`` an int8 variable
becomes a broadcast the CUDA printer only prints for a constant (``make_int8x4`` of a
non-constant fails inside the printer): such a loop is unrolled as well.

Unrolled loops of run-time extent. ``T.unroll(n)`` with ``n`` known only when the kernel runs
cannot be unrolled in the IR (TVM's UnrollLoop stops at it); TileLang prints it as a loop under
``#pragma unroll``, which nvcc unrolls as far as it can. ``Printable`` makes such a loop serial,
marked, and ``RestoreRuntimeUnroll`` (after UnrollLoop) makes it unrolled again, which the printer
writes as ``#pragma unroll``.

Bool vectors. A vectorized loop storing comparisons into a bool tile (TileLang's sparse MLA
backward: ``mask[i] = Indices[...] <= max_kv`` over a fragment's run of two registers) is printed
as ``*(ushort2*)(mask + 0) = ...``: two 2-byte lanes into two 1-byte bools, so the second lane
lands in the byte after it and the store runs past the tile (a silent wrong answer on the H200:
the mask, and the registers after it, were overwritten). Loops that load or store bool tiles are
unrolled: one byte per element.

fp8 minimum and maximum. ``T.max(a, b)`` on float8 values prints as ``max(a, b)``, which no CUDA
overload takes (``__nv_fp8_e4m3`` converts to several types). Both operands are widened to
float32 and the result narrowed back: exact, since the result is one of the operands.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from .state import uses_var


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
    if _broadcasts_8bit_variable(loop) or _touches_bool(loop):
        return True
    casts = []
    tvm_ffi.structural_walk(loop.body, [(tirx.Cast, casts.append)])
    return any(_awkward(c.dtype) or _awkward(c.value.dtype) for c in casts
               if str(c.dtype) != str(c.value.dtype) and c.__chandle__() not in paired)


def _touches_bool(loop) -> bool:
    """Whether the loop loads or stores a bool buffer (module docstring: bool vectors)."""
    found = []
    tvm_ffi.structural_walk(loop.body, [
        (tvm.ir.TensorLoad, lambda ld: found.append(ld) if str(ld.source.ty.dtype) == "bool" else None),
        (tirx.BufferStore, lambda st: found.append(st) if str(st.buffer.ty.dtype) == "bool" else None)])
    return bool(found)


def _broadcasts_8bit_variable(loop) -> bool:
    """Whether the loop stores a non-constant value that does not depend on the lane index into
    a buffer of 8-bit elements (vectorized, a broadcast of a variable: module docstring)."""
    lane = loop.loop_var
    found = []

    def on_store(store):
        value = store.value
        if tvm.DataType(str(value.dtype)).bits == 8 and not isinstance(value, (tirx.IntImm, tirx.FloatImm)) \
                and not uses_var(value, lane):
            found.append(store)

    tvm_ffi.structural_walk(loop.body, [(tirx.BufferStore, on_store)])
    return bool(found)


def _with_kind(loop, kind, annotations):
    return tirx.For(loop.loop_var, loop.min, loop.extent, kind, loop.body, loop.thread_binding,
                    annotations, step=loop.step, span=loop.span)


def unroll_unprintable_vectors(body, vector_casts=None):
    """``body`` with every vectorized loop of the module docstring made an unrolled loop."""
    def on_for(loop):
        if loop.kind != tirx.ForKind.VECTORIZED or not _needs_unrolling(loop, vector_casts):
            return loop
        return _with_kind(loop, tirx.ForKind.UNROLLED, loop.annotations)

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


_RUNTIME_UNROLL = "tl.runtime_unroll"


def hide_runtime_unroll(body):
    """``body`` with each unrolled loop of non-constant extent made serial and marked."""
    def on_for(loop):
        if loop.kind != tirx.ForKind.UNROLLED or isinstance(loop.extent, tirx.IntImm):
            return loop
        return _with_kind(loop, tirx.ForKind.SERIAL, {**loop.annotations, _RUNTIME_UNROLL: 1})

    return tvm_ffi.structural_map(body, [(tirx.For, on_for)])


def HideRuntimeUnroll():  # noqa: N802
    """Pass form of ``hide_runtime_unroll``, for pipelines whose printer has no unroll pragma
    (cpu's LLVM, Metal): there the loop simply stays serial."""

    @tirx.transform.prim_func_pass(opt_level=0, name="tl.HideRuntimeUnroll")
    def _pass(func, _mod, _ctx):
        return func.with_body(hide_runtime_unroll(func.body))

    return _pass


def RestoreRuntimeUnroll():  # noqa: N802
    """After TVM's UnrollLoop: the loops ``hide_runtime_unroll`` marked are unrolled again (the
    CUDA printer writes ``#pragma unroll`` before them)."""

    def on_for(loop):
        if _RUNTIME_UNROLL not in loop.annotations:
            return loop
        rest = {k: v for k, v in loop.annotations.items() if k != _RUNTIME_UNROLL}
        return _with_kind(loop, tirx.ForKind.UNROLLED, rest)

    @tirx.transform.prim_func_pass(opt_level=0, name="tl.RestoreRuntimeUnroll")
    def _pass(func, _mod, _ctx):
        return func.with_body(tvm_ffi.structural_map(func.body, [(tirx.For, on_for)]))

    return _pass


def UnrollBoolVectors():  # noqa: N802
    """Only the bool rule of this module, for a printer that needs no other (Metal's: it refuses
    ``boolx4`` outright), run before TVM's VectorizeLoop."""

    def on_for(loop):
        if loop.kind != tirx.ForKind.VECTORIZED or not _touches_bool(loop):
            return loop
        return _with_kind(loop, tirx.ForKind.UNROLLED, loop.annotations)

    @tirx.transform.prim_func_pass(opt_level=0, name="tl.UnrollBoolVectors")
    def _pass(func, _mod, _ctx):
        return func.with_body(tvm_ffi.structural_map(func.body, [(tirx.For, on_for)]))

    return _pass


def Printable(vector_casts=None):  # noqa: N802  (a pass factory, named like TVM's)
    """Pass form of this module, run just before TVM's VectorizeLoop."""

    @tirx.transform.prim_func_pass(opt_level=0, name="tl.Printable")
    def _pass(func, _mod, _ctx):
        body = unroll_unprintable_vectors(func.body, vector_casts)
        return func.with_body(hide_runtime_unroll(widen_fp8_min_max(body)))

    return _pass


__all__ = ["HideRuntimeUnroll", "Printable", "RestoreRuntimeUnroll", "UnrollBoolVectors", "hide_runtime_unroll",
           "unroll_unprintable_vectors",
           "widen_fp8_min_max"]
