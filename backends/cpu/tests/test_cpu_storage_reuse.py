"""A shared tile written again after per-thread values computed from it (TileKernels' per-channel
cast with round_sf: the tile of column maxima becomes the tile of inverse scales). TVM's
StorageRewrite let the per-thread rows share the tile's storage while the tile was written again:
every scale came out 0 on cpu (right on the GPUs and their interpreters). Compared with numpy and
the CUDA SIMT interpreter on random data."""

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core.testing.oracle import run


@T.macro
def scale_and_inverse(amax):
    clamped = T.max(amax, 1e-4)
    sf = T.alloc_var(T.float32)
    sf = clamped / 448.0
    bits = T.reinterpret(sf, T.uint32)
    exp_sf = ((bits - 1) >> 23) + 1 - 127  # ceil(log2(sf))
    return T.reinterpret((127 + exp_sf) << 23, T.float32), T.reinterpret((127 - exp_sf) << 23, T.float32)


@T.prim_func
def column_scales(A: T.Tensor((256, 4), "float32"), S: T.Tensor((128,), "float32"),
                  I: T.Tensor((128,), "float32")):
    with T.Kernel(1, threads=256):
        amax_shared = T.alloc_shared((4, 256), T.float32)
        amax_local = T.alloc_local((4,), T.float32)
        tid = T.get_thread_binding()
        for i in T.serial(4):
            amax_local[i] = A[tid, i]
        for i in T.unroll(4):
            amax_shared[i, tid] = amax_local[i]
        sf = T.alloc_var(T.float32)
        sf = 0
        col_id = tid % 32 * 4 + tid // 32
        if tid < 128:
            for i in T.serial(col_id // 4, 256, 32):
                sf = T.max(sf, amax_shared[col_id % 4, i])
            sf, sf_inv = scale_and_inverse(sf)
            S[col_id] = sf
            amax_shared[0, tid] = sf_inv  # the tile reused for the inverse scales
        for i in T.serial(4):
            amax_local[i] = amax_shared[0, tid % 32 + i * 32]
        if tid < 128:
            I[tid] = amax_local[tid // 32]


@pytest.mark.parametrize("path", ["cpu", "cuda:sm_80"])
def test_a_reused_shared_tile_keeps_per_thread_values(path):
    a = (np.random.default_rng(0).random((256, 4)) * 3).astype(np.float32)
    out = run(path, column_scales, A=a, S=np.zeros(128, np.float32), I=np.zeros(128, np.float32))
    col = np.arange(128)
    amax = np.array([a[c // 4::32, c % 4].max() for c in col])
    scale = np.exp2(np.ceil(np.log2(np.maximum(amax, 1e-4) / 448.0)))
    np.testing.assert_array_equal(out["S"], scale.astype(np.float32))
    tid = np.arange(128)
    np.testing.assert_array_equal(out["I"], (1 / scale[(tid % 32) * 4 + tid // 32]).astype(np.float32))
