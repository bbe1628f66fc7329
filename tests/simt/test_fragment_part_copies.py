"""A T.copy between two fragments that takes part of one is a T.Parallel loop over the part
(transform/element_copies.py), as TileLang lowers it: the sliced fragment is laid out from that
loop (its sliced dimension in registers) instead of being held whole by every thread. TileLang's
flash-decoding combine step and a partial destination, generated cases on cpu and every SIMT
interpreter against float64, and the layouts."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tilelang_core.language as T
from tilelang_core.testing.oracle import PATHS, run


def combine(splits, rows, dim, threads):
    """out[r, :] = sum_k 2^(lse[k, r] - logsum[r]) part[r, k, :], logsum[r] = log2 sum_k 2^lse[k, r]
    (flash decoding's combine of split-KV partial outputs, TileLang's example_mha_inference)."""
    @T.prim_func
    def main(LSE: T.Tensor((splits, rows), "float32"), P: T.Tensor((rows, splits, dim), "float32"),
             O: T.Tensor((rows, dim), "float32")):
        with T.Kernel(1, threads=threads):
            lse = T.alloc_fragment((splits, rows), "float32")
            lse_k = T.alloc_fragment((rows,), "float32")
            lse_max = T.alloc_fragment((rows,), "float32")
            logsum = T.alloc_fragment((rows,), "float32")
            scale = T.alloc_fragment((rows,), "float32")
            part = T.alloc_fragment((rows, dim), "float32")
            acc = T.alloc_fragment((rows, dim), "float32")
            T.clear(logsum)
            T.clear(acc)
            T.copy(LSE, lse)
            T.reduce_max(lse, lse_max, dim=0, clear=True)
            for k in T.Pipelined(splits):
                T.copy(lse[k, :], lse_k)
                for i in T.Parallel(rows):
                    logsum[i] += T.exp2(lse_k[i] - lse_max[i])
            for i in T.Parallel(rows):
                logsum[i] = T.log2(logsum[i]) + lse_max[i]
            for k in T.serial(splits):
                T.copy(P[0:rows, k, :], part)
                T.copy(lse[k, :], lse_k)
                for i in T.Parallel(rows):
                    scale[i] = T.exp2(lse_k[i] - logsum[i])
                for i, j in T.Parallel(rows, dim):
                    acc[i, j] += part[i, j] * scale[i]
            T.copy(acc, O)

    return main


def rows_into_slices(splits, rows, threads):
    """out[k, r] = x[r] * (k + 1), written row by row into a slice of a 2-D fragment."""
    @T.prim_func
    def main(X: T.Tensor((rows,), "float32"), O: T.Tensor((splits, rows), "float32")):
        with T.Kernel(1, threads=threads):
            x = T.alloc_fragment((rows,), "float32")
            y = T.alloc_fragment((rows,), "float32")
            out = T.alloc_fragment((splits, rows), "float32")
            T.copy(X, x)
            for k in T.serial(splits):
                for i in T.Parallel(rows):
                    y[i] = x[i] * (k + 1)
                T.copy(y, out[k, :])
            T.copy(out, O)

    return main


def combine_reference(lse, part):
    lse, part = lse.astype(np.float64), part.astype(np.float64)
    top = lse.max(axis=0)
    logsum = np.log2(np.exp2(lse - top).sum(axis=0)) + top
    return np.einsum("kr,rkd->rd", np.exp2(lse - logsum), part)


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=3, deadline=None)
@given(splits=st.integers(1, 4), rows=st.sampled_from([32, 64, 128]), dim=st.sampled_from([16, 64]),
       threads=st.sampled_from([32, 128]), seed=st.integers(0, 999))
def test_the_combine_of_split_partial_outputs(path, splits, rows, dim, threads, seed):
    rng = np.random.default_rng(seed)
    lse = (4 * rng.standard_normal((splits, rows))).astype(np.float32)
    part = rng.standard_normal((rows, splits, dim)).astype(np.float32)
    out = run(path, combine(splits, rows, dim, threads), LSE=lse, P=part, O=np.full((rows, dim), np.nan, np.float32))
    np.testing.assert_allclose(out["O"], combine_reference(lse, part), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("splits,rows,threads", [(1, 64, 64), (3, 128, 128), (4, 32, 128)])
def test_a_copy_into_a_slice_of_a_fragment(path, splits, rows, threads):
    x = np.random.default_rng(splits).standard_normal(rows).astype(np.float32)
    out = run(path, rows_into_slices(splits, rows, threads), X=x, O=np.full((splits, rows), np.nan, np.float32))
    np.testing.assert_allclose(out["O"], np.outer(np.arange(1, splits + 1), x), rtol=1e-6)


def test_the_sliced_fragment_is_laid_out_from_the_loop():
    """lse (4 x 128 over 128 threads) holds its rows' columns, not the whole tile in every thread
    (512 registers a thread, which spilled in TileLang's flash-decoding combine on the H100)."""
    from tilelang_core.transform.layout_inference import infer_layouts

    layouts = {b.name: f for b, f in infer_layouts(combine(4, 128, 64, 128), 128).items()}
    assert not layouts["lse"].is_whole and layouts["lse"].local_size <= 4 * 32
    # column r of lse lives where lse_k[r] does
    assert all(layouts["lse"].thread_of(k, r) == layouts["lse_k"].thread_of(r) for k in range(4) for r in range(0, 128, 9))
