"""T.thread_return(): a thread that returns runs nothing after it, on every reference path, whether
it returns before the work, inside a loop (no later iteration runs) or in a branch (DeepSeek's
TileKernels guard their tails this way); inside T.Parallel it is refused."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tilelang_core.language as T
from tilelang_core import FrontendError
from tilelang_core.testing.oracle import PATHS, run


def guarded(n, block=8):
    """B[i] = -1 if A[i] < 4 (returned in the loop at iteration A[i]), else 2 * A[i] + 4; threads
    past n return first and write nothing."""
    @T.prim_func
    def main(A: T.Tensor((n,), T.int32), B: T.Tensor((n,), T.int32)):
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            tid = T.get_thread_binding()
            idx = bx * block + tid
            if idx >= n:
                T.thread_return()
            x = T.alloc_local((2,), T.int32)
            x[0] = A[idx] * 2
            for j in T.serial(4):
                if A[idx] == j:
                    B[idx] = -1
                    T.thread_return()
                x[0] += 1
            B[idx] = x[0]

    return main


def expected(a):
    return np.where(a < 4, -1, 2 * a + 4).astype(np.int32)


@pytest.mark.parametrize("path", PATHS)
def test_returns_skip_the_rest_of_the_kernel(path):
    a = np.random.default_rng(3).integers(0, 8, 13).astype(np.int32)
    b = np.full(16, 77, np.int32)
    out = run(path, guarded(13), A=a, B=b[:13].copy())["B"]
    np.testing.assert_array_equal(out, expected(a))


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 40), seed=st.integers(0, 2**16))
def test_generated_sizes_on_cpu(n, seed):
    a = np.random.default_rng(seed).integers(0, 8, n).astype(np.int32)
    out = run("cpu", guarded(n), A=a, B=np.zeros(n, np.int32))["B"]
    np.testing.assert_array_equal(out, expected(a))


def test_a_return_in_a_while_loop_ends_it():
    @T.prim_func
    def main(A: T.Tensor((8,), T.int32)):
        with T.Kernel(1, threads=8):
            tid = T.get_thread_binding()
            i = T.alloc_var(T.int32)
            while i < 10:
                if i == tid:
                    T.thread_return()
                A[tid] = A[tid] + 1
                i = i + 1

    out = run("cpu", main, A=np.zeros(8, np.int32))["A"]
    np.testing.assert_array_equal(out, np.arange(8))


def test_inside_parallel_is_refused():
    with pytest.raises(FrontendError, match="inside a T.Parallel loop"):
        @T.prim_func
        def main(A: T.Tensor((8,), T.int32)):
            with T.Kernel(1, threads=8):
                for i in T.Parallel(8):
                    if A[i] > 0:
                        T.thread_return()
                    A[i] = 1
