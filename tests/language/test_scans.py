"""T.cumsum and T.cummax on shared tiles and fragments (staged through shared memory on the SIMT
backends, as TileLang does), forward and reversed, along either dimension, in place or into
another tile, on every reference path, against numpy in float64 on random data."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tilelang_core.language as T
from tilelang_core.testing.oracle import PATHS, run

SIMT_AND_CPU = PATHS


def scan_kernel(M, N, kind, scope, dim, reverse, in_place, threads=32):
    scan = getattr(T, f"cum{kind}")

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=threads):
            alloc = T.alloc_fragment if scope == "fragment" else T.alloc_shared
            src = alloc((M, N), "float32")
            T.copy(A, src)
            if in_place:
                scan(src, dim=dim, reverse=reverse)
                T.copy(src, B)
            else:
                dst = alloc((M, N), "float32")
                scan(src, dst, dim=dim, reverse=reverse)
                T.copy(dst, B)

    return main


def expected(a, kind, dim, reverse):
    x = a.astype(np.float64)
    if reverse:
        x = np.flip(x, dim)
    r = np.cumsum(x, dim) if kind == "sum" else np.maximum.accumulate(x, dim)
    return np.flip(r, dim) if reverse else r


@pytest.mark.parametrize("path", SIMT_AND_CPU)
@pytest.mark.parametrize("kind", ["sum", "max"])
@pytest.mark.parametrize("scope", ["shared", "fragment"])
@pytest.mark.parametrize("dim, reverse", [(0, False), (1, False), (1, True)])
def test_scans_match_numpy(path, kind, scope, dim, reverse):
    M, N = 10, 24
    a = np.random.default_rng(dim * 2 + reverse).standard_normal((M, N)).astype(np.float32)
    out = run(path, scan_kernel(M, N, kind, scope, dim, reverse, in_place=True), A=a, B=np.zeros_like(a))
    np.testing.assert_allclose(out["B"], expected(a, kind, dim, reverse), rtol=1e-5, atol=1e-5)


@settings(max_examples=15, deadline=None)
@given(path=st.sampled_from(SIMT_AND_CPU), M=st.integers(1, 13), N=st.integers(1, 13),
       kind=st.sampled_from(["sum", "max"]), scope=st.sampled_from(["shared", "fragment"]),
       dim=st.sampled_from([0, 1]), reverse=st.booleans(), in_place=st.booleans(),
       threads=st.sampled_from([32, 64]))
def test_generated_scans_match_numpy(path, M, N, kind, scope, dim, reverse, in_place, threads):
    a = np.random.default_rng(M * 17 + N).standard_normal((M, N)).astype(np.float32)
    out = run(path, scan_kernel(M, N, kind, scope, dim, reverse, in_place, threads), A=a, B=np.zeros_like(a))
    np.testing.assert_allclose(out["B"], expected(a, kind, dim, reverse), rtol=1e-5, atol=1e-5)


@settings(max_examples=20, deadline=None)
@given(path=st.sampled_from(SIMT_AND_CPU), M=st.integers(1, 5), N=st.sampled_from([64, 96, 100, 257]),
       kind=st.sampled_from(["sum", "max"]), scope=st.sampled_from(["shared", "fragment"]),
       reverse=st.booleans(), in_place=st.booleans(), threads=st.sampled_from([64, 128, 256]),
       seed=st.integers(0, 99))
def test_long_lines_scanned_by_warps_match_numpy(path, M, N, kind, scope, reverse, in_place, threads, seed):
    """Few long lines (a chunk's decay values): a warp per line, each lane a run of the line, the
    lanes' totals by shuffles (simt/lower_cumsum.py). Ragged runs, -inf among the values."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((M, N)).astype(np.float32)
    a[rng.random((M, N)) < 0.05] = -np.inf if kind == "max" else 0.0
    out = run(path, scan_kernel(M, N, kind, scope, 1, reverse, in_place, threads), A=a, B=np.zeros_like(a))
    np.testing.assert_allclose(out["B"], expected(a, kind, 1, reverse), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("M, N, threads, warps", [(1, 64, 128, True), (4, 257, 128, True), (64, 16, 128, False),
                                                  (1, 32, 128, False)])
def test_warp_scans_only_where_they_take_fewer_steps(M, N, threads, warps):
    from tilelang_core.testing.oracle import lower

    script = lower("cuda:sm_80", scan_kernel(M, N, "sum", "shared", 1, False, True, threads)).script()
    assert ("tl_shfl_sync" in script) == warps
