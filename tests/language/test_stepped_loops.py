"""Loops with a step run exactly the indices Python's range gives, on every reference path (a
pass that rebuilt a loop without its step once ran every index, silently, on every backend; a
negative step once ran two iterations too many, writing past the tensor: range(10, 0, -1))."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tilelang_core.language as T
from tilelang_core import FrontendError
from tilelang_core.testing.oracle import PATHS, run


def stepped(start, stop, step, n=24):
    @T.prim_func
    def k(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=8):
            s = T.alloc_shared((n,), "float32")
            T.copy(A, s)
            for i in T.serial(start, stop, step):
                s[i] = s[i] + 1.0
            T.copy(s, B)

    return k


@pytest.mark.parametrize("path", PATHS)
def test_every_other_index(path):
    out = run(path, stepped(0, 8, 2), A=np.zeros(24, np.float32), B=np.zeros(24, np.float32))["B"]
    want = np.zeros(24, np.float32)
    want[0:8:2] = 1
    np.testing.assert_array_equal(out, want)


@settings(max_examples=30, deadline=None)
@given(path=st.sampled_from(PATHS), start=st.integers(0, 23), stop=st.integers(0, 23),
       step=st.integers(-5, 5).filter(bool))
def test_generated_ranges_match_python(path, start, stop, step):
    """Either sign of step, empty ranges included (start past stop in the step's direction)."""
    out = run(path, stepped(start, stop, step), A=np.zeros(24, np.float32), B=np.zeros(24, np.float32))["B"]
    want = np.zeros(24, np.float32)
    want[list(range(start, stop, step))] = 1
    np.testing.assert_array_equal(out, want)


def counted(n=24):
    """B[k] = 1 for k in range(start, stop, step) with all three known only at run time."""
    @T.prim_func
    def k(B: T.Tensor((n,), "int32"), start: T.int32, stop: T.int32, step: T.int32):
        with T.Kernel(1, threads=1):
            for i in range(start, stop, step):
                B[i] = B[i] + 1

    return k


@pytest.mark.parametrize("path", ["cpu", "cuda:sm_80"])
@pytest.mark.parametrize("start, stop, step", [(10, 0, -1), (0, 10, 3), (23, 2, -4), (5, 5, 1), (3, 9, -1), (9, 3, 2)])
def test_run_time_bounds_and_step(path, start, stop, step):
    b = np.zeros(24, np.int32)
    run(path, counted(), B=b, start=start, stop=stop, step=step)
    want = np.zeros(24, np.int32)
    want[list(range(start, stop, step))] = 1
    np.testing.assert_array_equal(b, want)


def test_a_zero_step_is_refused():
    from tilelang_core.errors import FrontendError

    with pytest.raises(FrontendError, match="step must not be zero"):
        stepped(0, 8, 0)


def partially_unrolled():
    @T.prim_func
    def main(A: T.Tensor((2, 16), "float32")):
        with T.Kernel(1, threads=32):
            for i in T.unroll(0, 16, unroll_factor=4):
                A[0, i] = T.cast(i, "float32") + 1.0
            for j in T.Unroll(3, 16, 2, unroll_factor=2):
                A[1, j] = 2.0

    return main


@pytest.mark.parametrize("path", PATHS)
def test_unroll_factor_is_a_hint_that_keeps_the_loops_values(path):
    a = np.zeros((2, 16), np.float32)
    run(path, partially_unrolled(), A=a)
    want = np.zeros((2, 16), np.float32)
    want[0] = np.arange(16) + 1
    want[1, 3::2] = 2
    np.testing.assert_array_equal(a, want)


def test_unroll_factor_must_be_positive_and_not_explicit():
    with pytest.raises(FrontendError, match="mutually exclusive"):
        @T.prim_func
        def both(A: T.Tensor((16,), "float32")):
            with T.Kernel(1, threads=32):
                for i in T.unroll(16, explicit=True, unroll_factor=4):
                    A[i] = 1.0
    with pytest.raises(FrontendError, match="unroll_factor must be a positive integer"):
        @T.prim_func
        def zero(A: T.Tensor((16,), "float32")):
            with T.Kernel(1, threads=32):
                for i in T.unroll(16, unroll_factor=0):
                    A[i] = 1.0
