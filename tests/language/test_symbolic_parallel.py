"""T.Parallel over an extent known at run time (TileLang's ``T.Parallel(T.min(valid_len, n))``):
over shared and global memory its elements are dealt over the threads round-robin; a fragment in
such a loop is refused with a LayoutError (fragments are laid out over constant extents)."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tilelang_core as tilelang
import tilelang_core.language as T
from tilelang_core.errors import LayoutError
from tilelang_core.testing.oracle import PATHS, run


def masked_shift(max_len, threads):
    @T.prim_func
    def k(A: T.Tensor((max_len,), "float32"), B: T.Tensor((max_len,), "float32"), valid_len: T.int32):
        with T.Kernel(1, threads=threads) as _:
            for i in T.Parallel(max_len):
                B[i] = 0.0
            span = T.min(valid_len, max_len)
            for i in T.Parallel(span):
                B[i] = A[i] - 1.0

    return k


def rows_then_cols(cols, threads):
    @T.prim_func
    def k(A: T.Tensor((64, cols), "float32"), B: T.Tensor((64, cols), "float32"), rows: T.int32):
        with T.Kernel(2, threads=threads) as bx:
            s = T.alloc_shared((32, cols), "float32")
            T.copy(A[bx * 32, 0], s)
            for i, j in T.Parallel(T.min(rows - bx * 32, 32), cols):
                s[i, j] = s[i, j] * 2.0
            T.copy(s, B[bx * 32, 0])

    return k


@settings(max_examples=10, deadline=None, derandomize=True)
@given(path=st.sampled_from(PATHS), max_len=st.sampled_from([1, 7, 64, 300]), threads=st.sampled_from([32, 128]),
       valid_len=st.integers(-3, 700))
def test_one_dimension(path, max_len, threads, valid_len):
    a = np.random.default_rng(max_len).standard_normal(max_len).astype(np.float32)
    out = run(path, masked_shift(max_len, threads), A=a, B=np.full(max_len, 9, np.float32), valid_len=valid_len)
    want = np.zeros(max_len, np.float32)
    n = max(0, min(valid_len, max_len))
    want[:n] = a[:n] - 1
    np.testing.assert_array_equal(out["B"], want)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("rows", [0, 5, 33, 64])
def test_symbolic_rows_of_a_shared_tile(path, rows):
    a = np.random.default_rng(rows).standard_normal((64, 12)).astype(np.float32)
    out = run(path, rows_then_cols(12, 64), A=a, B=np.zeros_like(a), rows=rows)
    want = a.copy()
    want[:rows] *= 2
    np.testing.assert_array_equal(out["B"], want)


def test_a_fragment_in_a_symbolic_loop_is_refused():
    @T.prim_func
    def k(A: T.Tensor((64,), "float32"), n: T.int32):
        with T.Kernel(1, threads=32):
            f = T.alloc_fragment((64,), "float32")
            T.copy(A, f)
            for i in T.Parallel(n):
                f[i] = f[i] + 1.0
            T.copy(f, A)

    with pytest.raises(LayoutError, match=r"symbolic extent n and touches fragment 'f'"):
        tilelang.compile(k, target="cuda:sm_80")
