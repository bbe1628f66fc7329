"""A 1-D fragment indexed by the row-major flattening of T.Parallel loop variables
(TileLang's composable-index test, ``B_local[i * bN + j] = A_local[i, j]``) is read through a view
of its registers with the loops' shape (transform/flat_fragment_views.py): on every reference path
against numpy, for tiles that do not divide the tensor, the transposed flattening, three loops,
and an index that is not a flattening (left as it was: every thread holds the fragment whole)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tilelang_core.language as T
from tilelang_core.testing.oracle import PATHS, run


def flatten(M, N, bM, bN, order="ij", dtype="float32"):
    """B = A flattened row-major, through a flat fragment written as ``order`` says."""
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M * N,), dtype)):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=128) as (bx, by):
            a = T.alloc_fragment([bM, bN], dtype)
            f = T.alloc_fragment([bM * bN], dtype)
            T.copy(A[by * bM, bx * bN], a)
            if order == "ij":
                for i, j in T.Parallel(bM, bN):
                    f[i * bN + j] = a[i, j] + 1.0
                for t in T.Parallel(bM * bN):
                    r, c = by * bM + t // bN, bx * bN + t % bN
                    if r < M and c < N:
                        B[r * N + c] = f[t]
            else:  # column-major inside the fragment: f[j * bM + i]
                for i, j in T.Parallel(bM, bN):
                    f[j * bM + i] = a[i, j] + 1.0
                for t in T.Parallel(bM * bN):
                    r, c = by * bM + t % bM, bx * bN + t // bM
                    if r < M and c < N:
                        B[r * N + c] = f[t]

    return main


def check(path, M, N, bM, bN, order):
    a = np.random.default_rng(M + N).standard_normal((M, N)).astype(np.float32)
    out = run(path, flatten(M, N, bM, bN, order), A=a, B=np.full(M * N, np.nan, np.float32))
    np.testing.assert_array_equal(out["B"], (a + 1.0).reshape(-1))


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("M,N,bM,bN,order", [(256, 128, 64, 64, "ij"), (64, 96, 32, 32, "ji"),
                                             (100, 70, 32, 32, "ij"), (40, 64, 8, 64, "ji")])
def test_a_flat_fragment_written_by_a_tile_loop_and_read_by_a_flat_loop(path, M, N, bM, bN, order):
    check(path, M, N, bM, bN, order)


@settings(max_examples=10, deadline=None)
@given(bM=st.sampled_from([8, 16, 32]), bN=st.sampled_from([8, 16, 32, 64]), order=st.sampled_from(["ij", "ji"]),
       extra=st.integers(0, 20), path=st.sampled_from(["cpu", "cuda:sm_80"]))
def test_generated_tiles(bM, bN, order, extra, path):
    check(path, 2 * bM + extra, bN + extra, bM, bN, order)


def three_loops():
    @T.prim_func
    def main(A: T.Tensor((4, 8, 16), "float32"), B: T.Tensor((512,), "float32")):
        with T.Kernel(1, threads=128):
            a = T.alloc_fragment([4, 8, 16], "float32")
            f = T.alloc_fragment([512], "float32")
            T.copy(A, a)
            for i, j, k in T.Parallel(4, 8, 16):
                f[i * 128 + j * 16 + k] = a[i, j, k] * 2.0
            for t in T.Parallel(512):
                B[t] = f[t]

    return main


def shifted():
    """f[i * 16 + j + 1]: not a flattening, left alone (the fragment is held whole by every thread)."""
    @T.prim_func
    def main(A: T.Tensor((8, 16), "float32"), B: T.Tensor((129,), "float32")):
        with T.Kernel(1, threads=32):
            f = T.alloc_fragment([129], "float32")
            for t in T.Parallel(129):
                f[t] = 0.0
            for i, j in T.Parallel(8, 16):
                f[i * 16 + j + 1] = A[i, j]
            for t in T.Parallel(129):
                B[t] = f[t]

    return main


@pytest.mark.parametrize("path", PATHS)
def test_three_loops_flattened(path):
    a = np.random.default_rng(3).standard_normal((4, 8, 16)).astype(np.float32)
    out = run(path, three_loops(), A=a, B=np.full(512, np.nan, np.float32))
    np.testing.assert_array_equal(out["B"], (a * 2.0).reshape(-1))


def test_an_index_that_is_not_a_flattening_is_left_alone():
    from tilelang_core.transform.flat_fragment_views import flat_fragment_views

    func = shifted()
    assert flat_fragment_views(func).same_as(func)
    assert "view" not in func.script()
