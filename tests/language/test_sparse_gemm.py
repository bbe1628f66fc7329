"""T.gemm_sp (language/sparse_gemm.py): TileLang's 2:4 sparse GEMM, A given as kept values and
4-bit position metadata, against a float64 matmul of the dense A, on the cpu oracle and the cuda
(sm_80), hip and metal interpreters: every element type's group (2 of 4; float32 1 of 2),
metadata words of 8, 16 and 32 bits, transposed A_sparse and E, ragged M and N, random sparsity
patterns. The GPU runs the same in backends/cuda/tests/gpu/test_gpu_sparse_gemm.py."""

import numpy as np
import pytest

import sparse_gemm_kernels as sk
import tilelang_core.language as T
from tilelang_core.errors import FrontendError
from tilelang_core.testing.oracle import run

CASES = [
    # M, N, K, dtype, meta, keywords
    (64, 64, 128, "float16", "int16", {}),
    (80, 72, 64, "float16", "int32", {"trans_a": True, "trans_e": True}),   # ragged M, N
    (64, 64, 64, "int8", "int32", {}),
    (64, 64, 64, "float32", "int16", {}),
    (64, 64, 64, "float16", "int8", {"trans_e": True}),
]


def _check(path, M, N, K, dtype, meta, kw, seed):
    rng = np.random.default_rng(seed)
    dense = sk.semi_sparse(rng, M, K, dtype)
    sparse, e = sk.compress(dense, dtype, meta)
    b = (rng.integers(-100, 100, (K, N)) if dtype == "int8" else rng.standard_normal((K, N))).astype(np.float64)
    np_dtype = {"float16": np.float16, "float32": np.float32, "int8": np.int8}[dtype]
    acc = "int32" if dtype == "int8" else "float32"
    a_in = sparse.T if kw.get("trans_a") else sparse
    e_in = e.T if kw.get("trans_e") else e
    c = np.zeros((M, N), acc)
    run(path, sk.sparse_gemm(M, N, K, dtype, meta, acc, **kw), A_sparse=np.ascontiguousarray(a_in).astype(np_dtype),
        E=np.ascontiguousarray(e_in), B=b.astype(np_dtype), C=c)
    ref = dense @ b.astype(np_dtype).astype(np.float64)
    if dtype == "int8":
        np.testing.assert_array_equal(c, ref.astype(np.int64))
    elif dtype == "float32":  # T.gemm of float32 runs on tf32 on the GPU paths
        np.testing.assert_allclose(c, ref, rtol=2e-3, atol=2e-2 * np.sqrt(K))
    else:
        np.testing.assert_allclose(c, ref, rtol=1e-3, atol=1e-3 * np.sqrt(K))


@pytest.mark.parametrize("case", range(len(CASES)))
def test_sparse_gemm_on_cpu(case):
    M, N, K, dtype, meta, kw = CASES[case]
    _check("cpu", M, N, K, dtype, meta, kw, seed=case)


@pytest.mark.parametrize("path", ["cuda:sm_80", "hip:gfx942", "metal"])
def test_sparse_gemm_on_the_interpreters(path):
    M, N, K, dtype, meta, kw = CASES[1] if path == "cuda:sm_80" else CASES[0]
    _check(path, M, N, K, dtype, meta, kw, seed=7)


def test_metadata_of_the_wrong_shape_is_refused():
    with pytest.raises(FrontendError, match="E 'E_shared' is \\(64, 16\\); .* it must be \\(64, 4\\)"):
        @T.prim_func
        def k(A: T.Tensor((64, 32), T.float16), E: T.Tensor((64, 16), T.int16), B: T.Tensor((64, 64), T.float16),
              C: T.Tensor((64, 64), T.float32)):
            with T.Kernel(1, threads=128):
                A_shared = T.alloc_shared((64, 32), T.float16)
                E_shared = T.alloc_shared((64, 16), T.int16)
                B_shared = T.alloc_shared((64, 64), T.float16)
                C_local = T.alloc_fragment((64, 64), T.float32)
                T.gemm_sp(A_shared, E_shared, B_shared, C_local)


def test_tilelang_metadata_helpers():
    from tilelang_core.cuda.intrinsics.sparse_layout import GROUP_CONFIG, get_e_factor, get_e_replicate_factor

    assert get_e_factor(T.float16, T.int16) == 16 and get_e_factor(T.int8, T.int32) == 32
    assert get_e_factor(T.float32, T.int16) == 8
    assert GROUP_CONFIG[T.float16] == (2, 4) and GROUP_CONFIG[T.float] == (1, 2)
    assert get_e_replicate_factor(T.int8) == 1 and get_e_replicate_factor(T.float16) == 2
