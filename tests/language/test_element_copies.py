"""A one-element T.copy inside T.Parallel is that element's store (transform/element_copies.py,
TileLang's test_tilelang_copy_buffer_load_with_parallel): every reference path against numpy, a
ragged edge and a dtype conversion included; a several-element copy there is still refused."""

import numpy as np
import pytest

import tilelang_core as tl
import tilelang_core.language as T
from tilelang_core.errors import TileLangError
from tilelang_core.testing.oracle import PATHS, run


def gather(M, N, bM=32, bN=16):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float16"), Idx: T.Tensor((M,), "int32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, bM), T.ceildiv(N, bN), threads=128) as (bx, by):
            for i, j in T.Parallel(bM, bN):
                T.copy(A[Idx[bx * bM + i], by * bN + j], B[bx * bM + i, by * bN + j])

    return main


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("M,N", [(64, 48), (50, 20)])
def test_one_element_copies_in_parallel(path, M, N):
    rng = np.random.default_rng(M)
    a = rng.standard_normal((M, N)).astype(np.float16)
    idx = rng.permutation(M).astype(np.int32)
    b = np.full((M, N), np.nan, np.float32)
    run(path, gather(M, N), A=a, Idx=idx, B=b)
    np.testing.assert_array_equal(b, a[idx].astype(np.float32))


def test_a_tile_copy_inside_parallel_is_still_refused():
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            for i in T.Parallel(64):
                T.copy(A[i, 0:64], B[i, 0:64])

    with pytest.raises(TileLangError, match="would run once per element"):
        tl.compile(main, target="cuda:sm_80")
