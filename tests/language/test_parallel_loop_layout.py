"""T.Parallel(..., loop_layout=T.Fragment(...)) (DeepSeek's TileKernels transpose writes it): the
layout names which thread runs each iteration, which cannot change what independent iterations
compute, so it is taken as a hint; a layout over another shape is refused."""

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core import FrontendError
from tilelang_core.testing.oracle import PATHS, run


def four_per_thread(block_x, threads):
    def forward(i, j):
        elems = i * block_x + j
        return (elems // 4) % threads, elems % 4 + elems // (threads * 4) * 4

    return forward


def transposed_copy(M=16, N=32, threads=64, layout_shape=None):
    shape = layout_shape or (N, M)
    layout = T.Fragment(shape, forward_fn=four_per_thread(shape[1], threads))

    @T.prim_func
    def main(X: T.Tensor((M, N), T.float32), Y: T.Tensor((N, M), T.float32)):
        with T.Kernel(1, threads=threads):
            s = T.alloc_shared((M, N), T.float32)
            T.copy(X, s)
            for i, j in T.Parallel(N, M, loop_layout=layout):
                Y[i, j] = s[j, i]

    return main


@pytest.mark.parametrize("path", PATHS)
def test_a_loop_layout_leaves_the_result_unchanged(path):
    x = np.random.default_rng(1).standard_normal((16, 32)).astype(np.float32)
    out = run(path, transposed_copy(), X=x, Y=np.zeros((32, 16), np.float32))["Y"]
    np.testing.assert_array_equal(out, x.T)


def test_a_loop_layout_of_another_shape_is_refused():
    with pytest.raises(FrontendError, match="loop's extents are"):
        transposed_copy(layout_shape=(16, 32))
