"""Names bound inside loop bodies (``q_idx = bx * block_M + i``, ``kk = bz * n + ko``) on every
reference path: the cpu backend against torch in float64, and the cuda/hip/metal lowerings on
their SIMT interpreters (tilelang_core.testing.oracle). Each binding must be evaluated per
iteration, per element, with that iteration's value: in T.Parallel bodies (causal masks), in
T.Pipelined bodies (split-K's K offset, before and after pipelining), in serial loops, nested,
and inside tile-op regions. Split-K's epilogue also checks TileLang's per-element atomics in
T.Parallel (every element's thread adds, once). Shapes are small and ragged; size-1 dims too.

The same kernels are compiled for cuda sm_80/sm_90a, hip and metal source here; nvcc builds and
the sm_90a schedule are in backends/cuda/tests/test_interpreted_let_binding.py."""

import warnings

import numpy as np
import pytest
import torch

import tilelang_core.language as T
from tilelang_core.errors import LoweringError
from tilelang_core.testing.oracle import PATHS, lower, run

SIMT_PATHS = [p for p in PATHS if p != "cpu"]


def causal_mask(M, N, bM, bN, threads=128):
    @T.prim_func
    def mask(S: T.Tensor((M, N), "float32"), O: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, bM), threads=threads) as bx:
            acc = T.alloc_fragment((bM, bN), "float32")
            for k in T.serial(T.ceildiv(N, bN)):
                T.copy(S[bx * bM, k * bN], acc)
                for i, j in T.Parallel(bM, bN):
                    q_idx = bx * bM + i
                    k_idx = k * bN + j
                    acc[i, j] = T.if_then_else(q_idx >= k_idx, acc[i, j], -T.infinity("float32"))
                T.copy(acc, O[bx * bM, k * bN])

    return mask


def split_k(M, N, K, splits, stages, bM=32, bN=32, bK=32, threads=128):
    """TileLang's split-K GEMM with the K offset bound in the pipelined body and the epilogue as
    per-element atomics in T.Parallel."""
    k_tiles = (K + bK * splits - 1) // (bK * splits)

    @T.prim_func
    def gemm(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), splits, threads=threads) as (bx, by, bz):
            A_s = T.alloc_shared((bM, bK), "float16")
            B_s = T.alloc_shared((bK, bN), "float16")
            C_l = T.alloc_fragment((bM, bN), "float32")
            T.clear(C_l)
            for ko in T.Pipelined(k_tiles, num_stages=stages):
                kk = bz * k_tiles + ko
                T.copy(A[by * bM, kk * bK], A_s)
                T.copy(B[kk * bK, bx * bN], B_s)
                T.gemm(A_s, B_s, C_l)
            for i, j in T.Parallel(bM, bN):
                T.atomic_add(C[by * bM + i, bx * bN + j], C_l[i, j])

    return gemm


def serial_weights(M, N, bM, bN):
    """A binding in a serial loop's body used by a copy region, and bindings in a serial loop
    nested in a T.Parallel body."""
    @T.prim_func
    def weights(A: T.Tensor((M, N), "float32"), O: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, bM), threads=64) as bx:
            t = T.alloc_shared((bM, bN), "float32")
            acc = T.alloc_fragment((bM,), "float32")
            T.clear(acc)
            for k in T.serial(T.ceildiv(N, bN)):
                c0 = k * bN
                T.copy(A[bx * bM, c0], t)
                for i in T.Parallel(bM):
                    base = c0 + 1
                    for jj in T.serial(bN):
                        w = base + jj
                        acc[i] += T.if_then_else(w <= N, t[i, jj] * w, 0.0)
            T.copy(acc, O[bx * bM])

    return weights


