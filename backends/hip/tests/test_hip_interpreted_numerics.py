"""Lowered hip kernels run by the SIMT interpreter (tilelang_hip.interpreter: MFMA/WMMA modelled
from the ISA tables, wave64/wave32 shuffles) against torch in float64, on ragged shapes. This
checks the MFMA/WMMA lane layouts, the A/B swap, LDS swizzles, operand addresses, predication,
LDS pipelining and wave reductions without an AMD GPU; not barriers or timing (lockstep)."""

import warnings

import numpy as np
import pytest
import torch
from hip_examples import example

from tilelang_hip.interpreter import run_kernel
from tilelang_hip.options import HipOptions
from tilelang_hip.pipeline import HipBackend

# gfx942: MFMA 16x16x16 (wave64); gfx942/32x32x8: MFMA 32x32x8; gfx1100: WMMA (wave32)
CORES = [("gfx942", "16x16x16"), ("gfx942", "32x32x8"), ("gfx1100", "16x16x16")]
IDS = ["mfma16", "mfma32", "wmma"]


class Target:
    def __init__(self, arch):
        self.arch = arch


def run(func, arch="gfx942", mfma="16x16x16", **arrays):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod = HipBackend(Target(arch)).lower(func, HipOptions(mfma=mfma))
    (gvar,) = mod.functions.keys()
    run_kernel(mod[gvar], arrays)


def rel_err(out, ref):
    return float(np.linalg.norm(out.astype(np.float64) - ref) / np.linalg.norm(ref))


@pytest.mark.parametrize("arch,mfma", CORES, ids=IDS)
@pytest.mark.parametrize("M,N,K,ta,tb", [(70, 40, 96, False, False), (64, 64, 64, False, True),
                                         (96, 64, 64, True, False), (128, 192, 64, True, True)])
def test_gemm(arch, mfma, M, N, K, ta, tb):
    gemm = example("gemm/gemm.py")
    a = torch.randn(*((K, M) if ta else (M, K))).half()
    b = torch.randn(*((N, K) if tb else (K, N))).half()
    c = np.full((M, N), np.nan, np.float16)
    run(gemm.gemm.get_tir(M, N, K, ta, tb), arch, mfma, A=a.numpy(), B=b.numpy(), C=c)
    assert rel_err(c, gemm.reference(a, b, ta, tb).numpy()) < 1e-3


@pytest.mark.parametrize("arch", ["gfx942", "gfx1100"])
def test_bf16_gemm(arch):
    gemm = example("gemm/gemm.py")
    a, b = torch.randn(64, 64).bfloat16(), torch.randn(64, 64).bfloat16()
    c = np.full((64, 64), np.nan, np.float32)
    run(gemm.gemm.get_tir(64, 64, 64, dtype="bfloat16"), arch, A=a.float().numpy(), B=b.float().numpy(), C=c)
    assert rel_err(c, (a.double() @ b.double()).numpy()) < 1e-2


@pytest.mark.parametrize("arch,mfma", CORES, ids=IDS)
@pytest.mark.parametrize("is_causal", [False, True])
def test_flash_attention(arch, mfma, is_causal):
    """P = softmax(Q K^T) stays in registers for P @ V: the accumulator layout is A's."""
    attention = example("attention/flash_attention.py")
    B, H, S, D = 1, 1, 80, 32
    q, k, v = (torch.randn(B, S, H, D).half() for _ in range(3))
    o = np.full((B, S, H, D), np.nan, np.float16)
    func = attention.flash_attention.get_tir(B, H, S, D, is_causal, block_M=64, block_N=32, threads=128)
    run(func, arch, mfma, Q=q.numpy(), K=k.numpy(), V=v.numpy(), O=o)
    assert rel_err(o, attention.reference(q, k, v, is_causal).numpy()) < 2e-3


def test_split_k_gemm_accumulates_with_atomics():
    M, N, K = 70, 40, 300
    a, b = torch.randn(M, K).half(), torch.randn(K, N).half()
    c = np.zeros((M, N), np.float32)
    run(example("gemm/gemm_splitk.py").gemm_splitk.get_tir(M, N, K, 3), A=a.numpy(), B=b.numpy(), C=c)
    assert rel_err(c, (a.double() @ b.double()).numpy()) < 1e-5


@pytest.mark.parametrize("arch", ["gfx942", "gfx1100"])
def test_wave_reductions_in_norms_and_softmax(arch):
    """Rows reduced across a wave64 (gfx942) or wave32 (gfx1100) by xor shuffles and LDS."""
    M, N = 10, 128
    x = (torch.randn(M, N) + 0.5).half()
    w, bias = torch.randn(N).half(), torch.randn(N).half()
    y = np.full((M, N), np.nan, np.float16)
    run(example("norm/layer_norm.py").layer_norm.get_tir(M, N), arch, X=x.numpy(), W=w.numpy(), B=bias.numpy(), Y=y)
    ref = torch.nn.functional.layer_norm(x.double(), (N,), w.double(), bias.double(), eps=1e-5).numpy()
    assert rel_err(y, ref) < 2e-3
    y = np.full((M, N), np.nan, np.float16)
    run(example("softmax/softmax.py").softmax.get_tir(M, N), arch, X=x.numpy(), Y=y)
    assert rel_err(y, torch.softmax(x.double(), dim=1).numpy()) < 2e-3
