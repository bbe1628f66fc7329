"""Fragments that every thread holds whole: indexed other than by T.Parallel's loop variables
(``a[c, o]`` with ``c`` a serial loop inside the nest, as in DeepSeek's mHC; ``f[i + 1]``) or read
in plain code (``if block_mask[k]:``, as in the block-sparse and SeerAttention examples).
TileLang's layout inference keeps those in every thread's registers; so does ours. (A fragment
indexed by a serial loop *around* the nest, ``lse[k, i]``, is held by column instead:
test_serial_indexed_fragments.py.) Generated cases on cpu and every SIMT interpreter vs float64."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tilelang_core.language as T
from tilelang_core.testing.oracle import PATHS, run


def block_mask_sum(n, bm, threads):
    @T.prim_func
    def main(M: T.Tensor((n,), "int32"), X: T.Tensor((n, bm), "float32"), Y: T.Tensor((bm,), "float32")):
        with T.Kernel(1, threads=threads):
            mask = T.alloc_fragment([n], "int32")
            acc = T.alloc_fragment([bm], "float32")
            T.copy(M, mask)
            T.clear(acc)
            for k in T.serial(n):
                if mask[k] != 0:
                    for i in T.Parallel(bm):
                        acc[i] += X[k, i] * mask[k]
            T.copy(acc, Y)

    return main


def mix(hc, hb, threads):
    @T.prim_func
    def main(A: T.Tensor((hc, hc), "float32"), Bm: T.Tensor((hc, hb), "float32"),
             X: T.Tensor((hc, hb), "float32")):
        with T.Kernel(1, threads=threads):
            a = T.alloc_fragment((hc, hc), "float32")
            b = T.alloc_fragment((hc, hb), "float32")
            x = T.alloc_fragment((hc, hb), "float32")
            T.copy(A, a)
            T.copy(Bm, b)
            for o, j in T.Parallel(hc, hb):
                x[o, j] = 0.0
                for c in T.serial(hc):
                    x[o, j] += a[c, o] * b[c, j]
            T.copy(x, X)

    return main


def log_sum_exp(ns, bm, threads, whole=False):
    """Y = log2(sum_k exp2(L[k, :])); ``whole``: ``lse`` is also read in plain code, so every thread
    holds it whole (without that, each thread holds its columns: transform/serial_indexed.py)."""
    @T.prim_func
    def main(L: T.Tensor((ns, bm), "float32"), Y: T.Tensor((bm,), "float32")):
        with T.Kernel(1, threads=threads):
            lse = T.alloc_fragment((ns, bm), "float32")
            mx = T.alloc_fragment((bm,), "float32")
            s = T.alloc_fragment((bm,), "float32")
            T.copy(L, lse)
            T.reduce_max(lse, mx, dim=0, clear=True)
            T.clear(s)
            for k in T.serial(ns):
                for i in T.Parallel(bm):
                    s[i] += T.exp2(lse[k, i] - mx[i])
            for i in T.Parallel(bm):
                s[i] = T.log2(s[i]) + mx[i]
            T.copy(s, Y)
            if whole:
                if lse[0, 0] > 3e38:  # never: L is finite
                    Y[0] = 0.0

    return main


def shifted(n, threads):
    @T.prim_func
    def main(A: T.Tensor((n + 1,), "float32"), Out: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=threads):
            f = T.alloc_fragment((n + 1,), "float32")
            g = T.alloc_fragment((n,), "float32")
            T.copy(A, f)
            for i in T.Parallel(n):
                g[i] = f[i + 1] - f[i]
            T.copy(g, Out)

    return main


THREADS = st.sampled_from([32, 64])  # the interpreters run every thread: keep blocks small


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=2, deadline=None)
@given(n=st.integers(1, 12), bm=st.sampled_from([16, 32]), threads=THREADS, seed=st.integers(0, 999))
def test_mask_read_in_plain_code(path, n, bm, threads, seed):
    rng = np.random.default_rng(seed)
    m = rng.integers(0, 3, n).astype(np.int32)
    x = rng.standard_normal((n, bm)).astype(np.float32)
    out = run(path, block_mask_sum(n, bm, threads), M=m, X=x, Y=np.full(bm, np.nan, np.float32))
    np.testing.assert_allclose(out["Y"], (x.astype(np.float64) * m[:, None]).sum(0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=2, deadline=None)
@given(hc=st.integers(1, 4), hb=st.sampled_from([8, 32]), threads=THREADS, seed=st.integers(0, 999))
def test_fragment_indexed_by_a_serial_loop(path, hc, hb, threads, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((hc, hc)).astype(np.float32)
    b = rng.standard_normal((hc, hb)).astype(np.float32)
    out = run(path, mix(hc, hb, threads), A=a, Bm=b, X=np.full((hc, hb), np.nan, np.float32))
    np.testing.assert_allclose(out["X"], a.astype(np.float64).T @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=2, deadline=None)
@given(ns=st.integers(1, 4), bm=st.sampled_from([16, 32]), threads=THREADS, seed=st.integers(0, 999),
       whole=st.booleans())
def test_reduction_of_a_fragment_held_whole(path, ns, bm, threads, seed, whole):
    rng = np.random.default_rng(seed)
    lse = (rng.standard_normal((ns, bm)) * 4).astype(np.float32)
    out = run(path, log_sum_exp(ns, bm, threads, whole), L=lse, Y=np.full(bm, np.nan, np.float32))
    ref = np.log2(np.exp2(lse.astype(np.float64)).sum(0))
    np.testing.assert_allclose(out["Y"], ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=2, deadline=None)
@given(n=st.integers(1, 70), threads=THREADS, seed=st.integers(0, 999))
def test_fragment_indexed_by_an_expression(path, n, threads, seed):
    a = np.random.default_rng(seed).standard_normal(n + 1).astype(np.float32)
    out = run(path, shifted(n, threads), A=a, Out=np.full(n, np.nan, np.float32))
    np.testing.assert_allclose(out["Out"], np.diff(a.astype(np.float64)), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("path", PATHS)
def test_reducer_result_read_in_plain_code(path):
    """TileLang's reducer_v2 int32 sum: the finalized result is read under ``if tx == 0`` (plain
    code), so it is held whole, and the reduction into it must accept that layout (it holds the
    same registers; the H200 run of this stop refused 8 of TileLang's reducer tests so)."""
    @T.prim_func
    def kernel(A: T.Tensor((8,), "int32"), B: T.Tensor((1,), "int32")):
        with T.Kernel(1, threads=128):
            src = T.alloc_fragment((8,), "int32")
            T.copy(A, src)
            acc = T.alloc_reducer((1,), "int32", op="sum")
            T.reducer_init(acc)
            for i in T.Parallel(8):
                T.reducer_update(acc[0], src[i])
            result = T.alloc_fragment((1,), "int32")
            T.finalize_reducer(acc, result)
            if T.get_thread_binding() == 0:
                B[0] = result[0]

    a = np.arange(1, 9, dtype=np.int32)
    out = run(path, kernel, A=a, B=np.zeros(1, np.int32))
    assert int(out["B"][0]) == 36


def test_loops_over_fragments_held_whole_vectorize_in_printable_widths():
    """A fragment held whole is one run of all its registers (128 floats here: TileLang's MHA
    inference combine); its T.Parallel loop vectorizes in at most 16 bytes (TVM's CUDA printer
    refused float32x128 on the H200)."""
    import re

    from tilelang_core.testing.oracle import lower

    text = lower("cuda:sm_80", log_sum_exp(4, 128, 128, whole=True)).script()
    widths = [int(w) for w in re.findall(r"T\.vectorized\((\d+)\)", text)]
    assert widths and max(widths) * 4 <= 16, widths
