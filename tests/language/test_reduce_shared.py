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
