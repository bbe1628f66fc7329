"""T.use_swizzle's block indices are known to stay inside the grid: global reads indexed by them
carry no bounds guard where the grid tiles the tensor (a guard there kept nvcc from merging
repeated loads: TileLang's deepgemm example read its scales 64 times a k-tile instead of twice),
keep it where it does not, and compute the same values either way (the SIMT interpreter against
numpy in float64, ragged last bands included)."""

import numpy as np
import pytest

from lowered import lower
import tilelang_core.language as T
from tilelang_cuda.interpreter import run_kernel

pytest.importorskip("tvm")


def make_row_scaled(M, N, bm, bn, panel):
    """C[i, j] = A[i, j] * S[i, bx]: every element reads a scale indexed by both swizzled
    block indices, inside T.Parallel."""

    @T.prim_func
    def row_scaled(A: T.Tensor((M, N), T.float32), S: T.Tensor((M, T.ceildiv(N, bn)), T.float32),
                   C: T.Tensor((M, N), T.float32)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=64) as (bx, by):
            T.use_swizzle(panel_size=panel)
            a = T.alloc_fragment((bm, bn), T.float32)
            T.copy(A[by * bm, bx * bn], a)
            for i, j in T.Parallel(bm, bn):
                a[i, j] = a[i, j] * S[by * bm + i, bx]
            T.copy(a, C[by * bm, bx * bn])

    return row_scaled


def guarded_loads(func) -> int:
    from tvm import tirx
    import tvm_ffi

    hits = []

    def on_call(call):
        if str(getattr(call.op, "name", "")).endswith("if_then_else"):
            hits.append(call)

    tvm_ffi.structural_walk(func.body, [(tirx.Call, on_call)])
    return len(hits)


# (M, N, bm, bn, panel): a grid of 10 x 3 blocks in panels of 4 rows ends in a band of 2
SHAPES = [(320, 96, 32, 32, 4), (256, 256, 32, 64, 2), (96, 64, 32, 32, 8)]


@pytest.mark.parametrize("M,N,bm,bn,panel", SHAPES)
def test_swizzled_reads_inside_the_grid_carry_no_guard(M, N, bm, bn, panel):
    assert guarded_loads(lower(make_row_scaled(M, N, bm, bn, panel))) == 0


def test_a_ragged_tensor_keeps_its_guard_under_swizzle():
    assert guarded_loads(lower(make_row_scaled(300, 96, 32, 32, 4))) > 0


@pytest.mark.parametrize("M,N,bm,bn,panel", SHAPES + [(300, 90, 32, 32, 4)])
def test_swizzled_row_scale_matches_numpy(M, N, bm, bn, panel):
    rng = np.random.default_rng(M + N + panel)
    a = rng.standard_normal((M, N)).astype(np.float32)
    s = rng.standard_normal((M, -(-N // bn))).astype(np.float32)
    c = np.full((M, N), np.nan, np.float32)
    run_kernel(lower(make_row_scaled(M, N, bm, bn, panel)), {"A": a, "S": s, "C": c})
    ref = a.astype(np.float64) * np.repeat(s.astype(np.float64), bn, axis=1)[:, :N]
    np.testing.assert_allclose(c, ref, rtol=1e-6)
