"""TileLang's T.reduce_bitand / T.reduce_bitor / T.reduce_bitxor on integer tiles: fragments reduced
inside a warp, across warps and from shared memory, ``clear=False`` folding into the destination,
on every reference path against numpy. A float source is refused."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tilelang_core.language as T
from tilelang_core import FrontendError
from tilelang_core.testing.oracle import PATHS, run

UFUNC = {"bitand": np.bitwise_and, "bitor": np.bitwise_or, "bitxor": np.bitwise_xor}


def reduce_rows(M, N, op, dtype, threads, scope, clear):
    alloc = T.alloc_fragment if scope == "fragment" else T.alloc_shared

    @T.prim_func
    def rows(A: T.Tensor((M, N), dtype), B: T.Tensor((M,), dtype)):
        with T.Kernel(1, threads=threads):
            a = alloc((M, N), dtype)
            b = T.alloc_fragment((M,), dtype)
            T.copy(A, a)
            if not clear:
                T.copy(B, b)
            getattr(T, f"reduce_{op}")(a, b, dim=1, clear=clear)
            T.copy(b, B)

    return rows


@settings(max_examples=12, deadline=None)
@given(op=st.sampled_from(sorted(UFUNC)), dtype=st.sampled_from(["int32", "uint32", "int64", "int8"]),
       shape=st.sampled_from([(4, 64), (2, 256), (16, 8), (1, 33)]), threads=st.sampled_from([32, 128]),
       scope=st.sampled_from(["fragment", "shared"]), clear=st.booleans(), path=st.sampled_from(PATHS),
       seed=st.integers(0, 2**16))
def test_bitwise_reductions(op, dtype, shape, threads, scope, clear, path, seed):
    M, N = shape
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    a = rng.integers(info.min, info.max, (M, N), dtype=dtype, endpoint=True)
    if op == "bitand":
        a |= np.array(0x35, dtype=dtype)
    b0 = rng.integers(info.min, info.max, M, dtype=dtype, endpoint=True)
    b = b0.copy()
    run(path, reduce_rows(M, N, op, dtype, threads, scope, clear), A=a, B=b)
    want = UFUNC[op].reduce(a, axis=1)
    np.testing.assert_array_equal(b, want if clear else UFUNC[op](want, b0))


def test_bitwise_reduction_of_floats_is_refused():
    with pytest.raises(FrontendError, match="T.reduce_bitor needs an integer source, got float32"):
        reduce_rows(4, 64, "bitor", "float32", 32, "fragment", True)
