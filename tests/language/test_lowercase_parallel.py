"""TileLang's lower-case ``T.parallel(n)``: a parallel loop, which its tile-op lowering maps onto
the threads as it does ``T.Parallel(n)`` (language/loops.py). Same numbers on every path; a
range not starting at 0 is refused."""

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core import FrontendError
from tilelang_core.testing.oracle import PATHS, run


def scaled(N=200, tile=64):
    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), O: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, tile), threads=32) as bx:
            x = T.alloc_fragment((tile,), "float32")
            s = T.alloc_var("float32")
            s = 3.0
            for i in T.parallel(tile):
                x[i] = T.if_then_else(bx * tile + i < N, X[T.min(bx * tile + i, N - 1)], 0.0)
            for i in T.parallel(0, tile):
                if bx * tile + i < N:
                    O[bx * tile + i] = x[i] * s

    return main


@pytest.mark.parametrize("path", PATHS)
def test_lowercase_parallel_is_t_parallel(path):
    x = np.random.default_rng(7).standard_normal(200).astype(np.float32)
    o = np.full_like(x, np.nan)
    run(path, scaled(), X=x, O=o)
    np.testing.assert_allclose(o, 3 * x.astype(np.float64), rtol=1e-6)


def test_a_range_not_from_zero_is_refused():
    with pytest.raises(FrontendError, match=r"T.parallel\(4, 16\): a parallel loop here starts at 0"):
        @T.prim_func
        def main(X: T.Tensor((16,), "float32")):
            with T.Kernel(1, threads=32):
                for i in T.parallel(4, 16):
                    X[i] = 1.0