def masked_scores(S, D, bM, bN, stages=2):
    """Attention's shape: a bound key offset in a pipelined body, a mask with bound q_idx/k_idx
    after it, a gemm between (the loop runs only up to the diagonal)."""
    @T.prim_func
    def scores(Q: T.Tensor((S, D), "float16"), K: T.Tensor((S, D), "float16"), O: T.Tensor((S, bN), "float32")):
        with T.Kernel(T.ceildiv(S, bM), threads=128) as bx:
            Q_s = T.alloc_shared((bM, D), "float16")
            K_s = T.alloc_shared((bN, D), "float16")
            s = T.alloc_fragment((bM, bN), "float32")
            m = T.alloc_fragment((bM, bN), "float32")
            T.copy(Q[bx * bM, 0], Q_s)
            T.fill(m, 0)
            for k in T.Pipelined(T.ceildiv((bx + 1) * bM, bN), num_stages=stages):
                T.copy(K[k * bN, 0], K_s)
                kv0 = k * bN
                T.clear(s)
                T.gemm(Q_s, K_s, s, transpose_B=True)
                for i, j in T.Parallel(bM, bN):
                    q_idx = bx * bM + i
                    k_idx = kv0 + j
                    m[i, j] += T.if_then_else((q_idx >= k_idx) and (k_idx < S), s[i, j], 0.0)
            T.copy(m, O[bx * bM, 0])

    return scores


def row_shift(M, N, bM):
    """Bindings in T.Parallel that read a replicated fragment (a row maximum) and a shared tile;
    then per-element atomics from that replicated fragment (each row added once)."""
    @T.prim_func
    def shift(A: T.Tensor((M, N), "float32"), O: T.Tensor((M, N), "float32"), R: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, bM), 2, threads=128) as (bx, by):
            s = T.alloc_shared((bM, N), "float32")
            x = T.alloc_fragment((bM, N), "float32")
            mx = T.alloc_fragment((bM,), "float32")
            T.copy(A[bx * bM, 0], s)
            T.copy(s, x)
            T.reduce_max(x, mx, dim=1)
            for i, j in T.Parallel(bM, N):
                m = mx[i]
                v = s[i, j]
                x[i, j] = v - m
            T.copy(x, O[bx * bM, 0])
            for i in T.Parallel(bM):
                row = bx * bM + i
                T.atomic_add(R[row], mx[i])

    return shift


