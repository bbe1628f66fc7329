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
and stores of them. So an unrolled loop of one store keeps its runs in memory whole: each run is
copied into a register array by a plain vector copy, the lanes computed on the arrays, the result
copied out the same way (``_staged``: an int8 -> half dequantization of 8 lanes is one 8-byte load
and one 16-byte store, not 8 of each); a load under ``if_then_else`` stays where its guard is.

Loop-invariant 8-bit values. ``for i in T.vectorized(4): a[i] = b`` with ``b`` an int8 variable
becomes a broadcast the CUDA printer only prints for a constant (``make_int8x4`` of a
non-constant fails inside the printer): such a loop is unrolled as well. A constant it prints up
to 4 lanes (one 32-bit word); at 8 or 16 it writes ``make_int2`` with 8 arguments for int8, which
nvcc rejects, and fails inside the printer for float8 (TileKernels' fused per-channel cast zeroes
the 8 float8 elements of a padding row in shared memory). Such a loop runs as unrolled runs of
4 vectorized lanes: every store stays a 32-bit word.

Comparisons. A vector of more than 4 comparisons (``T.Select(a[i] > b[i], ...)`` over 8 float16
lanes) is a ``boolx8``, for which the CUDA printer has no type (it fails inside the printer):
such a loop too runs as unrolled runs of 4 lanes.

float8 arithmetic. A float8 vector that is neither loaded, stored, nor converted (a select
between float8 lanes, an add) prints as member accesses ``__nv_fp8x4_e4m3`` does not have: the
loop is unrolled. (Scalar float8 arithmetic, ``a + b``, nvcc still rejects: cuda_fp8.h has no
such operator; compute in float32.)

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

from ...transform.safe_values import is_if_then_else
from .state import substitute, uses_var


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
    if _touches_bool(loop):
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


#: the most lanes of an 8-bit constant or of comparisons TVM's CUDA printer writes right
NARROW_LANES = 4


def _narrow_vectors(loop) -> str | None:
    """How the 8-bit values and the comparisons the loop computes would print once vectorized:
    None where they print right, ``"runs"`` where only constants or comparisons wider than
    NARROW_LANES would not (runs of that many lanes do), ``"unroll"`` otherwise (module
    docstring: loop-invariant 8-bit values, comparisons, float8 arithmetic)."""
    lane, lanes = loop.loop_var, int(loop.extent.value) if isinstance(loop.extent, tirx.IntImm) else 0
    verdicts = set()

    def visit(expr):
        if not isinstance(getattr(expr, "ty", None), tvm.ir.PrimType):  # a load's buffer, a name
            return None
        dt = tvm.DataType(str(expr.dtype))
        if not uses_var(expr, lane):  # the vectorizer broadcasts it
            if dt.bits == 8:
                constant = isinstance(expr, (tirx.IntImm, tirx.FloatImm))
                verdicts.add(None if constant and lanes <= NARROW_LANES else
                             "runs" if constant and lanes % NARROW_LANES == 0 else "unroll")
            return tvm_ffi.WalkResult.SKIP
        if dt.bits < 16 and _is_float(expr.dtype) and not isinstance(expr, (tvm.ir.TensorLoad, tirx.Cast)):
            verdicts.add("unroll")  # (casts: _needs_unrolling's own rule)
        if str(expr.dtype) == "bool" and lanes > NARROW_LANES:
            verdicts.add("runs" if lanes % NARROW_LANES == 0 else "unroll")
        return None

    def on_store(store):
        tvm_ffi.structural_walk(store.value, [(tvm.ir.Expr, visit)], order="pre")

    tvm_ffi.structural_walk(loop.body, [(tirx.BufferStore, on_store)])
    return "unroll" if "unroll" in verdicts else "runs" if "runs" in verdicts else None


def _is_float(dtype) -> bool:
    return str(dtype).startswith("float")


