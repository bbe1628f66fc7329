"""Constructs found by porting TileLang's own examples with only the imports changed."""

import warnings

import torch

import tilelang_core as tilelang
import tilelang_core.language as T

k = "a module-level name that a macro parameter shadows"  # noqa: F841 - the point of the test


@tilelang.jit(out_idx=[-1], target="cpu", pass_configs={tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: True})
def scaled_rows(M, N, block_M=8):
    @T.macro
    def scale_tile(x: T.FragmentBuffer([block_M, N], "float32"), staged: T.SharedBuffer([block_M, N], "float32"),
                   k: T.int32):
        T.copy(staged, x)
        for i, j in T.Parallel(block_M, N):
            x[i, j] = x[i, j] * (k + 1)

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), threads=32) as bx:
            staged = T.alloc_shared((block_M, N), "float32")
            x = T.alloc_fragment((block_M, N), "float32")
            T.copy(A[bx * block_M, 0], staged)
            for k in T.serial(2):
                scale_tile(x, staged, k)
            T.copy(x, B[bx * block_M, 0])

    return main


def test_macro_with_buffer_annotations_and_a_parameter_named_like_a_global():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kernel = scaled_rows(20, 12)
    a = torch.randn(20, 12)
    torch.testing.assert_close(kernel(a), a * 2, rtol=0, atol=0)  # the last iteration (k = 1) wins


def test_pass_config_key_members_have_tilelangs_names_and_values():
    key = tilelang.PassConfigKey
    assert key.TL_DISABLE_TMA_LOWER == "tl.disable_tma_lower"
    assert key.TL_DISABLE_SAFE_MEMORY_ACCESS.value == "tl.disable_safe_memory_legalize"
    assert key.TL_DISABLE_WARP_SPECIALIZED.value == "tl.disable_warp_specialized"


@tilelang.jit(target="cpu")
def matmul_relu(A, B, block_M: int = 32, block_N: int = 32, block_K: int = 16,
                dtype: T.dtype = T.float16, accum_dtype: T.dtype = T.float32):
    M, N, K = T.const("M N K")
    A: T.Tensor[[M, K], dtype]
    B: T.Tensor[[K, N], dtype]
    C = T.empty([M, N], dtype)
    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
        A_shared = T.alloc_shared((block_M, block_K), dtype)
        B_shared = T.alloc_shared((block_K, block_N), dtype)
        C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
        T.clear(C_local)
        for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
            T.copy(A[by * block_M, ko * block_K], A_shared)
            T.copy(B[ko * block_K, bx * block_N], B_shared)
            T.gemm(A_shared, B_shared, C_local)
        for i, j in T.Parallel(block_M, block_N):
            C_local[i, j] = T.max(C_local[i, j], 0)
        T.copy(C_local, C[by * block_M, bx * block_N])
    return C


def test_eager_compile_from_sizes_gives_the_kernel_a_tensor_call_uses():
    import pytest

    from tilelang_core.errors import FrontendError

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kernel = matmul_relu.compile(M=40, N=24, K=20, dtype=T.float32)
        a, b = torch.randn(40, 20), torch.randn(20, 24)
        assert matmul_relu.compile(a, b, dtype=T.float32).key == kernel.key  # same build, from the cache
        torch.testing.assert_close(kernel(a, b).double(), torch.relu(a.double() @ b.double()), rtol=1e-5, atol=1e-5)
        with pytest.raises(FrontendError, match="not given: K"):
            matmul_relu.compile(M=40, N=24)
