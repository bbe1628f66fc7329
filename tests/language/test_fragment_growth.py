"""A fragment indexed past its declared shape inside T.Parallel is grown to what its accesses
reach, with a warning (TileLang runs such kernels: its attention-sink examples fill a [heads]
fragment over block_M > heads rows and read it back row by row). The values are those of a
fragment declared at the larger shape, on every reference path; what cannot be grown is refused."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tilelang_core.language as T
from tilelang_core.errors import FrontendError
from tilelang_core.language.bounds_check import FragmentGrownWarning
from tilelang_core.testing.oracle import PATHS, run


def sinks_like(heads, block_M, heads_total, seq):
    """The attention-sink pattern: a [heads] fragment written and read over block_M rows."""
    @T.prim_func
    def main(S: T.Tensor((heads_total,), "float32"), X: T.Tensor((heads_total, seq), "float32"),
             Y: T.Tensor((heads_total, seq), "float32")):
        with T.Kernel(T.ceildiv(seq, block_M), heads_total, threads=64) as (bx, by):
            sinks = T.alloc_fragment([heads], "float32")
            for i in T.Parallel(block_M):
                sinks[i] = S[by] + i
            for i in T.Parallel(block_M):
                Y[by, bx * block_M + i] = X[by, bx * block_M + i] * 2.0 + sinks[i]

    return main


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=4, deadline=None)
@given(heads=st.integers(1, 8), block_M=st.sampled_from([16, 32, 64]), seq=st.integers(1, 70),
       heads_total=st.integers(1, 3), seed=st.integers(0, 2**16))
def test_fragment_indexed_past_its_shape_holds_what_was_written(path, heads, block_M, seq, heads_total, seed):
    rng = np.random.default_rng(seed)
    with pytest.warns(FragmentGrownWarning, match=rf"fragment 'sinks' .* grown to \[{block_M}\]"):
        kernel = sinks_like(heads, block_M, heads_total, seq)
    s = rng.standard_normal(heads_total).astype(np.float32)
    x = rng.standard_normal((heads_total, seq)).astype(np.float32)
    out = run(path, kernel, S=s, X=x, Y=np.full((heads_total, seq), np.nan, np.float32))
    rows = np.arange(seq) % block_M
    expected = x.astype(np.float64) * 2 + s.astype(np.float64)[:, None] + rows[None, :]
    np.testing.assert_allclose(out["Y"], expected, rtol=1e-6, atol=1e-6)


def test_fragment_within_its_shape_is_not_touched():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", FragmentGrownWarning)
        sinks_like(64, 64, 2, 64)


def test_fragment_indexed_below_zero_is_refused():
    with pytest.raises(FrontendError, match=r"a write of f\[i - 1\]"):
        @T.prim_func
        def below(A: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=32):
                f = T.alloc_fragment([8], "float32")
                for i in T.Parallel(8):
                    f[i - 1] = A[i]
