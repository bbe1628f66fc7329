"""A fragment the loop does not hold whole, read at a shifted index inside T.Parallel
(``acc[i + s * 32, j]``, as TileLang's sparse MLA backward does): the element is another thread's
register, so the SIMT backends run the iteration on the thread that holds it
(simt/transform/shifted_reads.py; it was a TypeError deep in the lowering, then a refusal). Every
path against numpy in float64."""

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core.testing.oracle import PATHS, run


def shifted_rows():
    @T.prim_func
    def k(A: T.Tensor((64, 32), "float16"), B: T.Tensor((64, 32), "float16"), C: T.Tensor((2, 32, 64), "float32")):
        with T.Kernel(1, threads=128):
            a = T.alloc_shared((64, 32), "float16")
            b = T.alloc_shared((64, 32), "float16")
            acc = T.alloc_fragment((64, 64), "float32")
            out = T.alloc_shared((32, 64), "float32")
            T.copy(A, a)
            T.copy(B, b)
            T.clear(acc)
            T.gemm(a, b, acc, transpose_B=True)
            for s in T.serial(2):
                for i, j in T.Parallel(64, 64):
                    if i < 32:
                        out[i, j] = acc[i + s * 32, j]
                T.copy(out, C[s, 0:32, 0:64])

    return k


@pytest.mark.parametrize("path", PATHS)
def test_shifted_read_of_a_spread_fragment(path):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((64, 32)).astype(np.float16)
    b = rng.standard_normal((64, 32)).astype(np.float16)
    c = np.full((2, 32, 64), np.nan, np.float32)
    run(path, shifted_rows(), A=a, B=b, C=c)
    want = a.astype(np.float64) @ b.astype(np.float64).T
    np.testing.assert_allclose(c.reshape(64, 64), want, rtol=1e-3, atol=1e-3)
