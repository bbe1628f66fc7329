"""int8/uint8 (mma.sync m16n8k32, int32 accumulator) and float32 (tf32 m16n8k8) gemms lowered for
sm_80 and run by the SIMT interpreter, whose ldmatrix/mma semantics are written from the PTX ISA
apart from layouts.py: int8 must equal an int64 matmul exactly; tf32 must equal a float64 matmul
of the operands truncated to tf32 (the instruction ignores the low 13 mantissa bits; TileLang
passes the operands as stored, and kernels round them beforehand knowing it) up to fp32
accumulation, and a float64 matmul of the unrounded operands within tf32's precision. Ragged
tiles, both operand majors (ldmatrix for K-major operands, plain shared loads for the others),
warp policies."""

import numpy as np
import pytest

import kernels
from lowered import lower
import tilelang_core.language as T
from tilelang_core.errors import LoweringError
from tilelang_cuda.interpreter import run_kernel, tf32_truncate
from tilelang_cuda.options import CudaOptions
from tilelang_cuda.target import CAPABILITIES


RNG = np.random.default_rng(7)

SHAPES = [
    ((200, 136, 96), {"bm": 64, "bn": 64, "bk": 32}),                      # ragged M and N
    ((128, 64, 80), {"bm": 64, "bn": 64, "bk": 32}),                       # ragged K (zero-filled)
    ((64, 48, 64), {"bm": 64, "bn": 48, "bk": 64}),                        # odd NI: ldmatrix x2
    ((128, 128, 64), {"bm": 128, "bn": 64, "bk": 32, "policy": T.GemmWarpPolicy.FullCol}),
    ((96, 128, 64), {"bm": 32, "bn": 128, "bk": 64, "threads": 256, "stages": 2}),
]
#: fewer, smaller cases: a tf32 k-step covers 8 of K where an int8 one covers 32
SHAPES_TF32 = [
    ((100, 72, 40), {"bm": 64, "bn": 64, "bk": 32}),                       # ragged M, N and K
    ((64, 48, 64), {"bm": 64, "bn": 48, "bk": 32}),                        # odd NI: ldmatrix x2
    ((64, 128, 32), {"bm": 64, "bn": 128, "bk": 32, "policy": T.GemmWarpPolicy.FullCol}),
]
MAJORS = [(False, False), (False, True), (True, False), (True, True)]  # (transpose_A, transpose_B)


def operands(M, N, K, trans_a, trans_b, make):
    a = make((K, M) if trans_a else (M, K))
    b = make((N, K) if trans_b else (K, N))
    return a, b, (a.T if trans_a else a), (b.T if trans_b else b)


def run_gemm(shape, kw, majors, dtype, acc, make, **options):
    M, N, K = shape
    trans_a, trans_b = majors
    func = lower(kernels.make_gemm(M, N, K, dtype=getattr(T, dtype), out_dtype=getattr(T, acc),
                                   accum_dtype=getattr(T, acc), trans_a=trans_a, trans_b=trans_b, **kw),
                 **options)
    a, b, a_mk, b_kn = operands(M, N, K, trans_a, trans_b, make)
    c = np.zeros((M, N), acc)
    run_kernel(func, {"A": a, "B": b, "C": c})
    return func, c, a_mk, b_kn


@pytest.mark.parametrize("majors", MAJORS)
@pytest.mark.parametrize("shape,kw", SHAPES)
def test_int8_gemm_on_tensor_cores_is_exact(shape, kw, majors):
    func, c, a, b = run_gemm(shape, kw, majors, "int8", "int32",
                             lambda s: RNG.integers(-128, 128, s).astype(np.int8))
    assert "tl_mma_m16n8k32_s8_s32" in func.script()
    np.testing.assert_array_equal(c, a.astype(np.int64) @ b.astype(np.int64))


@pytest.mark.parametrize("majors", [(False, True), (True, False)])
def test_uint8_gemm_on_tensor_cores_is_exact(majors):
    func, c, a, b = run_gemm((100, 72, 64), {"bm": 64, "bn": 64, "bk": 32}, majors, "uint8", "int32",
                             lambda s: RNG.integers(0, 256, s).astype(np.uint8))
    assert "tl_mma_m16n8k32_u8_s32" in func.script()
    np.testing.assert_array_equal(c, a.astype(np.int64) @ b.astype(np.int64))


@pytest.mark.parametrize("majors", MAJORS)
@pytest.mark.parametrize("shape,kw", SHAPES_TF32)
def test_float32_gemm_runs_on_tf32_tensor_cores(shape, kw, majors):
    func, c, a, b = run_gemm(shape, kw, majors, "float32", "float32",
                             lambda s: RNG.standard_normal(s).astype(np.float32))
    assert "tl_mma_m16n8k8_tf32_f32" in func.script()
    K = a.shape[1]
    exact = a.astype(np.float64) @ b.astype(np.float64)
    # tf32 keeps 10 mantissa bits: each product is off by ~2^-11 relative, K of them add up
    np.testing.assert_allclose(c, exact, rtol=1e-3, atol=2e-3 * np.sqrt(K))
    # the operands reach the instruction as stored, which truncates them (as in TileLang)
    truncated = tf32_truncate(a).astype(np.float64) @ tf32_truncate(b).astype(np.float64)
    np.testing.assert_allclose(c, truncated, rtol=1e-5, atol=1e-5 * np.sqrt(K))


