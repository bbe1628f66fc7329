"""A region's size-1 dimensions are bounds-checked like the tile's own (simt/lowering.py's
in_bounds; TileLang guards them too): ``T.copy(A[row, 0:K], s[r, 0:K])`` with ``row`` past the last
row of a ragged tensor reads zeros instead of the memory after the tensor, and a store to such a
row writes nothing. Before, only the tile's dimensions were checked, so the interpreters read past
the end (and a GPU read or, for a store, wrote whatever lies there). Every reference path."""

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core.testing.oracle import PATHS, run

K = 16


def rows_one_by_one(M, per_block=4):
    """Each block loads its rows one T.copy at a time, doubles them, and stores them one at a time."""
    @T.prim_func
    def main(A: T.Tensor((M, K), "float32"), B: T.Tensor((M, K), "float32")):
        with T.Kernel(T.ceildiv(M, per_block), threads=32) as bx:
            s = T.alloc_shared((per_block, K), "float32")
            for r in T.serial(per_block):
                T.copy(A[bx * per_block + r, 0:K], s[r, 0:K])
            for r in T.serial(per_block):
                for j in T.Parallel(K):
                    s[r, j] = s[r, j] * 2.0
            for r in T.serial(per_block):
                T.copy(s[r, 0:K], B[bx * per_block + r, 0:K])

    return main


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("M", [1, 5, 8, 11])
def test_rows_past_the_end(path, M):
    a = np.random.default_rng(M).standard_normal((M, K)).astype(np.float32)
    out = run(path, rows_one_by_one(M), A=a, B=np.full((M, K), np.nan, np.float32))
    np.testing.assert_array_equal(out["B"], a * 2)
