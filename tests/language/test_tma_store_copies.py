"""TileLang's explicit TMA stores: ``T.tma_copy(shared_tile, global_region)`` then
``T.tma_store_arrive()`` / ``T.tma_store_wait()``. Here the store is the copy itself (done when the
statement is) and the two are no-ops: any program that waits where TileLang requires it computes
the same values. Every reference path against numpy, ragged tiles included; the CUDA source of
the GEMM form (TileLang's test_tma_store) compiles for sm_80 and sm_90a."""

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core.errors import FrontendError
from tilelang_core.testing.oracle import PATHS, run


def staged_store(M, N, bM, bN):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=128) as (bx, by):
            a = T.alloc_fragment((bM, bN), "float32")
            c_s = T.alloc_shared((bM, bN), "float32")
            T.copy(A[by * bM, bx * bN], a)
            for i, j in T.Parallel(bM, bN):
                a[i, j] = a[i, j] * 3.0 + 1.0
            T.copy(a, c_s)
            T.tma_copy(c_s, C[by * bM, bx * bN])
            T.tma_store_arrive()
            T.tma_store_wait()
            T.tma_store_wait(0, read=False)

    return main


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("M,N,bM,bN", [(128, 128, 64, 64), (100, 72, 32, 32)])
def test_a_tma_store_writes_the_tile(path, M, N, bM, bN):
    a = np.random.default_rng(M).standard_normal((M, N)).astype(np.float32)
    out = run(path, staged_store(M, N, bM, bN), A=a, C=np.full((M, N), np.nan, np.float32))
    np.testing.assert_allclose(out["C"], a.astype(np.float64) * 3.0 + 1.0, rtol=1e-6, atol=2e-6)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_the_gemm_form_compiles(arch, tmp_path):
    from test_printer_limits import _cuda_source

    @T.prim_func
    def gemm(A: T.Tensor((256, 256), "float16"), B: T.Tensor((256, 256), "float16"),
             C: T.Tensor((256, 256), "float16")):
        with T.Kernel(2, 2, threads=128) as (bx, by):
            a = T.alloc_shared((128, 32), "float16")
            b = T.alloc_shared((32, 128), "float16")
            c_s = T.alloc_shared((128, 128), "float16")
            c = T.alloc_fragment((128, 128), "float32")
            T.clear(c)
            for k in T.Pipelined(8, num_stages=2):
                T.copy(A[by * 128, k * 32], a)
                T.copy(B[k * 32, bx * 128], b)
                T.gemm(a, b, c)
            T.copy(c, c_s)
            T.tma_copy(c_s, C[by * 128, bx * 128])
            T.tma_store_wait()

    assert "C_ptr" in _cuda_source(gemm, arch, tmp_path)


def test_a_bad_wait_count_is_refused():
    with pytest.raises(FrontendError, match="T.tma_store_wait: count"):
        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=4):
                T.tma_store_wait(-1)
