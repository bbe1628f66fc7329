"""Macro arguments follow TileLang's rules: ``x: T.Ref`` (or ``T.Var``) refers to the caller's
element or T.alloc_var, so assignments to it store there (an element argument's update was once
dropped: the assignment bound a new local name, silently); any other argument that reads memory
is read once, at the call."""

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core import FrontendError
from tilelang_core.testing.oracle import PATHS, run


@T.macro
def double_twice(x: T.Ref):
    for _ in T.unroll(2):
        x += x


@T.macro
def split(length: int, parts: int, part, start: T.Ref, end: T.Ref):
    per = T.ceildiv(length, parts)
    start = part * per
    end = T.min(start + per, length)


@T.macro
def overwrite_then_read(buf, i, old):
    buf[i, 0] = 100.0
    buf[i, 1] = old  # the value ``old`` had at the call, not 100


def kernel(n=8):
    @T.prim_func
    def main(A: T.Tensor((n,), T.float32), S: T.Tensor((n, 2), T.int32), C: T.Tensor((n, 2), T.float32)):
        with T.Kernel(1, threads=n):
            tid = T.get_thread_binding()
            loc = T.alloc_local((2,), T.float32)
            loc[1] = A[tid]
            double_twice(loc[1])
            v = T.alloc_var(T.float32)
            v = A[tid]
            double_twice(v)
            A[tid] = loc[1] + v
            start = T.alloc_var(T.int32)
            end = T.alloc_var(T.int32)
            split(30, n, tid, start, end)
            S[tid, 0] = start
            S[tid, 1] = end
            overwrite_then_read(C, tid, C[tid, 0])

    return main


@pytest.mark.parametrize("path", PATHS)
def test_references_store_and_values_are_read_at_the_call(path):
    rng = np.random.default_rng(5)
    a = rng.standard_normal(8).astype(np.float32)
    c = rng.standard_normal((8, 2)).astype(np.float32)
    out = run(path, kernel(), A=a.copy(), S=np.zeros((8, 2), np.int32), C=c.copy())
    np.testing.assert_allclose(out["A"], 8.0 * a.astype(np.float64), rtol=1e-6)
    per = -(-30 // 8)
    starts = np.arange(8) * per
    np.testing.assert_array_equal(out["S"], np.stack([starts, np.minimum(starts + per, 30)], 1))
    np.testing.assert_array_equal(out["C"], np.stack([np.full(8, 100.0), c[:, 0]], 1))


def test_a_reference_to_an_expression_is_refused():
    with pytest.raises(FrontendError, match="parameter 'x' is a T.Ref"):
        @T.prim_func
        def main(A: T.Tensor((8,), T.float32)):
            with T.Kernel(1, threads=8):
                tid = T.get_thread_binding()
                double_twice(A[tid] + 1.0)


@T.macro
def scaled(x, exact: bool):
    y = x * 2.0
    if not exact:
        return y, 1.0  # a return under a branch on a Python value ends the macro there
    z = y + 1.0
    if exact:
        return z, 2.0
    return z, 3.0


def early_return_kernel(exact):
    @T.prim_func
    def main(A: T.Tensor((4,), T.float32), B: T.Tensor((4,), T.float32)):
        with T.Kernel(1, threads=4):
            tid = T.get_thread_binding()
            v, w = scaled(A[tid], exact)
            B[tid] = v + w

    return main


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("exact", [False, True])
def test_a_return_under_a_compile_time_branch_ends_the_macro(path, exact):
    a = np.arange(4, dtype=np.float32)
    out = run(path, early_return_kernel(exact), A=a, B=np.zeros(4, np.float32))["B"]
    np.testing.assert_array_equal(out, 2 * a + (3.0 if exact else 1.0))


def test_a_return_under_a_run_time_branch_is_refused():
    @T.macro
    def first_positive(x):
        for _ in T.serial(2):
            if x > 0:
                return x
        return x

    with pytest.raises(FrontendError, match="returns early only under conditions known"):
        @T.prim_func
        def main(A: T.Tensor((4,), T.float32)):
            with T.Kernel(1, threads=4):
                tid = T.get_thread_binding()
                A[tid] = first_positive(A[tid])
