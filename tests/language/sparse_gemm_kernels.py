"""T.gemm_sp kernels (TileLang's example_gemm_sp form) and a numpy 2:4 compressor that writes
TileLang's metadata format (language/sparse_gemm.py), for the cpu, interpreter and GPU tests."""

import numpy as np

import tilelang_core.language as T
from tilelang_core.language.sparse_gemm import GROUPS, e_factor


def semi_sparse(rng, M, K, dtype):
    """A dense (M, K) array whose groups of 4 along K (2 for float32) hold 2 (1) nonzeros at random
    positions, as float64 values exact in ``dtype`` (ints for int8)."""
    kept, group = GROUPS[dtype]
    if dtype == "int8":
        values = rng.integers(-100, 100, (M, K)).astype(np.float64)
        values[values == 0] = 1
    else:
        values = rng.standard_normal((M, K)).astype(np.float16 if dtype == "float16" else np.float32).astype(np.float64)
    keep = np.zeros((M, K // group, group), bool)
    for i in range(M):
        for g in range(K // group):
            keep[i, g, rng.choice(group, kept, replace=False)] = True
    return np.where(keep.reshape(M, K), values, 0.0)


def compress(dense, dtype, meta_dtype):
    """(A_sparse, E) of a semi-sparse array in TileLang's format (tilelang/cuda/intrinsics/sparse_layout.py)."""
    kept, group = GROUPS[dtype]
    M, K = dense.shape
    per_meta = e_factor(dtype, meta_dtype) // group
    sparse = np.zeros((M, K * kept // group), np.float64)
    nibbles = np.zeros((M, K // group), np.int64)
    for i in range(M):
        for g in range(K // group):
            where = [p for p in range(group) if dense[i, g * group + p] != 0]
            where = (where + [p for p in range(group) if p not in where])[:kept]
            for j, p in enumerate(sorted(where)):
                sparse[i, g * kept + j] = dense[i, g * group + p]
            if kept == 2:
                first, second = sorted(where)
                nibbles[i, g] = first | (second << 2)
            else:  # float32: 16-bit units, the kept element and its neighbour
                nibbles[i, g] = 0b0100 if where[0] == 0 else 0b1110
    words = np.zeros((M, K // group // per_meta), np.int64)
    for s in range(per_meta):
        words |= nibbles[:, s::per_meta] << (4 * s)
    bits = np.dtype(meta_dtype).itemsize * 8
    words = (words + (1 << bits)) % (1 << bits)  # as the unsigned bit pattern
    words = words.astype(f"uint{bits}").view(meta_dtype)
    return sparse, words


def sparse_gemm(M, N, K, dtype="float16", meta_dtype="int16", accum="float32", bm=64, bn=64, bk=64, stages=2,
                threads=128, trans_a=False, trans_e=False):
    """C = A @ B with A given as (A_sparse, E): TileLang's example_gemm_sp kernel, with the
    A_sparse / E majors of transpose_A / transpose_E."""
    factor = e_factor(dtype, meta_dtype)
    a_shape, a_tile = ((K // 2, M), (bk // 2, bm)) if trans_a else ((M, K // 2), (bm, bk // 2))
    e_shape, e_tile = ((K // factor, M), (bk // factor, bm)) if trans_e else ((M, K // factor), (bm, bk // factor))

    @T.prim_func
    def gemm_sp(A_sparse: T.Tensor(a_shape, dtype), E: T.Tensor(e_shape, meta_dtype), B: T.Tensor((K, N), dtype),
                C: T.Tensor((M, N), accum)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            A_shared = T.alloc_shared(a_tile, dtype)
            E_shared = T.alloc_shared(e_tile, meta_dtype)
            B_shared = T.alloc_shared((bk, bn), dtype)
            C_local = T.alloc_fragment((bm, bn), accum)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                if trans_a:
                    T.copy(A_sparse[k * bk // 2, by * bm], A_shared)
                else:
                    T.copy(A_sparse[by * bm, k * bk // 2], A_shared)
                if trans_e:
                    T.copy(E[k * bk // factor, by * bm], E_shared)
                else:
                    T.copy(E[by * bm, k * bk // factor], E_shared)
                T.copy(B[k * bk, bx * bn], B_shared)
                T.gemm_sp(A_shared, E_shared, B_shared, C_local, transpose_A=trans_a, transpose_E=trans_e)
            T.copy(C_local, C[by * bm, bx * bn])

    return gemm_sp