def test_disable_tf32_gives_exact_fp32_on_the_fma_path():
    assert CudaOptions.from_pass_configs({"tl.disable_tf32": True}).disable_tf32
    func, c, a, b = run_gemm((72, 40, 48), {"bm": 64, "bn": 32, "bk": 16}, (False, False), "float32",
                             "float32", lambda s: RNG.standard_normal(s).astype(np.float32), disable_tf32=True)
    assert "tl_mma" not in func.script() and "tl_round_tf32" not in func.script()
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5, atol=1e-5)


def test_an_arch_without_int8_tensor_cores_takes_the_fma_path(monkeypatch):
    """The choice reads the capability table's "mma" entry (target.py), nothing else."""
    monkeypatch.setitem(CAPABILITIES["sm_80"], "mma", ("float16", "bfloat16"))
    func, c, a, b = run_gemm((72, 40, 32), {"bm": 64, "bn": 32, "bk": 16}, (False, False), "int8", "int32",
                             lambda s: RNG.integers(-128, 128, s).astype(np.int8))
    assert "tl_mma" not in func.script()
    np.testing.assert_array_equal(c, a.astype(np.int64) @ b.astype(np.int64))


def test_int8_block_k_that_is_not_a_multiple_of_32_is_a_clear_error():
    with pytest.raises(LoweringError, match="K=16 must be a multiple of 32 for mma.sync m16n8k32.*block_K"):
        lower(kernels.make_gemm(128, 128, 64, bk=16, dtype=T.int8, out_dtype=T.int32, accum_dtype=T.int32))


def tilekernels_round_to_tf32(x):
    """TileKernels' mhc round_to_tf32: half a tf32 ulp added to the bits, the low 13 bits left for
    the instruction to drop (a round to nearest, ties away, once truncated)."""
    return (x.view(np.int32) + 0x1000).view(np.float32)


def rna_tf32(x):
    return ((x.view(np.uint32).astype(np.uint64) + 0x1000) & 0xFFFFE000).astype(np.uint32).view(np.float32)


def fn_grad_like(M, N, K):
    """The mhc pre-norm backward's fn_grad: a float32 gemm with A stored K x M (transposed, plain
    shared loads) accumulated over a loop, as TileKernels' _mhc_pre_norm_fn_bwd_mul runs it."""
    @T.prim_func
    def main(G: T.Tensor((K, M), T.float32), X: T.Tensor((K, N), T.float32), C: T.Tensor((M, N), T.float32)):
        with T.Kernel(1, threads=128):
            G_s = T.alloc_shared((32, M), T.float32)
            X_s = T.alloc_shared((32, N), T.float32)
            C_f = T.alloc_fragment((M, N), T.float32)
            T.clear(C_f)
            for k in T.serial(K // 32):
                T.copy(G[k * 32, 0], G_s)
                T.copy(X[k * 32, 0], X_s)
                T.gemm(G_s, X_s, C_f, transpose_A=True)
            T.copy(C_f, C)

    return main


def test_operands_rounded_by_the_kernel_are_not_rounded_again():
    """Was: cvt.rna on top of TileKernels' own rounding moved half the operands one tf32 ulp up;
    its mhc pre-norm fn_grad missed torch's tf32 reference on 3.1% of its elements on the H100.
    Now the product is that of the operands rounded once, to nearest."""
    M, N, K = 32, 64, 256
    g = RNG.standard_normal((K, M)).astype(np.float32)
    x = RNG.standard_normal((K, N)).astype(np.float32)
    c = np.zeros((M, N), np.float32)
    func = lower(fn_grad_like(M, N, K))
    assert "tl_mma_m16n8k8_tf32_f32" in func.script()
    run_kernel(func, {"G": tilekernels_round_to_tf32(g), "X": tilekernels_round_to_tf32(x), "C": c})
    once = rna_tf32(g).astype(np.float64).T @ rna_tf32(x).astype(np.float64)
    np.testing.assert_allclose(c, once, rtol=1e-5, atol=1e-5 * np.sqrt(K))


def test_the_cuda_source_passes_tf32_operands_as_stored():
    import tilelang_core as tilelang

    source = tilelang.compile(fn_grad_like(32, 64, 64), target="cuda:sm_90a",
                              pass_configs={"tl.disable_wgmma": True}).get_kernel_source()
    assert "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32" in source
    assert "cvt.rna.tf32" not in source and "tl_round_tf32" not in source
