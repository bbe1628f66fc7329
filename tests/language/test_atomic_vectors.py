"""``T.atomic_addx2`` / ``T.atomic_addx4``: TileLang's paired and quad atomics, as element-wise
atomic adds of the 2 or 4 consecutive values, on every reference path."""

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core import FrontendError
from tilelang_core.testing.oracle import PATHS, run


def quad_accumulate(M, N, lanes, blocks=3):
    add = T.atomic_addx4 if lanes == 4 else T.atomic_addx2

    @T.prim_func
    def acc(S: T.Tensor((blocks, M, N), "float32"), D: T.Tensor((M, N), "float32")):
        with T.Kernel(blocks, threads=64) as b:
            s = T.alloc_shared((M, N), "float32")
            T.copy(S[b, 0, 0], s)
            for i, j in T.Parallel(M, N // lanes):
                add(D[i, j * lanes], s[i, j * lanes])

    return acc


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("lanes", [2, 4])
def test_every_block_adds_every_element(path, lanes):
    M, N = 16, 32
    rng = np.random.default_rng(lanes)
    s = rng.standard_normal((3, M, N)).astype(np.float32)
    d = rng.standard_normal((M, N)).astype(np.float32)
    expected = d.astype(np.float64) + s.astype(np.float64).sum(0)
    run(path, quad_accumulate(M, N, lanes), S=s, D=d)
    np.testing.assert_allclose(d, expected, rtol=1e-5, atol=1e-5)


def test_a_tile_operand_is_refused():
    with pytest.raises(FrontendError, match="first of 4 consecutive elements"):
        @T.prim_func
        def bad(D: T.Tensor((16,), "float32")):
            with T.Kernel(1, threads=32):
                s = T.alloc_shared((16,), "float32")
                T.atomic_addx4(D, s)


def test_memory_orders_are_accepted_and_unknown_ones_refused():
    """A thread-level atomic runs on every thread (TileLang's semantics): 32 threads, 32 adds."""
    @T.prim_func
    def ordered(A: T.Tensor((8,), "float32"), S: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=32):
            for i in T.serial(8):
                T.atomic_add(S[0], A[i], memory_order="acquire")

    a = np.arange(8, dtype=np.float32)
    s = np.zeros(1, np.float32)
    run("cpu", ordered, A=a, S=s)
    assert s[0] == 32 * 28.0
    with pytest.raises(FrontendError, match="memory_order='strong'"):
        @T.prim_func
        def unknown(A: T.Tensor((8,), "float32"), S: T.Tensor((1,), "float32")):
            with T.Kernel(1, threads=32):
                T.atomic_add(S[0], A[0], memory_order="strong")
