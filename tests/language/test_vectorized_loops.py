"""``T.vectorized`` loops: an iteration that reads back another's store (an accumulation) runs
serially and is right; independent iterations stay vectorized."""

import numpy as np
import pytest

import tilelang_core as tilelang
import tilelang_core.language as T
from language_irutil import loops
from tilelang_core.testing.oracle import PATHS, run

M, K = 4, 8


def accumulate():
    @T.prim_func
    def acc(A: T.Tensor((M, K), "float32"), B: T.Tensor((M,), "float32")):
        with T.Kernel(1, threads=M):
            row = T.get_thread_binding()
            for k in T.vectorized(K):
                B[row] = B[row] + A[row, k]

    return acc


def scale():
    @T.prim_func
    def sc(A: T.Tensor((M, K), "float32"), B: T.Tensor((M, K), "float32")):
        with T.Kernel(1, threads=M):
            row = T.get_thread_binding()
            for k in T.vectorized(K):
                B[row, k] = A[row, k] * 2.0

    return sc


@pytest.mark.parametrize("path", PATHS)
def test_an_accumulating_vectorized_loop_sums(path):
    a = np.random.default_rng(1).random((M, K)).astype(np.float32)
    b = np.zeros(M, np.float32)
    run(path, accumulate(), A=a, B=b)
    np.testing.assert_allclose(b, a.astype(np.float64).sum(1), rtol=1e-6)


def test_only_the_unsafe_loop_becomes_serial():
    import tvm

    assert [str(f.kind) for f in loops(accumulate())] == [str(tvm.tirx.ForKind.SERIAL)]
    assert [str(f.kind) for f in loops(scale())] == [str(tvm.tirx.ForKind.VECTORIZED)]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_the_accumulation_compiles_for_cuda(arch):
    assert "__global__" in tilelang.compile(accumulate(), target=f"cuda:{arch}").get_kernel_source()
