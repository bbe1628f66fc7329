"""Kernels of TileLang's language tests that failed to compile for CUDA (found on the H200):
vectorized casts to 8-bit and 64-bit types, fp8 min/max, an int64 warp reduction, half values
scaled by a float literal in a vectorized T.Parallel, uint64 and float8_e8m0fnu buffers (TVM's
CUDA printer wrote code nvcc rejects), and a T.copy between two single elements (refused).
Each kernel's device code is compiled by nvcc for sm_80 and sm_90a, and the ones the SIMT
interpreter runs are checked against numpy."""

import shutil
from pathlib import Path

import numpy as np
import pytest

from lowered import lower
import tilelang_core.language as T
from tilelang_cuda.interpreter import run_kernel

NVCC = shutil.which("nvcc") is not None or Path("/usr/local/cuda/bin/nvcc").exists()
needs_nvcc = pytest.mark.skipif(not NVCC, reason="nvcc (CUDA toolkit) is not installed")
RNG = np.random.default_rng(7)


class Target:
    def __init__(self, arch):
        self.arch = arch


def compiles(func, arch, tmp_path) -> str:
    """The kernel's CUDA source, after nvcc compiled its device code for ``arch``."""
    from tilelang_cuda import codegen, compiler
    from tilelang_cuda.options import CudaOptions
    from tilelang_cuda.pipeline import CudaBackend

    backend, options = CudaBackend(Target(arch)), CudaOptions(device_compiler="nvcc")
    source = backend.codegen(backend.lower(func, options), options)
    cubin, _, _ = compiler.compile_device(codegen.split_source(source).device, arch, tmp_path, options)
    assert Path(cubin).stat().st_size > 0
    return source


def vectorized_cast(dtype):
    """A[8 * k + i] = i + 1 for i < 2**k: vectorized loops of 1, 2, 4 and 8 lanes."""
    @T.prim_func
    def kernel(A: T.Tensor((64,), dtype)):
        with T.Kernel(1, threads=128):
            for i in T.vectorized(1):
                A[i] = T.cast(i + 1, dtype)
            for i in T.vectorized(2):
                A[8 + i] = T.cast(i + 1, dtype)
            for i in T.vectorized(4):
                A[16 + i] = T.cast(i + 1, dtype)
            for i in T.vectorized(8):
                A[24 + i] = T.cast(i + 1, dtype)

    return kernel


def binary(dtype, op):
    ops = {"max": lambda a, b: T.max(a, b), "min": lambda a, b: T.min(a, b),
           "clamp": lambda a, b: T.clamp(a, T.cast(-1.0, dtype), T.cast(1.0, dtype))}

    @T.prim_func
    def kernel(A: T.Tensor((256,), dtype), B: T.Tensor((256,), dtype), C: T.Tensor((256,), dtype)):
        with T.Kernel(2, threads=128) as bx:
            for i in T.Parallel(128):
                C[bx * 128 + i] = ops[op](A[bx * 128 + i], B[bx * 128 + i])

    return kernel


def row_reduce(dtype, kind, M=8, N=64):
    @T.prim_func
    def kernel(A: T.Tensor((M, N), dtype), B: T.Tensor((M,), dtype)):
        with T.Kernel(1, threads=32):
            a = T.alloc_fragment((M, N), dtype)
            b = T.alloc_fragment((M,), dtype)
            T.copy(A, a)
            getattr(T, f"reduce_{kind}")(a, b, dim=1)
            T.copy(b, B)

    return kernel