def gemm_in_halves(M, N, K, bK):
    """A bound offset inside T.gemm's region arguments."""
    @T.prim_func
    def halves(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((M, K), "float16")
            B_s = T.alloc_shared((K, N), "float16")
            acc = T.alloc_fragment((M, N), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.clear(acc)
            for k in T.serial(K // bK):
                off = k * bK
                T.gemm(A_s[0:M, off:off + bK], B_s[off:off + bK, 0:N], acc)
            T.copy(acc, C)

    return halves


def copy_per_element(M, N):
    @T.prim_func
    def per_element(A: T.Tensor((M, N), "float32"), O: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=64):
            s = T.alloc_shared((M, N), "float32")
            for i in T.Parallel(M):
                T.copy(A[i, 0:N], s[i, 0:N])
            T.copy(s, O)

    return per_element


def _f64(x):
    return torch.from_numpy(np.asarray(x)).double()


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("M,N,bM,bN", [(64, 64, 32, 32), (100, 72, 64, 32), (1, 40, 32, 32)])
def test_causal_mask_with_bound_indices(path, M, N, bM, bN):
    s = np.random.default_rng(M).standard_normal((M, N)).astype(np.float32)
    o = np.full((M, N), np.nan, np.float32)
    run(path, causal_mask(M, N, bM, bN), S=s, O=o)
    q, k = torch.arange(M)[:, None], torch.arange(N)[None, :]
    ref = torch.where(q >= k, _f64(s), torch.tensor(float("-inf"), dtype=torch.float64))
    torch.testing.assert_close(_f64(o), ref, rtol=0, atol=0)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("M,N,K,splits,stages", [(64, 64, 128, 2, 2), (70, 40, 200, 3, 0), (33, 1, 96, 3, 3)])
def test_split_k_with_bound_offset_and_parallel_atomics(path, M, N, K, splits, stages):
    rng = np.random.default_rng(K)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    run(path, split_k(M, N, K, splits, stages), A=a, B=b, C=c)
    torch.testing.assert_close(_f64(c), _f64(a) @ _f64(b), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("M,N", [(64, 64), (40, 50)])
def test_bindings_in_serial_loops_and_nested_in_parallel(path, M, N):
    a = np.random.default_rng(N).standard_normal((M, N)).astype(np.float32)
    o = np.full((M,), np.nan, np.float32)
    run(path, serial_weights(M, N, 32, 32), A=a, O=o)
    torch.testing.assert_close(_f64(o), _f64(a) @ (torch.arange(N, dtype=torch.float64) + 1), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("path", PATHS)
def test_pipelined_body_binding_feeds_a_causal_mask(path):
    S, D, bM, bN = 80, 32, 64, 32
    rng = np.random.default_rng(1)
    q, k = rng.standard_normal((S, D)).astype(np.float16), rng.standard_normal((S, D)).astype(np.float16)
    o = np.full((S, bN), np.nan, np.float32)
    run(path, masked_scores(S, D, bM, bN), Q=q, K=k, O=o)
    scores = _f64(q) @ _f64(k).T
    rows, cols = torch.arange(S)[:, None], torch.arange(S)[None, :]
    kept = torch.where(cols <= rows, scores, torch.zeros((), dtype=torch.float64))
    ref = torch.zeros(S, bN, dtype=torch.float64)
    for c in range(S):  # column c lands in column c % bN of the row's accumulator
        ref[:, c % bN] += kept[:, c]
    torch.testing.assert_close(_f64(o), ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("path", PATHS)
def test_bindings_reading_fragments_and_shared_tiles(path):
    M, N = 40, 32
    a = np.random.default_rng(2).standard_normal((M, N)).astype(np.float32)
    o = np.full((M, N), np.nan, np.float32)
    r = np.zeros((M,), np.float32)
    run(path, row_shift(M, N, 16), A=a, O=o, R=r)
    row_max = _f64(a).max(dim=1, keepdim=True).values
    torch.testing.assert_close(_f64(o), _f64(a) - row_max, rtol=1e-6, atol=1e-6)
    # two blocks along y each add every row's maximum once (one replica of each row adds)
    torch.testing.assert_close(_f64(r), 2 * row_max[:, 0], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("path", PATHS)
def test_bound_offset_in_gemm_regions(path):
    M, N, K = 32, 32, 64
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((M, K)).astype(np.float16), rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    run(path, gemm_in_halves(M, N, K, 32), A=a, B=b, C=c)
    torch.testing.assert_close(_f64(c), _f64(a) @ _f64(b), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("path", SIMT_PATHS)
def test_tile_copy_inside_parallel_is_refused_with_its_line(path):
    with pytest.raises(LoweringError, match=r"T\.copy inside a T\.Parallel loop body(.|\n)*"
                                            r"test_let_binding_backends\.py:\d+"):
        lower(path, copy_per_element(16, 16))


@pytest.mark.parametrize("target", ["cuda:sm_80", "cuda:sm_90a", "hip:gfx942", "hip:gfx1100", "metal:apple7"])
@pytest.mark.parametrize("make", [lambda: causal_mask(100, 72, 64, 32), lambda: split_k(70, 40, 200, 3, 2),
                                  lambda: masked_scores(80, 32, 64, 32), lambda: row_shift(40, 32, 16)],
                         ids=["causal", "split_k", "pipelined_mask", "row_shift"])
def test_bound_names_reach_the_kernel_source(target, make):
    """TVM's C printers once failed here: "variables (k_idx, q_idx) are used, but are not passed
    in as API arguments" (its vectorizer drops a Bind it must scalarize)."""
    from tilelang_core.plugin import get_backend
    from tilelang_core.target import resolve_target

    backend = get_backend(resolve_target(target))
    options = backend.make_options({})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        source = backend.codegen(backend.lower(make(), options), options)
    assert source
