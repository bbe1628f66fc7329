"""Loops with a step run exactly the indices Python's range gives, on every reference path (a
pass that rebuilt a loop without its step once ran every index, silently, on every backend; a
negative step once ran two iterations too many, writing past the tensor: range(10, 0, -1))."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tilelang_core.language as T
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