def scaled_clamp(N=256, block=128):
    """fp16 clamped between half its row's min and max: the bounds are computed in float32."""
    @T.prim_func
    def kernel(A: T.Tensor((1, N), "float16"), B: T.Tensor((1, N), "float16")):
        with T.Kernel(N // block, threads=block) as bx:
            a = T.alloc_fragment((1, block), "float16")
            lo = T.alloc_fragment((1,), "float16")
            hi = T.alloc_fragment((1,), "float16")
            T.copy(A[0, bx * block], a)
            T.reduce_min(a, lo, dim=1)
            T.reduce_max(a, hi, dim=1)
            for i in T.Parallel(block):
                a[0, i] = T.clamp(a[0, i], lo[0] * 0.5, hi[0] * 0.5)
            T.copy(a, B[0, bx * block])

    return kernel


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("dtype", ["uint8", "int8", "uint64", "int64", "uint16"])
def test_vectorized_casts_to_narrow_and_wide_integers_compile(arch, dtype, tmp_path):
    compiles(vectorized_cast(dtype), arch, tmp_path)


@needs_nvcc
@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu"])
def test_vectorized_casts_to_fp8_compile(dtype, tmp_path):
    compiles(vectorized_cast(dtype), "sm_90a", tmp_path)


@needs_nvcc
@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2"])
@pytest.mark.parametrize("op", ["max", "min", "clamp"])
def test_fp8_min_max_clamp_compile_and_widen(dtype, op, tmp_path):
    source = compiles(binary(dtype, op), "sm_90a", tmp_path)
    kernel = source[source.find('extern "C" __global__'):]
    assert "(float)" in kernel  # computed in float32, the result narrowed back


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("dtype", ["int64", "uint32", "uint64"])
def test_integer_row_reductions_compile(arch, dtype, tmp_path):
    compiles(row_reduce(dtype, "sum"), arch, tmp_path)
    compiles(row_reduce(dtype, "max"), arch, tmp_path)
    compiles(row_reduce(dtype, "bitxor"), arch, tmp_path)


@needs_nvcc
def test_half_values_scaled_by_a_float_literal_compile(tmp_path):
    source = compiles(scaled_clamp(), "sm_90a", tmp_path)
    if "make_ulonglong4(" in source[source.find('extern "C" __global__'):]:  # 8 float32 lanes
        assert "ulonglong4 make_ulonglong4(float a" in source  # built by the intrinsics' overload


def test_vectorized_casts_interpreted():
    for dtype, np_dtype in (("int8", np.int8), ("uint64", np.uint64), ("int64", np.int64)):
        a = np.zeros(64, np_dtype)
        run_kernel(lower(vectorized_cast(dtype)), {"A": a})
        want = np.zeros(64, np_dtype)
        for k in range(4):
            want[8 * k:8 * k + 2 ** k] = np.arange(1, 2 ** k + 1)
        np.testing.assert_array_equal(a, want)


@pytest.mark.parametrize("kind", ["sum", "max", "min"])
def test_int64_row_reduction_interpreted(kind):
    a = RNG.integers(-2**40, 2**40, size=(8, 64), dtype=np.int64)
    b = np.zeros(8, np.int64)
    run_kernel(lower(row_reduce("int64", kind)), {"A": a, "B": b})
    np.testing.assert_array_equal(b, {"sum": a.sum, "max": a.max, "min": a.min}[kind](axis=1))


def test_scaled_clamp_interpreted():
    a = RNG.standard_normal((1, 256)).astype(np.float16)
    b = np.zeros_like(a)
    run_kernel(lower(scaled_clamp()), {"A": a, "B": b})
    want = np.concatenate([np.clip(r, r.min() * 0.5, r.max() * 0.5) for r in np.split(a.astype(np.float32), 2, axis=1)],
                          axis=1)
    np.testing.assert_allclose(b.astype(np.float32), want, rtol=1e-3, atol=1e-3)


def element_gather(N=16):
    @T.prim_func
    def kernel(indices: T.Tensor((N,), "int64"), X: T.Tensor((N,), "float32"), out: T.Tensor((N,), "float32")):
        with T.Kernel(N, threads=1) as pid:
            idx = T.alloc_local([1], "int32")
            T.copy(indices[pid], idx[0])
            T.copy(X[idx[0]], out[pid])

    return kernel


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_copy_between_two_elements_compiles(arch, tmp_path):
    compiles(element_gather(), arch, tmp_path)


def column_sums(N=64, K=96, BN=32, BK=4):
    """C[n] = sum_k B[n, k] on a (BN, BK) block: tk strides K, partials meet in shared memory."""
    @T.prim_func
    def kernel(B: T.Tensor((N, K), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(N // BN, threads=(BN, BK)) as bn:
            tn, tk = T.get_thread_binding(0), T.get_thread_binding(1)
            part = T.alloc_shared((BK, BN), "float32")
            acc = T.alloc_local((1,), "float32")
            acc[0] = 0.0
            for k in T.serial(K // BK):
                acc[0] += B[bn * BN + tn, k * BK + tk]
            part[tk, tn] = acc[0]
            T.sync_threads()
            if tk == 0:
                C[bn * BN + tn] = part[0, tn] + part[1, tn] + part[2, tn] + part[3, tn]

    return kernel


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_2d_thread_block_compiles(arch, tmp_path):
    source = compiles(column_sums(), arch, tmp_path)
    assert "__launch_bounds__(128)" in source and "threadIdx.y" not in source


def test_2d_thread_block_interpreted():
    b = RNG.standard_normal((64, 96)).astype(np.float32)
    c = np.zeros(64, np.float32)
    run_kernel(lower(column_sums()), {"B": b, "C": c})
    np.testing.assert_allclose(c, b.astype(np.float64).sum(axis=1), rtol=1e-5, atol=1e-5)


def branch_barrier(R=128, threads=256):
    """The first R threads reverse s through barrier 3 (T.sync_threads(3, R) inside 'if tx < R')."""
    @T.prim_func
    def kernel(A: T.Tensor((R,), "float32"), B: T.Tensor((R,), "float32")):
        with T.Kernel(1, threads=threads):
            tx = T.get_thread_binding()
            s = T.alloc_shared((R,), "float32")
            if tx < R:
                s[tx] = A[tx]
                T.sync_threads(3, R)
                B[tx] = s[R - 1 - tx]

    return kernel


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_named_barrier_compiles_to_bar_sync(arch, tmp_path):
    source = compiles(branch_barrier(), arch, tmp_path)
    assert "bar.sync %0, %1;" in source and "tl_named_barrier(3, 128)" in source


def test_named_barrier_interpreted():
    a = RNG.standard_normal(128).astype(np.float32)
    b = np.zeros(128, np.float32)
    run_kernel(lower(branch_barrier()), {"A": a, "B": b})
    np.testing.assert_array_equal(b, a[::-1])
