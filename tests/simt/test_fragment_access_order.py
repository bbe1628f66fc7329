"""Fragments inside T.Parallel indexed other than by all loop variables in order: written or read
transposed (``f[j, i]`` in a loop over ``i, j``; ``T.transpose`` into a fragment), or read by a
subset of them in a loop over shared tiles only (a row statistic ``m[i]`` next to ``s[i, j]``).
Both gave silent wrong answers on every SIMT backend (threads read and wrote registers of elements
other threads hold); the loop now follows the fragment's layout, permuted or broadcast. Generated
shapes, including size-1 and odd ones, on cpu and every SIMT interpreter against numpy; the cases
no layout can serve are refused with a LayoutError at the loop."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tilelang_core as tilelang
import tilelang_core.language as T
from tilelang_core.errors import LayoutError
from tilelang_core.layout import Fragment
from tilelang_core.testing.oracle import PATHS, run

SIZES = st.sampled_from([1, 2, 3, 4, 8, 12, 16, 32, 64])
THREADS = st.sampled_from([32, 64, 128])


def transposed_store(M, N, threads):
    @T.prim_func
    def k(A: T.Tensor((M, N), "float32"), B: T.Tensor((N, M), "float32")):
        with T.Kernel(1, threads=threads):
            s = T.alloc_shared((M, N), "float32")
            f = T.alloc_fragment((N, M), "float32")
            T.copy(A, s)
            for i, j in T.Parallel(M, N):
                f[j, i] = s[i, j] * 2.0
            T.copy(f, B)

    return k


def transposed_read(M, N, threads):
    @T.prim_func
    def k(A: T.Tensor((M, N), "float32"), B: T.Tensor((N, M), "float32")):
        with T.Kernel(1, threads=threads):
            f = T.alloc_fragment((M, N), "float32")
            s = T.alloc_shared((N, M), "float32")
            T.copy(A, f)
            for j, i in T.Parallel(N, M):
                s[j, i] = f[i, j] + 1.0
            T.copy(s, B)

    return k


def row_statistic(M, N, threads, dim):
    """m = max over ``dim`` of a shared tile, then a loop over shared tiles only that reads m."""
    @T.prim_func
    def k(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=threads):
            s = T.alloc_shared((M, N), "float32")
            o = T.alloc_shared((M, N), "float32")
            m = T.alloc_fragment((N if dim == 0 else M,), "float32")
            T.copy(A, s)
            T.reduce_max(s, m, dim=dim)
            for i, j in T.Parallel(M, N):
                o[i, j] = s[i, j] - (m[j] if dim == 0 else m[i])
            T.copy(o, B)

    return k


@settings(max_examples=12, deadline=None)
@given(M=SIZES, N=SIZES, threads=THREADS, path=st.sampled_from(PATHS))
def test_fragment_written_transposed(M, N, threads, path):
    a = np.random.default_rng(M * 100 + N).standard_normal((M, N)).astype(np.float32)
    out = run(path, transposed_store(M, N, threads), A=a, B=np.zeros((N, M), np.float32))
    np.testing.assert_array_equal(out["B"], 2 * a.T)


@settings(max_examples=12, deadline=None)
@given(M=SIZES, N=SIZES, threads=THREADS, path=st.sampled_from(PATHS))
def test_fragment_read_transposed(M, N, threads, path):
    a = np.random.default_rng(M * 100 + N).standard_normal((M, N)).astype(np.float32)
    out = run(path, transposed_read(M, N, threads), A=a, B=np.zeros((N, M), np.float32))
    np.testing.assert_array_equal(out["B"], a.T + 1)


@settings(max_examples=16, deadline=None)
@given(M=SIZES, N=SIZES, threads=THREADS, dim=st.sampled_from([0, 1]), path=st.sampled_from(PATHS))
def test_row_statistic_read_in_a_loop_over_shared_tiles(M, N, threads, dim, path):
    a = np.random.default_rng(M * 100 + N + dim).standard_normal((M, N)).astype(np.float32)
    out = run(path, row_statistic(M, N, threads, dim), A=a, B=np.zeros((M, N), np.float32))
    np.testing.assert_array_equal(out["B"], a - a.max(axis=dim, keepdims=True))


@pytest.mark.parametrize("path", PATHS)
def test_three_dimensional_permutation(path):
    @T.prim_func
    def k(A: T.Tensor((2, 8, 4), "float32"), B: T.Tensor((4, 2, 8), "float32")):
        with T.Kernel(1, threads=32):
            s = T.alloc_shared((2, 8, 4), "float32")
            f = T.alloc_fragment((4, 2, 8), "float32")
            T.copy(A, s)
            for b, i, j in T.Parallel(2, 8, 4):
                f[j, b, i] = s[b, i, j]
            T.copy(f, B)

    a = np.arange(64, dtype=np.float32).reshape(2, 8, 4)
    out = run(path, k, A=a, B=np.zeros((4, 2, 8), np.float32))
    np.testing.assert_array_equal(out["B"], a.transpose(2, 0, 1))


def _compile_sm80(func):
    return tilelang.compile(func, target="cuda:sm_80")


def test_two_fragments_transposed_to_one_another_are_refused():
    # both layouts fixed by their copies' defaults and the gemm: no loop layout serves both
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            a_s = T.alloc_shared((64, 64), "float16")
            acc = T.alloc_fragment((64, 64), "float32")
            out = T.alloc_fragment((64, 64), "float32")
            T.copy(A, a_s)
            T.gemm(a_s, a_s, acc, clear_accum=True)
            T.gemm(a_s, a_s, out, clear_accum=True)
            for i, j in T.Parallel(64, 64):
                out[j, i] = acc[i, j]
            T.copy(out, B)

    with pytest.raises(LayoutError, match="out"):
        _compile_sm80(k)


def test_a_statistic_written_from_other_threads_iterations_is_refused():
    @T.prim_func
    def k(A: T.Tensor((16, 32), "float32"), B: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=32):
            x = T.alloc_fragment((16, 32), "float32")
            m = T.alloc_fragment((16,), "float32")
            T.copy(A, x)
            T.reduce_max(x, m, dim=1)
            for i, j in T.Parallel(16, 32):
                m[i] = T.max(m[i], x[i, j])
            T.copy(m, B)

    with pytest.raises(LayoutError, match="'m' is written at"):
        _compile_sm80(k)


def test_permute_and_broadcast_keep_every_element_with_its_thread():
    f = Fragment.spread((16, 8), 32, 2)
    p = f.permute([1, 0])
    for i in range(16):
        for j in range(8):
            assert (p.thread_of(j, i), p.local_of(j, i)) == (f.thread_of(i, j), f.local_of(i, j))
    row = f.reduce(1)  # 16 rows over 32 threads: every row held by 8 replicas
    loop = row.broadcast([0], [16, 8])
    assert loop.replicas == 1  # the replicas split the columns
    for t in range(32):
        for l in range(loop.local_size):
            i, _ = loop.index_of(t, l)
            assert t in {row.thread_of(i, replica=r) for r in range(row.replicas)}
