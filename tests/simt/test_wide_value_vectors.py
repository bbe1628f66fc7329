"""Runs of 16-bit values computed in float32 (simt/transform/lower_parallel.py's ``_printable``):
the loads and stores of a run move at most 16 bytes, its computed values at most the dialect's
``value_vector_bytes``. CUDA prints 8 float32 lanes (``ulonglong4``), so 8 half or bfloat16 lanes
(one 16-byte access) scaled by a float literal stay one run there; backends whose printers stop at
16 bytes of values halve the run (4 lanes, 8-byte accesses).

* which width each backend picks, ragged shapes keeping their lane-by-lane edge;
* numerics on every interpreter and the cpu oracle against float64: scale-add (a broadcast of a
  float literal over the 8 lanes), SwiGLU (exp and division over them), ragged and size-1 shapes.
The CUDA source of these kernels is built with nvcc in backends/cuda/tests/
test_wide_value_vectors_build.py and run on a GPU in gpu/test_gpu_spread_loops.py."""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tilelang_core.language as T
from tilelang_core.testing.oracle import PATHS, lower, run
from test_lane_guards import guarded_add  # (tests/simt is on the path: no __init__.py)


def scale_add(M, N, dtype="float16"):
    """C = 0.5 * A + B computed in float32 under the author's ``if row < M and col < N``
    (test_lane_guards.py's kernel) over 16 x 128 tiles: 8-lane runs fit."""
    return guarded_add(M, N, 16, 128, dtype)


def swiglu(M, N, dtype="float16", out="float16", bm=16, bn=128, threads=128):
    """C = silu(A) * B in float32 (a SwiGLU's gate): exp and a division on every lane; the tile
    overhangs a ragged tensor, whose bounds guards the lowering adds."""
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype), C: T.Tensor((M, N), out)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            for i, j in T.Parallel(bm, bn):
                a = T.cast(A[by * bm + i, bx * bn + j], "float32")
                C[by * bm + i, bx * bn + j] = T.cast(
                    a / (1.0 + T.exp(-a)) * T.cast(B[by * bm + i, bx * bn + j], "float32"), out)

    return main


def _widths(path, func) -> set[int]:
    return {int(w) for w in re.findall(r"T\.vectorized\((\d+)\)", lower(path, func).script())}


@pytest.mark.parametrize("make", [scale_add, swiglu, lambda M, N, dtype: swiglu(M, N, dtype, "float8_e4m3fn")],
                         ids=["scale_add", "swiglu", "swiglu_to_fp8"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_cuda_runs_8_half_lanes_widened_to_float32(make, dtype):
    assert _widths("cuda:sm_90a", make(256, 256, dtype=dtype)) == {8}


@pytest.mark.parametrize("path", ["hip:gfx942", "metal:apple7"])
def test_backends_printing_16_value_bytes_halve_the_run(path):
    assert _widths(path, scale_add(256, 256)) == {4}


def flat_scale(N, block=256):
    """B[i] = 0.5 * A[i] in float32 over a 1-D tensor: the last block overhangs a ragged N."""
    @T.prim_func
    def main(A: T.Tensor((N,), "float16"), B: T.Tensor((N,), "float16")):
        with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
            for i in T.Parallel(block):
                B[bx * block + i] = T.cast(0.5 * T.cast(A[bx * block + i], "float32"), "float16")

    return main


def test_a_ragged_tensor_keeps_its_edge_lane_by_lane():
    script = lower("cuda:sm_80", flat_scale(1001)).script()
    assert "T.vectorized(8)" in script and "vs" in script, script


def test_rows_aligned_to_4_lanes_but_not_8_take_4():
    assert _widths("cuda:sm_80", scale_add(64, 196)) == {4}


def test_float32_values_of_float32_memory_stay_at_16_bytes():
    assert _widths("cuda:sm_80", scale_add(256, 256, "float32")) == {4}


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("N", [1, 7, 1001])
def test_flat_numerics(path, N):
    a = (np.random.default_rng(N).standard_normal(N) * 4).astype(np.float16)
    got = run(path, flat_scale(N), A=a, B=np.full(N, np.nan, np.float16))["B"]
    np.testing.assert_allclose(got.astype(np.float64), 0.5 * a.astype(np.float64), rtol=1e-3, atol=1e-4)


@settings(max_examples=12, deadline=None)
@given(M=st.integers(1, 40), N=st.sampled_from([1, 8, 24, 128, 200, 264]), make=st.sampled_from([scale_add, swiglu]),
       path=st.sampled_from(PATHS), seed=st.integers(0, 99))
def test_numerics(M, N, make, path, seed):
    rng = np.random.default_rng(seed)
    a, b = ((rng.standard_normal((M, N)) * 2).astype(np.float16) for _ in range(2))
    got = run(path, make(M, N), A=a, B=b, C=np.full((M, N), np.nan, np.float16))["C"]
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    want = 0.5 * a64 + b64 if make is scale_add else a64 / (1 + np.exp(-a64)) * b64
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=2e-3, atol=2e-3)
