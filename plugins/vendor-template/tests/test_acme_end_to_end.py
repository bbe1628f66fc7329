"""The template compiles and runs kernels end to end through the public API: target="acme" picks
its Backend, the SIMT kit lowers, the simulator runs the artifact. Replace the simulator with your
runtime and these tests keep checking your numerics against numpy."""

import numpy as np
import pytest

import tilelang_core as tl
import tilelang_core.language as T


def gemm(M, N, K, bM=32, bN=32, bK=16):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float32"), B: T.Tensor((K, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=64) as (bx, by):
            A_s = T.alloc_shared((bM, bK), "float32")
            B_s = T.alloc_shared((bK, bN), "float32")
            acc = T.alloc_fragment((bM, bN), "float32")
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=2):
                T.copy(A[by * bM, k * bK], A_s)
                T.copy(B[k * bK, bx * bN], B_s)
                T.gemm(A_s, B_s, acc)
            T.copy(acc, C[by * bM, bx * bN])

    return main


def row_softmax(M, N):
    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, 8), threads=32) as bx:
            x = T.alloc_fragment((8, N), "float32")
            m = T.alloc_fragment((8,), "float32")
            s = T.alloc_fragment((8,), "float32")
            T.copy(X[bx * 8, 0], x)
            T.reduce_max(x, m, dim=1)
            for i, j in T.Parallel(8, N):
                x[i, j] = T.exp(x[i, j] - m[i])
            T.reduce_sum(x, s, dim=1)
            for i, j in T.Parallel(8, N):
                x[i, j] = x[i, j] / s[i]
            T.copy(x, Y[bx * 8, 0])

    return main


@pytest.mark.parametrize("M, N, K", [(64, 64, 32), (70, 40, 50)])
def test_a_gemm_compiles_and_runs_on_acme(M, N, K):
    kernel = tl.compile(gemm(M, N, K), out_idx=[-1], target="acme")
    rng = np.random.default_rng(M)
    a, b = rng.standard_normal((M, K), np.float32), rng.standard_normal((K, N), np.float32)
    np.testing.assert_allclose(kernel(a, b), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    assert kernel.get_kernel_source().startswith("// ACME program for acme1")
    assert "T.tile" not in kernel.asm["lowered"]  # every tile op lowered to threads


def test_a_softmax_on_torch_tensors_and_the_cached_artifact_reloads():
    torch = pytest.importorskip("torch")
    from tilelang_core.jit import clear_memory_cache

    x = torch.randn(20, 24)
    first = tl.compile(row_softmax(20, 24), out_idx=[-1], target="acme:acme2")
    torch.testing.assert_close(first(x), torch.softmax(x, dim=1))
    clear_memory_cache()  # a later process: the artifact is read back from the disk cache
    again = tl.compile(row_softmax(20, 24), out_idx=[-1], target="acme:acme2")
    assert again.from_cache
    torch.testing.assert_close(again(x), torch.softmax(x, dim=1))


def test_an_unknown_arch_and_a_bad_option_are_refused():
    from tilelang_core.errors import ConfigError, TargetError

    with pytest.raises(TargetError, match="'acme' does not know arch 'acme9'; known archs: acme1, acme2"):
        tl.compile(gemm(32, 32, 16), target="acme:acme9")
    with pytest.raises(ConfigError, match="check_lanes"):
        tl.compile(gemm(32, 32, 16), target="acme", pass_configs={"check_lanes": "yes"})
