"""T.cumsum and T.reduce_* on tiles a T.Pipelined loop fills one slot per stage. The slot is a new
leading dimension of the staged tile, so the dimension scanned or reduced moves by one with it; a
reduction pairs its sides' dimensions up to unit ones, so it reads a staged tile into an unstaged
one; a scan between a staged and an unstaged tile (same shapes required) keeps the loop
synchronous. Before, a scan along dim 0 of a staged 1-D tile scanned the slot
dimension instead (each element summed alone): a silent wrong answer on every GPU path with
num_stages >= 2, found by examples/linear_attention. Every reference path against numpy."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tilelang_core.language as T
from tilelang_core.testing.oracle import PATHS, lower, run

N_TILES, ROWS, COLS = 3, 4, 16


def staged_kernel(stages, case, reverse):
    @T.prim_func
    def main(X: T.Tensor((N_TILES * ROWS, COLS), "float32"), Y: T.Tensor((N_TILES * ROWS, COLS), "float32"),
             R: T.Tensor((N_TILES * ROWS,), "float32")):
        with T.Kernel(1, threads=64) as _:
            x_s = T.alloc_shared((ROWS, COLS), "float32")
            y_s = T.alloc_shared((ROWS, COLS), "float32")
            m_s = T.alloc_shared((ROWS,), "float32")
            m_f = T.alloc_fragment((ROWS,), "float32")
            for i in T.Pipelined(N_TILES, num_stages=stages):
                T.copy(X[i * ROWS:(i + 1) * ROWS, :], x_s)
                if case == "scan_in_place":  # both sides staged
                    T.cumsum(x_s, dim=1, reverse=reverse)
                    T.reduce_max(x_s, m_s, dim=1)
                    T.copy(x_s, Y[i * ROWS:(i + 1) * ROWS, :])
                    T.copy(m_s, R[i * ROWS:(i + 1) * ROWS])
                else:  # mixed: staged source, unstaged destinations
                    T.cumsum(x_s, y_s, dim=1, reverse=reverse)
                    T.reduce_sum(x_s, m_f, dim=1)
                    T.copy(y_s, Y[i * ROWS:(i + 1) * ROWS, :])
                    T.copy(m_f, R[i * ROWS:(i + 1) * ROWS])

    return main


@settings(max_examples=20, deadline=None)
@given(stages=st.sampled_from([1, 2, 3]), case=st.sampled_from(["scan_in_place", "mixed"]), reverse=st.booleans(),
       path=st.sampled_from(PATHS), seed=st.integers(0, 100))
def test_scans_and_reductions_of_staged_tiles_match_numpy(stages, case, reverse, path, seed):
    x = np.random.default_rng(seed).standard_normal((N_TILES * ROWS, COLS)).astype(np.float32)
    y = np.full_like(x, np.nan)
    r = np.full(N_TILES * ROWS, np.nan, np.float32)
    run(path, staged_kernel(stages, case, reverse), X=x.copy(), Y=y, R=r)
    scan = np.flip(np.cumsum(np.flip(x, 1), axis=1), 1) if reverse else np.cumsum(x, axis=1)
    np.testing.assert_allclose(y, scan, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(r, scan.max(axis=1) if case == "scan_in_place" else x.sum(axis=1), rtol=1e-5,
                               atol=1e-5)


@pytest.mark.parametrize("case, pipelined", [("scan_in_place", True), ("mixed", False)])
def test_only_consistent_staging_is_pipelined(case, pipelined):
    script = lower("cuda:sm_80", staged_kernel(2, case, False)).script()
    assert ("tl_cp_async_wait" in script) == pipelined


def test_reduce_max_of_a_staged_tile_stays_pipelined():
    """The common form: a tile loaded each iteration, reduced into a fragment."""
    @T.prim_func
    def main(X: T.Tensor((N_TILES * ROWS, COLS), "float32"), R: T.Tensor((N_TILES * ROWS,), "float32")):
        with T.Kernel(1, threads=64) as _:
            x_s = T.alloc_shared((ROWS, COLS), "float32")
            m = T.alloc_fragment((ROWS,), "float32")
            for i in T.Pipelined(N_TILES, num_stages=2):
                T.copy(X[i * ROWS:(i + 1) * ROWS, :], x_s)
                T.reduce_max(x_s, m, dim=1)
                T.copy(m, R[i * ROWS:(i + 1) * ROWS])

    assert "tl_cp_async_wait" in lower("cuda:sm_80", main).script()
    x = np.random.default_rng(0).standard_normal((N_TILES * ROWS, COLS)).astype(np.float32)
    for path in PATHS:
        r = np.full(N_TILES * ROWS, np.nan, np.float32)
        run(path, main, X=x, R=r)
        np.testing.assert_array_equal(r, x.max(axis=1))
