"""Runs that convert to or from 8-bit types keep whole-width memory accesses (simt/transform/
printable.py's ``_staged``): TVM's CUDA printer cannot print those conversions as vectors, so
the loop is unrolled, but its runs in memory move through register arrays by plain vector
copies; and the 8-lane paired conversions store their lanes at once (vector_casts.py). Built
with nvcc for sm_90a, SASS read with cuobjdump: one load and one store per run, no local memory.
Numerics on a GPU: gpu/test_gpu_spread_loops.py (``test_dequantized_runs``)."""

import re
import sys
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("tilelang_cuda")
sys.path.append(str(Path(__file__).parents[3] / "tests" / "simt"))

import tilelang_core.language as T  # noqa: E402
from test_language_fidelity_build import needs_nvcc  # noqa: E402
from test_wide_value_vectors import scale_add, swiglu  # noqa: E402


def dequant(M, N, src="int8", dst="float16", bm=16, bn=128):
    """C = dst(float32(A) * 0.5): an 8-bit tensor widened, under the author's guard."""
    @T.prim_func
    def main(A: T.Tensor((M, N), src), C: T.Tensor((M, N), dst)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            for i, j in T.Parallel(bm, bn):
                row = by * bm + i
                col = bx * bn + j
                if row < M and col < N:
                    C[row, col] = T.cast(T.cast(A[row, col], "float32") * 0.5, dst)

    return main


def int8_axpy(N):
    """C = int8(3 * A + B) computed in int32 over a 1-D tensor."""
    @T.prim_func
    def main(A: T.Tensor((N,), "int8"), B: T.Tensor((N,), "int8"), C: T.Tensor((N,), "int8")):
        with T.Kernel(T.ceildiv(N, 1024), threads=128) as bx:
            for i in T.Parallel(1024):
                C[bx * 1024 + i] = T.cast(T.cast(A[bx * 1024 + i], "int32") * 3 + T.cast(B[bx * 1024 + i], "int32"),
                                          "int8")

    return main


#: kernel, arch, {SASS op: count at least}
CASES = {
    "int8_to_half": (lambda: dequant(256, 256), "sm_80", {"LDG.E.64": 1, "STG.E.128": 1}),
    "int8_to_half_ragged": (lambda: dequant(37, 200), "sm_80", {"LDG.E.64": 1, "STG.E.128": 1}),
    "fp8_to_bf16": (lambda: dequant(256, 256, "float8_e4m3fn", "bfloat16"), "sm_90a", {"LDG.E.64": 1, "STG.E.128": 1}),
    "int8_axpy": (lambda: int8_axpy(4096), "sm_80", {"LDG.E.64": 2, "STG.E.64": 1}),
    # paired conversions of 8 lanes: one 16- (8-) byte store
    "bf16_scale_add": (lambda: scale_add(256, 256, "bfloat16"), "sm_80", {"LDG.E.128": 2, "STG.E.128": 1}),
    "swiglu_to_fp8": (lambda: swiglu(256, 256, "bfloat16", "float8_e4m3fn"), "sm_90a", {"LDG.E.128": 2, "STG.E.64": 1}),
}


@needs_nvcc
@pytest.mark.parametrize("case", sorted(CASES))
def test_one_access_per_run(case, tmp_path):
    from tilelang_cuda import codegen, compiler
    from tilelang_cuda.options import CudaOptions
    from tilelang_cuda.pipeline import CudaBackend
    from test_language_fidelity_build import Target

    if compiler.find_cuobjdump() is None:
        pytest.skip("cuobjdump missing: pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm")
    make, arch, wanted = CASES[case]
    backend, options = CudaBackend(Target(arch)), CudaOptions(device_compiler="nvcc")
    source = backend.codegen(backend.lower(make(), options), options)
    cubin, _, _ = compiler.compile_device(codegen.split_source(source).device, arch, tmp_path, options)
    ops = Counter(m.replace(".CONSTANT", "") for m in re.findall(r"\b((?:LDG|STG|LDL|STL)[A-Z0-9_.]*)", compiler.sass(cubin)))
    assert all(ops[op] >= n for op, n in wanted.items()), dict(ops)
    narrow = [op for op in ops if op in ("LDG.E.U8", "LDG.E.S8", "STG.E.U8", "STG.E.U16", "STG.E")]
    assert not narrow or case.endswith("ragged"), dict(ops)  # (a ragged edge runs lane by lane)
    assert not any(op.startswith(("LDL", "STL")) for op in ops), dict(ops)  # the arrays stay in registers


# -- the rewrite itself, on hand-built loops (after FlattenBuffer: flat indices) -----------------

def _loop(first, value_of, out_dtype="float16"):
    """``for v in vectorized(8) from first: C[v + 10] = value_of(A, v)`` over flat buffers."""
    from tvm import tirx

    A = tirx.decl_buffer((64,), "int8", name="A")
    C = tirx.decl_buffer((64,), out_dtype, name="C")
    v = tirx.Var("v", "int32")
    store = tirx.BufferStore(C, value_of(A, v), [v + 10])
    return tirx.For(v, tirx.const(first, "int32"), tirx.const(8, "int32"), tirx.ForKind.VECTORIZED, store)


def _parts(stmt):
    import tvm_ffi
    from tvm import tirx

    loops = []
    tvm_ffi.structural_walk(stmt, [(tirx.For, loops.append)], order="pre")
    return loops


def test_a_run_starting_past_zero_copies_from_its_first_lane():
    import tvm
    from tvm import tirx

    from tilelang_core.simt.transform.printable import _staged

    out = _staged(_loop(4, lambda A, v: tirx.Cast("float16", tirx.BufferLoad(A, [v + 20]))))
    copy_in, compute, copy_out = _parts(out)
    assert copy_in.kind == tirx.ForKind.VECTORIZED and copy_out.kind == tirx.ForKind.VECTORIZED
    analyzer = tvm.sym.Analyzer()
    # A[24 + v] -> A_run[v]; C_run[v] -> C[14 + v]: the lanes 4..11 of the loop
    assert analyzer.can_prove(copy_in.body.value.indices[0] - copy_in.loop_var == 24)
    assert analyzer.can_prove(copy_out.body.indices[0] - copy_out.loop_var == 14)
    assert compute.kind == tirx.ForKind.UNROLLED and analyzer.can_prove(compute.body.indices[0] - compute.loop_var == -4)


def test_a_load_under_a_bounds_guard_is_not_copied_ahead():
    """``if_then_else(v < 5, A[v], 0)``: lanes 5..7 must not read A (it may end there)."""
    from tvm import tirx

    from tilelang_core.simt.transform.printable import _staged

    def guarded(A, v):
        return tirx.Cast("float16", tirx.if_then_else(v < 5, tirx.BufferLoad(A, [v + 40]), tirx.const(0, "int8")))

    loops = _parts(_staged(_loop(0, guarded)))
    assert len(loops) == 2  # the unrolled lanes and the copy out; no copy of A
    assert "A[" in str(loops[0]) and "A_run" not in str(loops[0])
