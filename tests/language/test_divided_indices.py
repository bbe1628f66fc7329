"""A fragment read at a divided index in T.Parallel (``B[i, j // 2]``, TileLang's fp4 dequantizing
GEMMs; transform/divided_indices.py): laid out as the loop's layout taken through the index, not
held whole by every thread. Nibble unpacking into a gemm operand and into a spread tile, every
reference path against numpy; the layout inference result checked directly."""

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core.testing.oracle import PATHS, run
from tilelang_core.transform.layout_inference import infer_layouts

RNG = np.random.default_rng(11)


def unpack_gemm(M=64, N=64, K=64, threads=128):
    """C = A @ dequant(Bq).T with Bq (N, K / 2) bytes: low nibble = even k, values nibble - 8."""
    @T.prim_func
    def k(A: T.Tensor((M, K), "float16"), Bq: T.Tensor((N, K // 2), "int8"), C: T.Tensor((N, M), "float32")):
        with T.Kernel(1, threads=threads):
            a_s = T.alloc_shared((M, K), "float16")
            b_s = T.alloc_shared((N, K // 2), "int8")
            b_l = T.alloc_fragment((N, K // 2), "int8")
            b_d = T.alloc_fragment((N, K), "float16")
            c = T.alloc_fragment((N, M), "float32")
            T.copy(A, a_s)
            T.copy(Bq, b_s)
            T.copy(b_s, b_l)
            for i, j in T.Parallel(N, K):
                b_d[i, j] = T.cast(((T.cast(b_l[i, j // 2], "int32") >> ((j % 2) * 4)) & 15) - 8, "float16")
            T.gemm(b_d, a_s, c, transpose_B=True, clear_accum=True, policy=T.GemmWarpPolicy.FullRow)
            T.copy(c, C)

    return k


def unpack_spread(M=16, N=64, threads=64, d=2):
    @T.prim_func
    def k(Bq: T.Tensor((M, N // d), "int32"), O: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=threads):
            b_l = T.alloc_fragment((M, N // d), "int32")
            o = T.alloc_fragment((M, N), "float32")
            T.copy(Bq, b_l)
            for i, j in T.Parallel(M, N):
                o[i, j] = T.cast(b_l[i, j // d] * 10 + j % d, "float32")
            T.copy(o, O)

    return k


def nibbles(bq):
    u = bq.view(np.uint8).astype(np.int64)
    return (np.stack([u & 15, u >> 4], -1).reshape(bq.shape[0], -1) - 8).astype(np.float64)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("threads", [128, 64])
def test_nibbles_unpacked_into_a_gemm_operand(path, threads):
    a = RNG.standard_normal((64, 64)).astype(np.float16)
    bq = RNG.integers(0, 256, (64, 32)).astype(np.uint8).view(np.int8)
    c = np.full((64, 64), np.nan, np.float32)
    run(path, unpack_gemm(threads=threads), A=a, Bq=bq, C=c)
    np.testing.assert_allclose(c, nibbles(bq) @ a.astype(np.float64).T, rtol=1e-3, atol=1e-2)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("M,N,threads,d", [(16, 64, 64, 2), (16, 64, 256, 2), (8, 48, 32, 4), (5, 6, 32, 3)])
def test_divided_reads_of_a_spread_tile(path, M, N, threads, d):
    """256 threads over 1024 elements: the pairs j, j + 1 fall in different threads, which then
    hold copies of their byte."""
    bq = RNG.integers(-1000, 1000, (M, N // d)).astype(np.int32)
    o = np.full((M, N), np.nan, np.float32)
    run(path, unpack_spread(M, N, threads, d), Bq=bq, O=o)
    np.testing.assert_array_equal(o, np.repeat(bq, d, axis=1) * 10 + np.arange(N) % d)


def test_the_byte_fragment_is_not_held_whole():
    func = unpack_spread(16, 64, 64, 2)
    layouts = {str(b.name): f for b, f in infer_layouts(func, 64).items()}
    assert not layouts["b_l"].is_whole
    assert layouts["b_l"].local_size * 64 == 16 * 32
