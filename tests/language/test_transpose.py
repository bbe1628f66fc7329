"""T.transpose (TileLang's shared-memory transpose): dst[..., j, i] = src[..., i, j], on every
reference path, with ragged tiles, a region of a larger tile and a batch dimension."""

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core.errors import FrontendError
from tilelang_core.testing.oracle import PATHS, run


def transposer(M, N, bM, bN, dtype):
    @T.prim_func
    def k(A: T.Tensor((M, N), dtype), B: T.Tensor((N, M), dtype)):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=64) as (bx, by):
            tile = T.alloc_shared((bM, bN + 4), dtype)  # the transpose reads a region of it
            tile_t = T.alloc_shared((bN, bM), dtype)
            T.copy(A[by * bM, bx * bN], tile[0:bM, 0:bN])
            T.transpose(tile[0:bM, 0:bN], tile_t)
            T.copy(tile_t, B[bx * bN, by * bM])

    return k


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("M, N, bM, bN", [(64, 32, 32, 16), (37, 21, 16, 8), (1, 9, 8, 8)])
def test_transpose_tiles(path, M, N, bM, bN):
    a = np.random.default_rng(M * N).standard_normal((M, N)).astype(np.float32)
    out = run(path, transposer(M, N, bM, bN, "float32"), A=a, B=np.zeros((N, M), np.float32))
    np.testing.assert_array_equal(out["B"], a.T)


@pytest.mark.parametrize("path", ["cpu", "cuda:sm_80"])
def test_transpose_keeps_leading_dimensions(path):
    @T.prim_func
    def k(A: T.Tensor((2, 8, 4), "float32"), B: T.Tensor((2, 4, 8), "float32")):
        with T.Kernel(1, threads=32):
            s = T.alloc_shared((2, 8, 4), "float32")
            f = T.alloc_fragment((2, 4, 8), "float32")
            T.copy(A, s)
            T.transpose(s, f)
            T.copy(f, B)

    a = np.arange(64, dtype=np.float32).reshape(2, 8, 4)
    out = run(path, k, A=a, B=np.zeros((2, 4, 8), np.float32))
    np.testing.assert_array_equal(out["B"], a.transpose(0, 2, 1))


def test_transpose_shape_mismatch_is_refused():
    with pytest.raises(FrontendError, match=r"needs a destination of shape \[8, 16\]"):
        @T.prim_func
        def k(A: T.Tensor((16, 8), "float32")):
            with T.Kernel(1, threads=32):
                s = T.alloc_shared((16, 8), "float32")
                d = T.alloc_shared((16, 8), "float32")
                T.transpose(s, d)
