"""``T.Kernel(..., threads=(x, y[, z]))``: a 2-D/3-D block is one thread dimension of x * y * z
threads, with ``T.get_thread_binding(d)`` the d-th index of CUDA's linear thread id (tx = tid % x,
ty = tid // x % y, ...). Was refused by every GPU backend; TileLang's gemv examples use it.
Every reference path runs a split-K GEMV written as those examples are, against numpy in float64."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tilelang_core.language as T
from tilelang_core import FrontendError
from tilelang_core.language.kernel import _normalize_threads
from tilelang_core.testing.oracle import PATHS, run

from fidelity_kernels import splitk_gemv


def thread_ids(X, Y, Z):
    @T.prim_func
    def ids(O: T.Tensor((X * Y * Z, 3), "int32")):
        with T.Kernel(1, threads=(X, Y, Z)):
            tx, ty, tz = T.get_thread_bindings()
            O[tx + X * (ty + Y * tz), 0] = tx
            O[tx + X * (ty + Y * tz), 1] = ty
            O[tx + X * (ty + Y * tz), 2] = tz

    return ids


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("N,K,BN,BK,tile_k", [(64, 256, 32, 4, 8), (50, 100, 16, 8, 2)])
def test_splitk_gemv_on_a_2d_block(path, N, K, BN, BK, tile_k):
    rng = np.random.default_rng(N + K)
    a = rng.standard_normal(K).astype(np.float32)
    b = rng.standard_normal((N, K)).astype(np.float32)
    c = np.full(N, np.nan, np.float32)
    run(path, splitk_gemv(N, K, BN, BK, tile_k), A=a, B=b, C=c)
    np.testing.assert_allclose(c, b.astype(np.float64) @ a.astype(np.float64), rtol=1e-4, atol=1e-4)


@settings(max_examples=8, deadline=None)
@given(X=st.sampled_from([1, 2, 8, 32]), Y=st.sampled_from([1, 2, 3]), Z=st.sampled_from([1, 2]),
       path=st.sampled_from(PATHS))
def test_thread_indices_are_the_linear_thread_id(X, Y, Z, path):
    out = np.full((X * Y * Z, 3), -1, np.int32)
    run(path, thread_ids(X, Y, Z), O=out)
    tid = np.arange(X * Y * Z)
    np.testing.assert_array_equal(out, np.stack([tid % X, tid // X % Y, tid // (X * Y)], axis=1))


def test_normalize_threads_like_tilelang():
    assert _normalize_threads(None) == [128, 1, 1]
    assert _normalize_threads(256) == [256, 1, 1]
    assert _normalize_threads([32, 4]) == [32, 4, 1]
    for bad in (0, -1, [128, 0], (128, 1, -2)):
        with pytest.raises(ValueError, match="threads must be positive"):
            _normalize_threads(bad)


def test_block_shape_extents_must_be_positive():
    with pytest.raises(FrontendError, match="must be positive"):
        @T.prim_func
        def k(A: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=(32, 0)):
                A[0] = 1.0


def launched_ids(X, Y, G):
    """TVM's ``T.launch_thread(tag, extent)`` inside a T.Kernel (TileLang kernels write it): the
    kernel's own indices."""
    @T.prim_func
    def ids(O: T.Tensor((G, X * Y, 3), "int32")):
        with T.Kernel(G, threads=(X, Y)):
            tx = T.launch_thread("threadIdx.x", X)
            ty = T.launch_thread("threadIdx.y", Y)
            tz = T.launch_thread("threadIdx.z", 1)
            bx = T.launch_thread("blockIdx.x", G)
            O[bx, tx + X * ty, 0] = tx
            O[bx, tx + X * ty, 1] = ty
            O[bx, tx + X * ty, 2] = tz + bx

    return ids


@pytest.mark.parametrize("path", PATHS)
def test_launch_thread_names_the_kernels_indices(path):
    X, Y, G = 32, 2, 3
    out = run(path, launched_ids(X, Y, G), O=np.full((G, X * Y, 3), -1, np.int32))["O"]
    tid = np.arange(X * Y)
    for b in range(G):
        np.testing.assert_array_equal(out[b], np.stack([tid % X, tid // X, np.full(X * Y, b)], 1))


def test_launch_thread_of_another_extent_or_tag_is_refused():
    for tag, extent, message in [("threadIdx.x", 128, "the enclosing T.Kernel has 64 along threadIdx.x"),
                                 ("warp.x", 1, "tag must be one of")]:
        with pytest.raises(FrontendError, match=message):
            @T.prim_func
            def k(A: T.Tensor((64,), "float32")):
                with T.Kernel(1, threads=64):
                    t = T.launch_thread(tag, extent)
                    A[t] = 0.0
