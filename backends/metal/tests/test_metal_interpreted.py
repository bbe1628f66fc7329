"""The examples lowered for Metal and run by the SIMT interpreter (tilelang_metal.interpreter)
against torch in float64, ragged shapes included: copies, the T.Parallel thread mapping,
simd_sum/simd_shuffle_xor reductions, the simdgroup_matrix gemm's operand addressing and
accumulator order, register-A gemms (attention's P @ V) and atomics. Barriers and the Metal
compiler are not exercised here (lockstep execution; see test_metal_examples_msl.py and the
macOS tests)."""

import numpy as np
import pytest
import torch

from metal_cases import example, lower, quickstart
from tilelang_metal.interpreter import lane_coords, run_kernel

RNG = np.random.default_rng(7)


def run(func, **arrays):
    _, lowered = lower(func)
    run_kernel(lowered, arrays)
    return lowered


def rel_err(out, ref):
    ref = np.asarray(ref, dtype=np.float64)
    return float(np.linalg.norm(out.astype(np.float64) - ref) / np.linalg.norm(ref))


def test_lane_coordinates_cover_the_8x8_tile_once():
    cells = {(r, c + e) for lane in range(32) for r, c in [lane_coords(lane)] for e in (0, 1)}
    assert cells == {(r, c) for r in range(8) for c in range(8)}
    assert [lane_coords(l) for l in (0, 1, 2, 8, 16)] == [(0, 0), (0, 2), (1, 0), (0, 4), (4, 0)]


@pytest.mark.parametrize("M,N,K,trans_A,trans_B", [
    (200, 136, 96, False, False),      # ragged in every dimension
    (72, 80, 64, False, True),
    (64, 72, 96, True, False),
])
def test_gemm(M, N, K, trans_A, trans_B):
    a = RNG.standard_normal((K, M) if trans_A else (M, K)).astype(np.float16)
    b = RNG.standard_normal((N, K) if trans_B else (K, N)).astype(np.float16)
    c = np.full((M, N), np.nan, np.float16)
    lowered = run(example("gemm/gemm.py").gemm.get_tir(M, N, K, trans_A, trans_B), A=a, B=b, C=c)
    assert "tl_simdgroup_gemm" in lowered.script()
    ref = (a.T if trans_A else a).astype(np.float64) @ (b.T if trans_B else b).astype(np.float64)
    assert rel_err(c, ref) < 1e-3


def test_gemm_float32_on_simdgroup_matrices_and_the_fma_fallback():
    M, N, K = 40, 72, 48
    a, b = RNG.standard_normal((M, K)).astype(np.float32), RNG.standard_normal((K, N)).astype(np.float32)
    func = example("gemm/gemm.py").gemm.get_tir(M, N, K, block_M=32, block_N=64, block_K=16, dtype="float32")
    for options in ({}, {"disable_simdgroup_matrix": True}):
        c = np.full((M, N), np.nan, np.float32)
        _, lowered = lower(func, **options)
        assert ("tl_simdgroup_gemm" in lowered.script()) == (not options)
        run_kernel(lowered, {"A": a, "B": b, "C": c})
        np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-4)


def test_split_k_gemm_adds_slices_atomically():
    M, N, K = 70, 40, 300
    a, b = RNG.standard_normal((M, K)).astype(np.float16), RNG.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    run(example("gemm/gemm_splitk.py").gemm_splitk.get_tir(M, N, K, 3), A=a, B=b, C=c)
    assert rel_err(c, a.astype(np.float64) @ b.astype(np.float64)) < 1e-5


def test_quickstart_gemm_relu():
    a, b = RNG.standard_normal((70, 50)).astype(np.float16), RNG.standard_normal((50, 40)).astype(np.float16)
    c = np.full((70, 40), np.nan, np.float16)
    run(quickstart(70, 40, 50), A=a, B=b, C=c)
    ref = np.maximum(a.astype(np.float64) @ b.astype(np.float64), 0)
    assert rel_err(c, ref) < 1e-3


@pytest.mark.parametrize("is_causal", [False, True])
def test_flash_attention_with_a_ragged_sequence(is_causal):
    attention = example("attention/flash_attention.py")
    B, H, S, D = 1, 2, 80, 32
    q, k, v = (torch.randn(B, S, H, D).half() for _ in range(3))
    o = np.full((B, S, H, D), np.nan, np.float16)
    func = attention.flash_attention.get_tir(B, H, S, D, is_causal, block_M=64, block_N=32, threads=128)
    run(func, Q=q.numpy(), K=k.numpy(), V=v.numpy(), O=o)
    assert rel_err(o, attention.reference(q, k, v, is_causal).numpy()) < 2e-3


def test_softmax_rows_ragged():
    x = torch.randn(37, 300)
    y = np.full((37, 300), np.nan, np.float32)
    run(example("softmax/softmax.py").softmax.get_tir(37, 300, dtype="float32"), X=x.numpy(), Y=y)
    np.testing.assert_allclose(y, torch.softmax(x.double(), dim=1).numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", ["rms_norm", "layer_norm"])
def test_norms(name):
    module = example(f"norm/{name}.py")
    M, N = 10, 256
    x = torch.randn(M, N).half() + 0.5
    w, b = torch.randn(N).half(), torch.randn(N).half()
    y = np.full((M, N), np.nan, np.float16)
    if name == "rms_norm":
        run(module.rms_norm.get_tir(M, N), X=x.numpy(), W=w.numpy(), Y=y)
        ref = module.reference(x.double(), w.double()).numpy()
    else:
        run(module.layer_norm.get_tir(M, N), X=x.numpy(), W=w.numpy(), B=b.numpy(), Y=y)
        ref = torch.nn.functional.layer_norm(x.double(), (N,), w.double(), b.double(), eps=1e-5).numpy()
    assert rel_err(y, ref) < 2e-3


def test_scale_add_ragged():
    a, b = RNG.standard_normal((70, 100)).astype(np.float32), RNG.standard_normal((70, 100)).astype(np.float32)
    c = np.full((70, 100), np.nan, np.float32)
    run(example("elementwise/scale_add.py").scale_add.get_tir(70, 100, 0.5), A=a, B=b, C=c)
    np.testing.assert_allclose(c, 0.5 * a.astype(np.float64) + b, rtol=1e-6, atol=1e-7)
