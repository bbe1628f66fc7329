"""Reductions with a shared-memory side (TileLang's s2s, f2s, s2f cases): every kind, along
either dimension, clear or accumulate, on every reference path, against numpy in float64 on
random data (ragged sizes that do not divide the threads)."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tilelang_core.language as T
from tilelang_core.testing.oracle import PATHS, run

KINDS = ("sum", "max", "min", "abssum", "absmax")


def reduction(M, N, kind, src_scope, dst_scope, dim, clear, threads):
    out_len = M if dim == 1 else N
    reduce = getattr(T, f"reduce_{kind}")

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((out_len,), "float32")):
        with T.Kernel(1, threads=threads):
            src = T.alloc_fragment((M, N), "float32") if src_scope == "fragment" else T.alloc_shared((M, N), "float32")
            dst = T.alloc_fragment((out_len,), "float32") if dst_scope == "fragment" else T.alloc_shared((out_len,), "float32")
            T.copy(A, src)
            T.copy(B, dst)
            reduce(src, dst, dim=dim, clear=clear)
            T.copy(dst, B)

    return main


def expected(a, b, kind, dim, clear):
    x = a.astype(np.float64)
    if kind.startswith("abs"):
        x = np.abs(x)
    r = x.sum(dim) if kind.endswith("sum") else (x.max(dim) if kind.endswith("max") else x.min(dim))
    if clear:
        return r
    b = b.astype(np.float64)
    return r + b if kind.endswith("sum") else (np.maximum(r, b) if kind.endswith("max") else np.minimum(r, b))


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("src_scope, dst_scope", [("shared", "shared"), ("fragment", "shared"), ("shared", "fragment")])
@pytest.mark.parametrize("kind", KINDS)
def test_reductions_with_a_shared_side(path, src_scope, dst_scope, kind):
    M, N = 12, 20
    rng = np.random.default_rng(len(kind) * 7 + len(src_scope))
    a = rng.standard_normal((M, N)).astype(np.float32)
    b = rng.standard_normal(M).astype(np.float32)
    out = run(path, reduction(M, N, kind, src_scope, dst_scope, 1, True, 32), A=a, B=b.copy())
    np.testing.assert_allclose(out["B"], expected(a, b, kind, 1, True), rtol=1e-5, atol=1e-5)


@settings(max_examples=15, deadline=None)
@given(path=st.sampled_from(PATHS), M=st.integers(1, 17), N=st.integers(1, 17), kind=st.sampled_from(KINDS),
       scopes=st.sampled_from([("shared", "shared"), ("fragment", "shared"), ("shared", "fragment")]),
       dim=st.sampled_from([0, 1]), clear=st.booleans(), threads=st.sampled_from([32, 64]))
def test_generated_shared_reductions_match_numpy(path, M, N, kind, scopes, dim, clear, threads):
    rng = np.random.default_rng(M * 31 + N)
    a = rng.standard_normal((M, N)).astype(np.float32)
    b = rng.standard_normal(M if dim == 1 else N).astype(np.float32)
    out = run(path, reduction(M, N, kind, *scopes, dim, clear, threads), A=a, B=b.copy())
    np.testing.assert_allclose(out["B"], expected(a, b, kind, dim, clear), rtol=1e-5, atol=1e-5)


def per_thread_reduction(M, N, kind, src_scope, dst_scope, clear, threads):
    """Every thread stores its copy of the destination in its own row of Out: a per-thread
    destination must hold every output in every thread. A per-thread source gets the thread's
    index added, so each thread reduces its own copy."""
    reduce = getattr(T, f"reduce_{kind}")
    src_shape = (M, N) if N else (M,)
    out_len = M if N else 1

    @T.prim_func
    def main(A: T.Tensor(src_shape, "float32"), B: T.Tensor((out_len,), "float32"),
             Out: T.Tensor((threads, out_len), "float32")):
        with T.Kernel(1, threads=threads):
            tx = T.get_thread_binding()
            if src_scope == "local":
                src = T.alloc_local(src_shape, "float32")
                if N > 0:
                    for i, j in T.grid(M, N):
                        src[i, j] = A[i, j] + T.cast(tx, "float32")
                else:
                    for i in T.serial(M):
                        src[i] = A[i] + T.cast(tx, "float32")
            else:
                src = T.alloc_fragment(src_shape, "float32") if src_scope == "fragment" \
                    else T.alloc_shared(src_shape, "float32")
                T.copy(A, src)
            if dst_scope == "var":
                dst = T.alloc_var("float32", B[0])
                reduce(src, dst, dim=0, clear=clear)
                Out[tx, 0] = dst
            else:
                dst = T.alloc_local((out_len,), "float32")
                for o in T.serial(out_len):
                    dst[o] = B[o]
                reduce(src, dst, dim=len(src_shape) - 1, clear=clear)
                for o in T.serial(out_len):
                    Out[tx, o] = dst[o]

    return main


# (not the cpu backend: it refuses the thread index flowing into a tile op's per-thread buffer)
@pytest.mark.parametrize("path", [p for p in PATHS if p != "cpu"])
@settings(max_examples=6, deadline=None)
@given(M=st.integers(1, 9), N=st.sampled_from([0, 1, 5, 16]), kind=st.sampled_from(KINDS),
       src_scope=st.sampled_from(["local", "fragment", "shared"]), to_var=st.booleans(),
       clear=st.booleans(), threads=st.sampled_from([32, 64]))
def test_per_thread_destinations_hold_every_output_in_every_thread(path, M, N, kind, src_scope, to_var,
                                                                   clear, threads):
    to_var = to_var and not N  # a variable takes the reduction of a 1-D tile
    rng = np.random.default_rng(M * 100 + N)
    a = rng.standard_normal((M, N) if N else (M,)).astype(np.float32)
    out_len = M if N else 1
    b = rng.standard_normal(out_len).astype(np.float32)
    out = np.full((threads, out_len), np.nan, np.float32)
    run(path, per_thread_reduction(M, N, kind, src_scope, "var" if to_var else "local", clear, threads),
        A=a, B=b, Out=out)
    for t in range(threads):
        shifted = a + np.float32(t) if src_scope == "local" else a
        want = expected(shifted if N else shifted[:, None], b, kind, 1 if N else 0, clear)
        np.testing.assert_allclose(out[t], np.ravel(want), rtol=1e-5, atol=1e-5, err_msg=f"thread {t}")


def test_a_per_thread_source_into_a_shared_destination_is_refused():
    from tilelang_core.errors import TileLangError

    @T.prim_func
    def main(A: T.Tensor((8,), "float32"), B: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=32):
            src = T.alloc_local((8,), "float32")
            dst = T.alloc_shared((1,), "float32")
            for i in T.serial(8):
                src[i] = A[i]
            T.reduce_sum(src, dst, dim=0)
            T.copy(dst, B)

    with pytest.raises(TileLangError, match="per-thread tile"):
        run("cuda:sm_80", main, A=np.zeros(8, np.float32), B=np.zeros(1, np.float32))
