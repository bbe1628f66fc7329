"""T.alloc_local buffers are each thread's own: a T.copy to or from one, a T.fill of one and a
T.Parallel nest that only stores into them run whole in every thread, as TileLang lowers them
(DeepSeek's TileKernels copy a token's row into registers per thread). They were dealt over the
threads like tile statements on the GPU paths, so each thread filled one element of its own
buffer: a silent wrong answer, caught here on every reference path."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tilelang_core.language as T
from tilelang_core.testing.oracle import PATHS, run


def row_kernel(threads, width, rows):
    @T.prim_func
    def main(X: T.Tensor((rows, width), T.int32), O: T.Tensor((rows, 3 * width), T.int32)):
        with T.Kernel(T.ceildiv(rows, threads), threads=threads) as bx:
            t = T.get_thread_binding()
            row = bx * threads + t
            x_local = T.alloc_local((width,), T.int32)
            y_local = T.alloc_local((width,), T.int32)
            z_local = T.alloc_local((width,), T.int32)
            if row < rows:
                T.copy(X[row, :], x_local)
                T.fill(z_local, row)
                for j in T.Parallel(width):
                    y_local[j] = x_local[j] * 10 + x_local[width - 1 - j]
                T.copy(x_local, O[row, 0:width])
                T.copy(y_local, O[row, width:2 * width])
                T.copy(z_local, O[row, 2 * width:3 * width])

    return main


def expected(x):
    rows = x.shape[0]
    return np.concatenate([x, x * 10 + x[:, ::-1], np.repeat(np.arange(rows)[:, None], x.shape[1], 1)],
                          1).astype(np.int32)


@pytest.mark.parametrize("path", PATHS)
def test_each_thread_fills_its_own_buffers(path):
    x = np.random.default_rng(0).integers(-50, 50, (12, 4)).astype(np.int32)
    out = run(path, row_kernel(8, 4, 12), X=x, O=np.zeros((12, 12), np.int32))["O"]
    np.testing.assert_array_equal(out, expected(x))


@settings(max_examples=12, deadline=None)
@given(threads=st.sampled_from([1, 4, 32]), width=st.integers(1, 9), rows=st.integers(1, 40),
       seed=st.integers(0, 2**16))
def test_generated_shapes_on_cpu(threads, width, rows, seed):
    x = np.random.default_rng(seed).integers(-50, 50, (rows, width)).astype(np.int32)
    out = run("cpu", row_kernel(threads, width, rows), X=x, O=np.zeros((rows, 3 * width), np.int32))["O"]
    np.testing.assert_array_equal(out, expected(x))


@pytest.mark.parametrize("path", ["cpu", "cuda:sm_80"])
def test_a_parallel_nest_that_also_stores_to_shared_is_still_dealt_over_the_threads(path):
    @T.prim_func
    def main(X: T.Tensor((64,), T.float32), O: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64):
            s = T.alloc_shared((64,), T.float32)
            for i in T.Parallel(64):
                s[i] = X[i] * 2.0
            T.copy(s, O)

    x = np.random.default_rng(1).standard_normal(64).astype(np.float32)
    np.testing.assert_array_equal(run(path, main, X=x, O=np.zeros(64, np.float32))["O"], 2 * x)


@pytest.mark.parametrize("path", ["cpu", "cuda:sm_80"])
def test_a_per_thread_nest_with_math_calls_runs_whole_in_every_thread(path):
    @T.prim_func
    def main(X: T.Tensor((8, 4), T.float32), O: T.Tensor((8, 4), T.float32)):
        with T.Kernel(1, threads=8):
            t = T.get_thread_binding()
            r = T.alloc_local((4,), T.float32)
            for j in T.Parallel(4):
                r[j] = T.exp(X[t, j]) + T.max(X[t, j], 0.0)
            for j in T.serial(4):
                O[t, j] = r[j]

    x = np.random.default_rng(2).standard_normal((8, 4)).astype(np.float32)
    out = run(path, main, X=x, O=np.zeros((8, 4), np.float32))["O"]
    np.testing.assert_allclose(out, np.exp(x.astype(np.float64)) + np.maximum(x, 0), rtol=1e-5)
