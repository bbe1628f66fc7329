"""A row statistic whose copies two loops number differently: TileKernels' swiglu cast reads
``mask[i]`` in a loop over a tile (its copies: the row's threads, as a broadcast numbers them)
and in a loop over the tile's group maxima (the same threads, as a reduction of the reshaped
tile numbers them). One layout, not "two different layouts" (Fragment.canonical merges
replica digits that continue each other). Numerics on cpu and every SIMT interpreter."""

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core.testing.oracle import PATHS, run


def masked_group_scale(tx, ty, group, threads):
    """O[i, j] = X[i, j] / max_g |X[i, g-th group]| and S[i, g] = that max, for rows M[i] >= 0."""
    groups = ty // group

    @T.prim_func
    def main(M: T.Tensor((tx,), "int32"), X: T.Tensor((tx, ty), "float32"),
             S: T.Tensor((tx, groups), "float32"), O: T.Tensor((tx, ty), "float32")):
        with T.Kernel(1, threads=threads):
            mask = T.alloc_fragment((tx,), "int32")
            x = T.alloc_fragment((tx, ty), "float32")
            x3 = T.reshape(x, [tx, groups, group])
            s = T.alloc_fragment((tx, groups), "float32")
            for i in T.Parallel(tx):
                mask[i] = M[i]
            for i, j in T.Parallel(tx, ty):
                x[i, j] = T.if_then_else(mask[i] >= 0, X[i, j], 1.0)  # (masked rows: no 0 / 0)
            T.reduce_absmax(x3, s, dim=2)
            for i, g in T.Parallel(tx, groups):
                if mask[i] >= 0:
                    S[i, g] = s[i, g]
            for i, j in T.Parallel(tx, ty):
                if mask[i] >= 0:
                    O[i, j] = x[i, j] / s[i, j // group]

    return main


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("tx,ty,group,threads", [(4, 1024, 128, 256), (2, 256, 64, 128), (4, 128, 32, 64)])
def test_a_row_mask_read_next_to_a_tile_and_its_group_maxima(path, tx, ty, group, threads):
    rng = np.random.default_rng(tx * ty)
    x = rng.standard_normal((tx, ty)).astype(np.float32)
    m = np.where(np.arange(tx) % 2 == 1, -1, 3).astype(np.int32)
    out = run(path, masked_group_scale(tx, ty, group, threads), M=m, X=x,
              S=np.full((tx, ty // group), np.nan, np.float32), O=np.full((tx, ty), np.nan, np.float32))
    amax = np.abs(x.astype(np.float64)).reshape(tx, ty // group, group).max(2)
    keep = m >= 0
    np.testing.assert_allclose(out["S"][keep], amax[keep], rtol=1e-6)
    np.testing.assert_allclose(out["O"][keep], (x / np.repeat(amax, group, axis=1))[keep], rtol=1e-6)
    assert np.isnan(out["S"][~keep]).all() and np.isnan(out["O"][~keep]).all()
