"""Whole TileLang-style kernels, written with the real frontend, run on the cpu backend and
compared with torch in float64."""

from __future__ import annotations

import pytest
import torch

import tilelang_core.language as T
from cpu_harness import assert_close, compile_cpu, rand

TORCH_TO_T = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}


def matmul(M, N, K, bm, bn, bk, dtype, trans_a=False, trans_b=False, accum="float32"):
    as_shape = (bk, bm) if trans_a else (bm, bk)
    bs_shape = (bn, bk) if trans_b else (bk, bn)

    # Shapes are spelled inline: the frontend resolves annotation names from the kernel's closure,
    # which only holds names the body uses.
    @T.prim_func
    def gemm(A: T.Tensor((K, M) if trans_a else (M, K), dtype),
             B: T.Tensor((N, K) if trans_b else (K, N), dtype), C: T.Tensor((M, N), accum)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared(as_shape, dtype)
            B_s = T.alloc_shared(bs_shape, dtype)
            C_f = T.alloc_fragment((bm, bn), accum)
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=3):
                if trans_a:
                    T.copy(A[k * bk, by * bm], A_s)
                else:
                    T.copy(A[by * bm, k * bk], A_s)
                if trans_b:
                    T.copy(B[bx * bn, k * bk], B_s)
                else:
                    T.copy(B[k * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, C_f, transpose_A=trans_a, transpose_B=trans_b)
            T.copy(C_f, C[by * bm, bx * bn])

    return gemm


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("trans_a,trans_b", [(False, False), (False, True), (True, False), (True, True)])
def test_gemm_ragged_tiles_match_torch(dtype, trans_a, trans_b):
    M, N, K = 200, 136, 72  # none divides the 64x64x32 tile
    kernel = compile_cpu(matmul(M, N, K, 64, 64, 32, TORCH_TO_T[dtype], trans_a, trans_b))
    a = rand((K, M) if trans_a else (M, K), dtype, seed=1)
    b = rand((N, K) if trans_b else (K, N), dtype, seed=2)
    c = torch.full((M, N), float("nan"))  # every element must be written
    kernel(a, b, c)
    ref = (a.double().T if trans_a else a.double()) @ (b.double().T if trans_b else b.double())
    assert_close(c, ref, dtype)


def test_gemm_symbolic_m():
    m = T.dynamic("m")
    N, K = 96, 64

    @T.prim_func
    def gemm(A: T.Tensor((m, K), "float32"), B: T.Tensor((K, N), "float32"),
             C: T.Tensor((m, N), "float32")):
        with T.Kernel(T.ceildiv(N, 32), T.ceildiv(m, 32), threads=128) as (bx, by):
            A_s = T.alloc_shared((32, 32), "float32")
            B_s = T.alloc_shared((32, 32), "float32")
            C_f = T.alloc_fragment((32, 32), "float32")
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, 32), num_stages=2):
                T.copy(A[by * 32, k * 32], A_s)
                T.copy(B[k * 32, bx * 32], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * 32, bx * 32])

    kernel = compile_cpu(gemm)
    for rows in (1, 33, 100):
        a, b = rand((rows, K), torch.float32, seed=rows), rand((K, N), torch.float32, seed=7)
        c = torch.zeros(rows, N)
        kernel(a, b, c)
        assert_close(c, a.double() @ b.double())


