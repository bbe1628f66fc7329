"""fp16 gemms with an fp16 accumulator (TileLang's ``accum_dtype=float16``) lowered for sm_80 and run
by the SIMT interpreter: mma.sync's ``.f16.f16.f16.f16`` form (they took the scalar FMA path
before), the accumulator two elements to a register in the fp32 one's order.

The interpreter rounds each instruction's sum once to fp16, so the result must equal, bit for
bit, a numpy model that adds the K dimension 16 at a time in float64 and rounds after each step
(ragged K zero-filled); and it must be within fp16's own error of a float64 matmul."""

import numpy as np
import pytest

import kernels
from lowered import lower, per_step_fp16
import tilelang_core.language as T
from tilelang_cuda.interpreter import run_kernel

RNG = np.random.default_rng(11)

CASES = [
    ((100, 72, 40), {"bm": 64, "bn": 64, "bk": 32}, (False, False)),   # ragged M, N and K
    ((64, 48, 64), {"bm": 64, "bn": 48, "bk": 32}, (False, True)),     # odd NI: ldmatrix x2
    ((64, 128, 48), {"bm": 64, "bn": 128, "bk": 16, "policy": T.GemmWarpPolicy.FullCol}, (True, False)),
    ((32, 40, 64), {"bm": 32, "bn": 64, "bk": 64, "stages": 1}, (True, True)),
]


@pytest.mark.parametrize("shape,kw,majors", CASES)
def test_fp16_accumulator_gemm_runs_on_mma_sync(shape, kw, majors):
    M, N, K = shape
    trans_a, trans_b = majors
    func = lower(kernels.make_gemm(M, N, K, dtype=T.float16, out_dtype=T.float16, accum_dtype=T.float16,
                                   trans_a=trans_a, trans_b=trans_b, **kw))
    assert "tl_mma_m16n8k16_f16_f16" in func.script()
    a = (RNG.standard_normal((K, M) if trans_a else (M, K)) / 2).astype(np.float16)
    b = (RNG.standard_normal((N, K) if trans_b else (K, N)) / 2).astype(np.float16)
    c = np.full((M, N), np.nan, np.float16)
    run_kernel(func, {"A": a, "B": b, "C": c})
    a_mk, b_kn = (a.T if trans_a else a), (b.T if trans_b else b)
    np.testing.assert_array_equal(c, per_step_fp16(a_mk, b_kn))
    exact = a_mk.astype(np.float64) @ b_kn.astype(np.float64)
    assert np.linalg.norm(c - exact) / np.linalg.norm(exact) < 2e-3


def test_an_fp16_accumulator_feeds_the_next_gemm_from_registers():
    func = lower(kernels.make_gemm_from_registers(T.GemmWarpPolicy.FullRow, fp16_accumulators=True))
    assert func.script().count("tl_mma_m16n8k16_f16_f16") >= 2
    a, b, c = ((RNG.standard_normal(shape) / 4).astype(np.float16) for shape in ((64, 32), (32, 64), (64, 64)))
    out = np.full((64, 64), np.nan, np.float16)
    run_kernel(func, {"A": a, "B": b, "C": c, "Out": out})
    np.testing.assert_array_equal(out, per_step_fp16(per_step_fp16(a, b), c))
