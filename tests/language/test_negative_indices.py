"""Negative indices count from the end (language/negative_indices.py, TileLang's
LegalizeNegativeIndex): constant, affine in a loop variable, in a T.Parallel body and a tile-op
region, on global, shared and fragment buffers, symbolic extents; an index of unknown sign is left
as written. Every reference path against numpy."""

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core.language.negative_indices import legalize_negative_indices
from tilelang_core.testing.oracle import PATHS, run


def from_the_end(N=16):
    @T.prim_func
    def k(A: T.Tensor((N,), "float32"), M: T.Tensor((4, N), "float32"), B: T.Tensor((N,), "float32"),
          C: T.Tensor((4, N), "float32")):
        with T.Kernel(1, threads=32):
            s = T.alloc_shared((N,), "float32")
            f = T.alloc_fragment((N,), "float32")
            row = T.alloc_shared((1, N), "float32")
            T.copy(A, s)
            for i in T.Parallel(N):
                f[i] = s[-i - 1]                 # reversed through a shared tile
            T.copy(M[-1, 0:N], row)              # the last row, through a region start
            for i in T.Parallel(N):
                C[-4, i] = f[i] + row[0, i]      # row 0 of C
                C[1, i] = A[-1]                  # the last element
            for i in T.serial(4):
                B[i] = A[-i - 1]
            for i in T.serial(N - 4):
                B[i + 4] = A[i]

    return k


@pytest.mark.parametrize("path", PATHS)
def test_negative_indices_count_from_the_end(path):
    rng = np.random.default_rng(1)
    a = rng.standard_normal(16).astype(np.float32)
    m = rng.standard_normal((4, 16)).astype(np.float32)
    b = np.full(16, np.nan, np.float32)
    c = np.full((4, 16), np.nan, np.float32)
    run(path, from_the_end(), A=a, M=m, B=b, C=c)
    np.testing.assert_array_equal(b, np.concatenate([a[::-1][:4], a[:12]]))
    np.testing.assert_array_equal(c[0], a[::-1] + m[-1])
    np.testing.assert_array_equal(c[1], np.full(16, a[-1]))


def test_an_index_of_unknown_sign_is_left_as_written():
    @T.prim_func
    def k(shift: T.int32, A: T.Tensor((16,), "float32"), B: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=1):
            for i in T.serial(16):
                B[i] = A[shift + i]

    assert legalize_negative_indices(k).body.same_as(k.body)
    assert "shift + i" in k.script()


def test_a_symbolic_extent_is_added():
    @T.prim_func
    def k(A: T.Tensor((T.dynamic("n"),), "float32"), B: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=1):
            for i in T.serial(4):
                B[i] = A[-i - 1]

    a = np.arange(10, dtype=np.float32)
    b = np.zeros(4, np.float32)
    run("cpu", k, A=a, B=b)
    np.testing.assert_array_equal(b, [9, 8, 7, 6])


def test_func_attr_outside_a_kernel_block():
    """TileLang's LegalizeNegativeIndex tests: T.func_attr, and a body without T.Kernel."""
    @T.prim_func
    def k(A: T.Buffer((16,), T.float32), B: T.Buffer((16,), T.float32)):
        T.func_attr({"tir.noalias": True})
        B[0] = A[T.int32(-1)]

    assert bool(k.attrs["tir.noalias"])
    assert "A[15]" in k.script()