def test_gemm_clear_accum_overwrites_accumulator():
    @T.prim_func
    def gemm(A: T.Tensor((16, 16), "float32"), B: T.Tensor((16, 16), "float32"),
             C: T.Tensor((16, 16), "float32")):
        with T.Kernel(1, threads=32) as _:
            A_s = T.alloc_shared((16, 16), "float32")
            B_s = T.alloc_shared((16, 16), "float32")
            C_f = T.alloc_fragment((16, 16), "float32")
            T.fill(C_f, 1000.0)
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.gemm(A_s, B_s, C_f, clear_accum=True)
            T.copy(C_f, C)

    a, b = rand((16, 16), torch.float32, 1), rand((16, 16), torch.float32, 2)
    c = torch.zeros(16, 16)
    compile_cpu(gemm)(a, b, c)
    assert_close(c, a.double() @ b.double())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_row_softmax(dtype):
    M, N, bm = 100, 64, 16  # M ragged: padded rows read 0 and must not be written
    t = TORCH_TO_T[dtype]

    @T.prim_func
    def softmax(X: T.Tensor((M, N), t), Y: T.Tensor((M, N), t)):
        with T.Kernel(T.ceildiv(M, bm), threads=128) as bx:
            x_in = T.alloc_shared((bm, N), t)
            x = T.alloc_fragment((bm, N), "float32")
            row_max = T.alloc_fragment((bm,), "float32")
            row_sum = T.alloc_fragment((bm,), "float32")
            T.copy(X[bx * bm, 0], x_in)
            T.copy(x_in, x)
            T.reduce_max(x, row_max, dim=1)
            for i, j in T.Parallel(bm, N):
                x[i, j] = T.exp(x[i, j] - row_max[i])
            T.reduce_sum(x, row_sum, dim=1)
            for i, j in T.Parallel(bm, N):
                x[i, j] = x[i, j] / row_sum[i]
            T.copy(x, Y[bx * bm, 0])

    x = rand((M, N), dtype, seed=3, lo=-4, hi=4)
    y = torch.zeros(M, N, dtype=dtype)
    compile_cpu(softmax)(x, y)
    assert_close(y, torch.softmax(x.double(), dim=1), dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_rms_norm(dtype):
    M, N, bm, eps = 70, 128, 8, 1e-6
    t = TORCH_TO_T[dtype]

    @T.prim_func
    def rms_norm(X: T.Tensor((M, N), t), W: T.Tensor((N,), t), Y: T.Tensor((M, N), t)):
        with T.Kernel(T.ceildiv(M, bm), threads=128) as bx:
            x = T.alloc_fragment((bm, N), "float32")
            sq = T.alloc_fragment((bm, N), "float32")
            w = T.alloc_shared((N,), t)
            ss = T.alloc_fragment((bm,), "float32")
            T.copy(X[bx * bm, 0], x)
            T.copy(W, w)
            for i, j in T.Parallel(bm, N):
                sq[i, j] = x[i, j] * x[i, j]
            T.reduce_sum(sq, ss, dim=1)
            for i in T.Parallel(bm):
                ss[i] = T.rsqrt(ss[i] / N + eps)
            for i, j in T.Parallel(bm, N):
                x[i, j] = x[i, j] * ss[i] * w[j]
            T.copy(x, Y[bx * bm, 0])

    x, w = rand((M, N), dtype, seed=4), rand((N,), dtype, seed=5)
    y = torch.zeros(M, N, dtype=dtype)
    compile_cpu(rms_norm)(x, w, y)
    xd = x.double()
    ref = xd * torch.rsqrt(xd.pow(2).mean(dim=1, keepdim=True) + eps) * w.double()
    assert_close(y, ref, dtype)


def test_elementwise_parallel_on_global_with_symbolic_n():
    n = T.dynamic("n")

    @T.prim_func
    def axpy(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32"), C: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, 256), threads=256) as bx:
            for i in T.Parallel(256):
                if bx * 256 + i < n:
                    C[bx * 256 + i] = 2.0 * A[bx * 256 + i] + T.max(B[bx * 256 + i], 0.0)

    kernel = compile_cpu(axpy)
    for size in (1, 255, 1000):
        a, b = rand((size,), torch.float32, 1), rand((size,), torch.float32, 2)
        c = torch.zeros(size)
        kernel(a, b, c)
        assert_close(c, 2 * a.double() + b.double().clamp(min=0))


def test_elementwise_2d_grid_with_conversion():
    M, N = 96, 80  # 2-D grid of 32x16 tiles, fp16 in, fp32 out

    @T.prim_func
    def add(A: T.Tensor((M, N), "float16"), B: T.Tensor((M, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, 16), T.ceildiv(M, 32), threads=128) as (bx, by):
            a = T.alloc_fragment((32, 16), "float32")
            b = T.alloc_shared((32, 16), "float16")
            T.copy(A[by * 32, bx * 16], a)
            T.copy(B[by * 32, bx * 16], b)
            for i, j in T.Parallel(32, 16):
                a[i, j] = a[i, j] + b[i, j]
            T.copy(a, C[by * 32, bx * 16])

    a, b = rand((M, N), torch.float16, 1), rand((M, N), torch.float16, 2)
    c = torch.zeros(M, N)
    compile_cpu(add)(a, b, c)
    assert_close(c, a.double() + b.double(), torch.float16)


@pytest.mark.parametrize("num_threads", [0, 1])
def test_split_k_atomic_add(num_threads):
    M, N, K, splits, bm, bn, bk = 72, 40, 128, 4, 32, 32, 16

    @T.prim_func
    def gemm_split_k(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
                     C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), splits, threads=128) as (bx, by, bz):
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bk, bn), "float16")
            C_f = T.alloc_fragment((bm, bn), "float32")
            T.clear(C_f)
            for k in T.Pipelined(K // splits // bk, num_stages=2):
                T.copy(A[by * bm, bz * (K // splits) + k * bk], A_s)
                T.copy(B[bz * (K // splits) + k * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, C_f)
            T.atomic_add(C[by * bm, bx * bn], C_f)

    kernel = compile_cpu(gemm_split_k, num_threads=num_threads)
    # atomics on global memory: blocks must run one after another
    assert "T.parallel" not in kernel.lowered_script()
    a, b = rand((M, K), torch.float16, 1), rand((K, N), torch.float16, 2)
    c = torch.full((M, N), 0.5)
    kernel(a, b, c)
    assert_close(c, 0.5 + a.double() @ b.double(), torch.float16)


def test_gemm_with_stage_indexed_shared_buffers_and_annotations():
    """Manual double buffering through a 3-D shared buffer indexed by stage, with the layout and
    swizzle annotations a tuned TileLang kernel carries (no-ops on the cpu)."""
    import tvm

    # tilelang_core.layout's Layout is a Python object the frontend does not accept here yet; any
    # TVM object stands in: the cpu backend ignores layouts.
    layout = tvm.tirx.IndexMap.from_func(lambda i, j: (j, i))
    M, N, K, bm, bn, bk = 96, 64, 96, 32, 32, 32

    @T.prim_func
    def gemm(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
             C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared((2, bm, bk), "float16")
            B_s = T.alloc_shared((2, bk, bn), "float16")
            C_f = T.alloc_fragment((bm, bn), "float32")
            T.annotate_layout({A_s: layout})
            T.use_swizzle(panel_size=4)
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy(A[by * bm, k * bk], A_s[k % 2, :, :])
                T.copy(B[k * bk, bx * bn], B_s[k % 2, :, :])
                T.gemm(A_s[k % 2, :, :], B_s[k % 2, :, :], C_f)
            T.copy(C_f, C[by * bm, bx * bn])

    a, b = rand((M, K), torch.float16, 1), rand((K, N), torch.float16, 2)
    c = torch.zeros(M, N)
    compile_cpu(gemm)(a, b, c)
    assert_close(c, a.double() @ b.double(), torch.float16)
