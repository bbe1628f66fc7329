"""Loops with a step run exactly the indices Python's range gives, on every reference path (a
pass that rebuilt a loop without its step once ran every index, silently, on every backend)."""

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


@settings(max_examples=20, deadline=None)
@given(path=st.sampled_from(PATHS), start=st.integers(0, 10), length=st.integers(0, 14), step=st.integers(1, 5))
def test_generated_ranges_match_python(path, start, length, step):
    stop = start + length
    out = run(path, stepped(start, stop, step), A=np.zeros(24, np.float32), B=np.zeros(24, np.float32))["B"]
    want = np.zeros(24, np.float32)
    want[list(range(start, stop, step))] = 1
    np.testing.assert_array_equal(out, want)
