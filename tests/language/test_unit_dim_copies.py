"""``T.copy`` between a start element and a tile with size-1 dimensions, on every reference path.

TileLang's rule: the tile's extents, unit ones included, fill the element's trailing dimensions,
so ``T.copy(X[i, 0], x)`` with ``x`` of shape (bM, 1) reads a column. We once squeezed the unit
extent away and copied a row instead: silently wrong (a row softmax with N=1 returned NaN).
"""

import numpy as np
import pytest
from language_irutil import ext, tile_ops

import tilelang_core.language as T
from tilelang_core import FrontendError
from tilelang_core.testing.oracle import PATHS, run

RNG = np.random.default_rng(11)


def column_scale(M, N, bM, col, scope):
    alloc = T.alloc_fragment if scope == "fragment" else T.alloc_shared

    @T.prim_func
    def column(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, 1), "float32")):
        with T.Kernel(T.ceildiv(M, bM), threads=64) as bx:
            x = alloc((bM, 1), "float32")
            T.copy(X[bx * bM, col], x)
            for i, j in T.Parallel(bM, 1):
                x[i, j] = x[i, j] * 2.0
            T.copy(x, Y[bx * bM, 0])

    return column


def row_softmax(M, N, bM):
    @T.prim_func
    def softmax(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, bM), threads=64) as bx:
            x = T.alloc_fragment((bM, N), "float32")
            m = T.alloc_fragment((bM,), "float32")
            s = T.alloc_fragment((bM,), "float32")
            T.copy(X[bx * bM, 0], x)
            T.reduce_max(x, m, dim=1)
            for i, j in T.Parallel(bM, N):
                x[i, j] = T.exp(x[i, j] - m[i])
            T.reduce_sum(x, s, dim=1)
            for i, j in T.Parallel(bM, N):
                x[i, j] = x[i, j] / s[i]
            T.copy(x, Y[bx * bM, 0])

    return softmax


def batch_column(B, M, N, bM):
    @T.prim_func
    def column3(X: T.Tensor((B, M, N), "float32"), Y: T.Tensor((B, M), "float32")):
        with T.Kernel(T.ceildiv(M, bM), B, threads=64) as (bx, b):
            x = T.alloc_shared((bM, 1), "float32")
            T.copy(X[b, bx * bM, N - 1], x)
            T.copy(x, Y[b, bx * bM:(bx + 1) * bM])

    return column3


def test_element_start_takes_the_tiles_extents_unit_ones_included():
    (copy_in, copy_out) = tile_ops(column_scale(40, 7, 16, 3, "fragment"))
    assert ext(copy_in.src) == [16, 1]
    assert ext(copy_out.dst) == [16, 1]
    (copy_in, _) = tile_ops(batch_column(2, 40, 5, 16))
    assert ext(copy_in.src) == [1, 16, 1]


def test_a_tile_with_more_non_unit_dims_than_the_element_is_refused():
    with pytest.raises(FrontendError, match="X has 1 dimensions but the other operand"):
        @T.prim_func
        def bad(X: T.Tensor((64,), "float32"), Y: T.Tensor((8, 8), "float32")):
            with T.Kernel(1, threads=32):
                x = T.alloc_shared((8, 8), "float32")
                T.copy(X[0], x)
                T.copy(x, Y)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("scope", ["fragment", "shared"])
@pytest.mark.parametrize("M,N,bM,col", [(40, 7, 16, 3), (16, 1, 16, 0)])
def test_column_copy_reads_the_column(path, scope, M, N, bM, col):
    x = RNG.standard_normal((M, N)).astype(np.float32)
    y = np.full((M, 1), np.nan, np.float32)
    run(path, column_scale(M, N, bM, col, scope), X=x, Y=y)
    np.testing.assert_allclose(y, 2.0 * x[:, col:col + 1].astype(np.float64), rtol=1e-6)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("N", [1, 5])
def test_row_softmax_with_narrow_rows(path, N):
    M = 37
    x = RNG.standard_normal((M, N)).astype(np.float32)
    y = np.full((M, N), np.nan, np.float32)
    run(path, row_softmax(M, N, 16), X=x, Y=y)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("path", PATHS)
def test_last_column_of_a_batch(path):
    B, M, N = 2, 40, 5
    x = RNG.standard_normal((B, M, N)).astype(np.float32)
    y = np.full((B, M), np.nan, np.float32)
    run(path, batch_column(B, M, N, 16), X=x, Y=y)
    np.testing.assert_array_equal(y, x[:, :, N - 1])


def gather_elements(N, index_dtype):
    """TileLang's ``T.copy(indices[pid], idx[0])``: two elements are one element each (was refused)."""
    @T.prim_func
    def gather(indices: T.Tensor((N,), index_dtype), X: T.Tensor((N,), "float32"),
               out: T.Tensor((N,), "float32")):
        with T.Kernel(N, threads=1) as pid:
            idx = T.alloc_local([1], "int32")
            T.copy(indices[pid], idx[0])
            T.copy(X[idx[0]], out[pid])

    return gather


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
def test_copy_between_two_elements_moves_one_element(path, index_dtype):
    N = 13
    perm = RNG.permutation(N).astype(index_dtype)
    x = RNG.standard_normal(N).astype(np.float32)
    out = np.full(N, np.nan, np.float32)
    run(path, gather_elements(N, index_dtype), indices=perm, X=x, out=out)
    np.testing.assert_array_equal(out, x[perm])
