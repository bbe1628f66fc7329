"""``make_swizzled_layout(A_shared)``: TileLang's form, taking the shared buffer itself."""

import numpy as np
import pytest

import tilelang_core as tilelang
import tilelang_core.language as T
from tilelang_core.layout import make_swizzled_layout
from tilelang_core.testing.oracle import run


def _buffer(shape, dtype):
    from tvm.script.ir_builder import tirx as B

    return B.buffer(shape, dtype, scope="shared.dyn")


def test_a_2d_buffer_gets_the_row_swizzle_of_its_width():
    lay = make_swizzled_layout(_buffer((64, 64), "float16"))
    ref = make_swizzled_layout(64, 64, 16)
    assert lay.kind == ref.kind == "swizzle8x16B"
    assert [lay.offset(i, j) for i in range(8) for j in range(0, 64, 8)] == \
        [ref.offset(i, j) for i in range(8) for j in range(0, 64, 8)]


def test_leading_dimensions_stack_rows_and_stay_a_bijection():
    lay = make_swizzled_layout(_buffer((2, 16, 32), "float16"))
    assert lay.shape == (2, 16, 32) and lay.is_bijective()
    assert lay.offset(1, 3, 8) == make_swizzled_layout(32, 32, 16).offset(19, 8)


def gemm_with_annotated_swizzles(M, N, K, bM=64, bN=64, bK=32):
    @T.prim_func
    def gemm(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=128) as (bx, by):
            A_s = T.alloc_shared((bM, bK), "float16")
            B_s = T.alloc_shared((bK, bN), "float16")
            C_f = T.alloc_fragment((bM, bN), "float32")
            T.annotate_layout({A_s: tilelang.layout.make_swizzled_layout(A_s),
                               B_s: tilelang.layout.make_swizzled_layout(B_s)})
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=2):
                T.copy(A[by * bM, k * bK], A_s)
                T.copy(B[k * bK, bx * bN], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * bM, bx * bN])

    return gemm


@pytest.mark.parametrize("path", ["cpu", "cuda:sm_80"])
def test_gemm_with_buffer_swizzles_computes_the_product(path):
    M, N, K = 70, 64, 96
    rng = np.random.default_rng(3)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.full((M, N), np.nan, np.float32)
    run(path, gemm_with_annotated_swizzles(M, N, K), A=a, B=b, C=c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-2, atol=2e-2)


def test_gemm_with_buffer_swizzles_compiles_for_hopper():
    src = tilelang.compile(gemm_with_annotated_swizzles(128, 128, 128), target="cuda:sm_90a").get_kernel_source()
    assert "__global__" in src