def _in_runs(loop, run: int):
    """``loop`` as unrolled runs of ``run`` vectorized lanes (``o * run + v``)."""
    name, dt = loop.loop_var.name, str(loop.loop_var.dtype)
    outer, inner = tirx.Var(f"{name}_o", dt), tirx.Var(f"{name}_v", dt)
    body = substitute(loop.body, {loop.loop_var: loop.min + outer * run + inner})
    inner_loop = tirx.For(inner, tirx.const(0, dt), tirx.const(run, dt), tirx.ForKind.VECTORIZED, body)
    return tirx.For(outer, tirx.const(0, dt), tirx.const(int(loop.extent.value) // run, dt),
                    tirx.ForKind.UNROLLED, inner_loop, None, loop.annotations)


def _with_kind(loop, kind, annotations):
    return tirx.For(loop.loop_var, loop.min, loop.extent, kind, loop.body, loop.thread_binding,
                    annotations, step=loop.step, span=loop.span)


def unroll_unprintable_vectors(body, vector_casts=None):
    """``body`` with every vectorized loop of the module docstring made an unrolled loop, or
    unrolled runs of NARROW_LANES vectorized lanes; an unrolled one keeps its narrow memory
    accesses whole (``_staged``)."""
    def on_for(loop):
        if loop.kind != tirx.ForKind.VECTORIZED:
            return loop
        narrow = _narrow_vectors(loop)
        if narrow == "unroll":
            return _with_kind(loop, tirx.ForKind.UNROLLED, loop.annotations)
        if _needs_unrolling(loop, vector_casts):
            return _staged(loop)
        return _in_runs(loop, NARROW_LANES) if narrow == "runs" else loop

    return tvm_ffi.structural_map(body, [(tirx.For, on_for)])


def _staged(loop):
    """``loop`` unrolled, its runs of elements in memory moved through registers by plain vector
    copies: ``for v in vectorized(n): C[c + v] = f(A[a + v])`` becomes a copy of A[a:a + n] into a
    register array, the lanes unrolled on it into a second one, and a copy of that to C[c:c + n]
    (the printer prints plain copies of 8-bit vectors, not their conversions): an int8 -> half
    dequantization of 8 lanes is one 8-byte load and one 16-byte store instead of 8 of each. A run
    is a flat index ``base + v`` (FlattenBuffer ran) of 8-, 16- or 32-bit elements outside
    registers, 16 bytes at most; a loaded buffer the loop also writes keeps its element accesses."""
    lane = loop.loop_var
    lanes = int(loop.extent.value) if isinstance(loop.extent, tirx.IntImm) else 0
    unrolled = _with_kind(loop, tirx.ForKind.UNROLLED, loop.annotations)
    if lanes < 2 or not isinstance(loop.body, tirx.BufferStore):
        return unrolled
    store = loop.body

    def run_base(buffer, indices):
        """The run's first index (at the loop's first lane), or None."""
        bits = tvm.DataType(str(buffer.ty.dtype)).bits
        if len(indices) != 1 or bits not in (8, 16, 32) or lanes * bits > 128 or str(buffer.ty.dtype) == "bool" \
                or str(buffer.ty.storage_scope).startswith("local"):
            return None
        base = substitute(indices[0], {lane: loop.min})
        same = tvm.sym.Analyzer().can_prove(indices[0] - base == lane - loop.min) if uses_var(indices[0], lane) \
            else False
        return base if same and not uses_var(base, lane) else None

    # a load in a branch of if_then_else runs only where its condition holds (a bounds guard):
    # copied ahead, it would run on every lane
    guarded = set()

    def on_call(call):
        if is_if_then_else(call):
            for arm in call.args[1:]:
                tvm_ffi.structural_walk(arm, [(tvm.ir.TensorLoad, lambda ld: guarded.add(ld.__chandle__()))])

    tvm_ffi.structural_walk(store.value, [(tvm.ir.Call, on_call)])
    staged, copies_in = {}, []

    def registers(buffer):
        return tirx.decl_buffer((lanes,), str(buffer.ty.dtype), name=f"{buffer.name}_run", scope="local")

    def vector_copy(dst, dst_base, src, src_base):
        """``dst[dst_base + v] = src[src_base + v]`` for the run's lanes (a base None: a register
        array, from its element 0)."""
        v = tirx.Var("v", str(lane.dtype))
        at = lambda base: [v if base is None else base + v]  # noqa: E731
        return tirx.For(v, tirx.const(0, str(lane.dtype)), loop.extent, tirx.ForKind.VECTORIZED,
                        tirx.BufferStore(dst, tirx.BufferLoad(src, at(src_base)), at(dst_base)))

    def on_load(load):
        if load.source.same_as(store.buffer) or load.__chandle__() in guarded:
            return load
        base = run_base(load.source, load.indices)
        if base is None:
            return load
        key = (load.source.__chandle__(), str(base))
        if key not in staged:
            staged[key] = registers(load.source)
            copies_in.append(vector_copy(staged[key], None, load.source, base))
        return tirx.BufferLoad(staged[key], [_lane_index(lane, loop.min)])

    value = tvm_ffi.structural_map(store.value, [(tvm.ir.TensorLoad, on_load)])
    out_base = run_base(store.buffer, store.indices)
    if not staged and out_base is None:
        return unrolled
    allocs = list(staged.values())
    if out_base is None:
        computed = tirx.BufferStore(store.buffer, value, store.indices)
        copy_out = []
    else:
        out = registers(store.buffer)
        allocs.append(out)
        computed = tirx.BufferStore(out, value, [_lane_index(lane, loop.min)])
        copy_out = [vector_copy(store.buffer, out_base, out, None)]
    compute = tirx.For(lane, loop.min, loop.extent, tirx.ForKind.UNROLLED, computed, None, loop.annotations)
    return tirx.SeqStmt([*(tirx.AllocBuffer(b) for b in allocs), *copies_in, compute, *copy_out])


def _lane_index(lane, first):
    """The register array's index of ``lane`` in a loop starting at ``first``."""
    return lane if isinstance(first, tirx.IntImm) and int(first.value) == 0 else lane - first


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
