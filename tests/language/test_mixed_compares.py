"""Comparisons of two integer widths in a kernel (language/mixed_compares.py): TVMScript refused
them ("mismatched types. int64 vs. int32"), TileLang takes them; DeepSeek's TileKernels compare
int64 expert indices with int32 ranks and uint32 counters with int32 values."""

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core.testing.oracle import PATHS, run


def masked_by_rank(n, dtype):
    """TileKernels' mask_indices_by_tp in miniature: -1 where the index is negative or belongs to
    another rank (``T.truncmod(T.truncdiv(v, per), ranks) != rank`` mixes ``dtype`` and int32)."""
    @T.prim_func
    def main(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype), per: T.int32, ranks: T.int32, rank: T.int32):
        with T.Kernel(1, threads=n):
            t = T.get_thread_binding()
            value = T.alloc_var(dtype)
            value = A[t]
            if value < 0 or T.truncmod(T.truncdiv(value, per), ranks) != rank:
                B[t] = -1
            elif value >= per * ranks or rank == value:
                B[t] = -2
            else:
                B[t] = value - rank * per

    return main


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", ["int64", "int8", "int32"])
def test_a_comparison_of_two_integer_widths_promotes_like_arithmetic(path, dtype):
    if dtype == "int64" and path.startswith("metal"):
        pytest.skip("Metal has no 64-bit integers in kernels (refused there)")
    per, ranks, rank = 5, 3, 1
    a = np.random.default_rng(4).integers(-3, 20, 32).astype(dtype)
    b = run(path, masked_by_rank(32, dtype), A=a, B=np.zeros(32, dtype), per=per, ranks=ranks, rank=rank)["B"]
    expected = np.where((a < 0) | ((a // per) % ranks != rank), -1,
                        np.where((a >= per * ranks) | (a == rank), -2, a - rank * per))
    np.testing.assert_array_equal(b, expected.astype(dtype))


def test_unsigned_against_signed_compares_as_tvm_casts_it():
    """uint32 against an int32 parameter: the int32 side is cast to uint32 (TVM's rule, the
    same as for ``+``)."""
    @T.prim_func
    def main(A: T.Tensor((8,), "uint32"), B: T.Tensor((8,), "int32"), lim: T.int32):
        with T.Kernel(1, threads=8):
            t = T.get_thread_binding()
            B[t] = T.if_then_else(A[t] < lim, 1, 0)

    a = np.arange(8, dtype=np.uint32) * 3
    b = run("cpu", main, A=a, B=np.zeros(8, np.int32), lim=10)["B"]
    np.testing.assert_array_equal(b, (a < 10).astype(np.int32))
