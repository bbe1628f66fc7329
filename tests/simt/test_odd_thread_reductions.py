"""Reductions across a number of threads that is not a power of two (TileLang's
``test_allreduce_*`` kernels: a row of 24, 48 or 96 elements held one per thread), and over
thread digits whose stride is not one (a (2, 3) tile on 24 threads: rows 3 lanes apart). A
butterfly of shuffles pairs lanes by xor, so such lanes exchange partials through shared memory
instead. Before: 24 threads stopped the compile with a NotImplementedError, and a digit of stride
3 or 10 was folded by xor 3 / xor 10: wrong sums (lane 1 paired with lane 2) and reads of lanes
past the block. Numerics against float64 on cpu and every SIMT interpreter (warps of 32, and 64
on gfx942), hand-picked and generated shapes."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tilelang_core.language as T
from tilelang_core.testing.oracle import PATHS, run

FOLDS = {"sum": (T.reduce_sum, lambda a, d: a.sum(d)), "max": (T.reduce_max, lambda a, d: a.max(d)),
         "absmax": (T.reduce_absmax, lambda a, d: np.abs(a).max(d))}


def reduce_kernel(fold, shape, dim, threads):
    """``fold`` of a tile of ``shape`` over ``dim`` on ``threads`` threads (TileLang's kernels: a
    row held one element per thread; dim 0 of a (height, scale) tile on height * scale threads)."""
    out = tuple(e for d, e in enumerate(shape) if d != dim)

    @T.prim_func
    def main(A: T.Tensor(shape, "float32"), B: T.Tensor(out, "float32")):
        with T.Kernel(1, threads=threads):
            src = T.alloc_fragment(shape, "float32")
            dst = T.alloc_fragment(out, "float32")
            T.copy(A, src)
            fold(src, dst, dim=dim)
            T.copy(dst, B)

    return main


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("kind", sorted(FOLDS))
@pytest.mark.parametrize("rows,width,threads", [(1, 24, 24), (3, 48, 48), (2, 192, 96)])
def test_a_row_over_threads_not_a_power_of_two(path, kind, rows, width, threads):
    fold, ref = FOLDS[kind]
    a = np.random.default_rng(width + rows).standard_normal((rows, width)).astype(np.float32)
    out = run(path, reduce_kernel(fold, (rows, width), 1, threads), A=a, B=np.full(rows, np.nan, np.float32))
    np.testing.assert_allclose(out["B"], ref(a.astype(np.float64), 1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("height,scale", [(12, 2), (6, 4)])
def test_a_column_over_threads_not_a_power_of_two(path, height, scale):
    fold, ref = FOLDS["sum"]
    a = np.random.default_rng(height).standard_normal((height, scale)).astype(np.float32)
    out = run(path, reduce_kernel(fold, (height, scale), 0, height * scale), A=a, B=np.full(scale, np.nan, np.float32))
    np.testing.assert_allclose(out["B"], ref(a.astype(np.float64), 0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("threads,shape", [(24, (2, 3)), (20, (2, 40)), (48, (2, 24)), (72, (2, 24))])
def test_rows_whose_lanes_are_not_a_power_of_two_apart(path, threads, shape):
    fold, ref = FOLDS["sum"]
    a = np.random.default_rng(threads).standard_normal(shape).astype(np.float32)
    out = run(path, reduce_kernel(fold, shape, 0, threads), A=a, B=np.full(shape[1], np.nan, np.float32))
    np.testing.assert_allclose(out["B"], ref(a.astype(np.float64), 0), rtol=1e-5, atol=1e-5)


@settings(max_examples=24, deadline=None)
@given(threads=st.integers(1, 160), rows=st.integers(1, 6), width=st.integers(1, 100), dim=st.integers(0, 1),
       kind=st.sampled_from(sorted(FOLDS)), path=st.sampled_from(PATHS[1:]), seed=st.integers(0, 1000))
def test_generated_reductions_match_float64(threads, rows, width, dim, kind, path, seed):
    """Any thread count against any tile: the SIMT paths' sums and maxima equal float64's (a
    layout the compiler refuses says so; none of these is refused today)."""
    fold, ref = FOLDS[kind]
    a = np.random.default_rng(seed).standard_normal((rows, width)).astype(np.float32)
    out_shape = (width,) if dim == 0 else (rows,)
    out = run(path, reduce_kernel(fold, (rows, width), dim, threads), A=a, B=np.full(out_shape, np.nan, np.float32))
    np.testing.assert_allclose(out["B"], ref(a.astype(np.float64), dim), rtol=1e-5, atol=1e-5)
