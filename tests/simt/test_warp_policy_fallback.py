"""T.GemmWarpPolicy.FullRow / FullCol on a tile too small for every warp along that side: the
rest of the warps go to the other side, as TileLang splits them (DeepSeek's sparse MLA runs a
64x64 accumulator on 8 warps with FullRow). Numerics on every reference path against float64."""

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core.testing.oracle import PATHS, run


def gemm_kernel(M, N, K, threads, policy):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=threads):
            A_s = T.alloc_shared((M, K), "float16")
            B_s = T.alloc_shared((N, K), "float16")
            C_f = T.alloc_fragment((M, N), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.gemm(A_s, B_s, C_f, transpose_B=True, clear_accum=True, policy=policy)
            for i, j in T.Parallel(M, N):
                C_f[i, j] = C_f[i, j] * 2.0 + i
            T.copy(C_f, C)

    return main


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("M,N,threads,policy", [
    (64, 64, 256, T.GemmWarpPolicy.FullRow),   # 8 warps, room for 4 along M: 4 x 2
    (32, 64, 256, T.GemmWarpPolicy.FullRow),
    (64, 32, 256, T.GemmWarpPolicy.FullCol),
])
def test_policy_falls_back_to_the_other_side(path, M, N, threads, policy):
    K = 32
    rng = np.random.default_rng(7)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((N, K)).astype(np.float16)
    out = run(path, gemm_kernel(M, N, K, threads, policy), A=a, B=b, C=np.full((M, N), np.nan, np.float32))
    expected = 2.0 * (a.astype(np.float64) @ b.astype(np.float64).T) + np.arange(M)[:, None]
    np.testing.assert_allclose(out["C"], expected, rtol=1e-3, atol=1e-2)


def test_wgmma_full_row_on_two_warpgroups_splits_columns():
    """sm_90a: a 64x64 accumulator with FullRow on 256 threads runs on wgmma with the two
    warpgroups side by side along N (was: refused on both wgmma and mma.sync)."""
    pytest.importorskip("tilelang_cuda")
    from tilelang_cuda.hopper.wgmma import _partition

    plan = _partition(64, 64, 2, "full_row", mn_major_b=False, max_n=256)
    assert (plan.wg_m, plan.wg_n) == (1, 2)
    assert (_partition(128, 64, 2, "full_row", mn_major_b=False, max_n=256).wg_m) == 2
