"""Every kernel in examples/ lowered for CUDA and run by the SIMT interpreter against torch in
float64. The H200 found two bugs here that the per-op tests missed (LayerNorm's layout
inference, causal attention's `x = expr` binding); the examples as users write them are the
regression suite."""

import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from tilelang_cuda.interpreter import run_kernel
from tilelang_cuda.options import CudaOptions
from tilelang_cuda.pipeline import CudaBackend

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


class Target:
    arch = "sm_80"


def example(relpath):
    spec = importlib.util.spec_from_file_location("cuda_ex_" + relpath.replace("/", "_")[:-3], EXAMPLES / relpath)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(func, options=None, **arrays):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod = CudaBackend(Target()).lower(func, options or CudaOptions())
    (gvar,) = mod.functions.keys()
    run_kernel(mod[gvar], arrays)


def rel_err(out, ref):
    return float(np.linalg.norm(out.astype(np.float64) - ref) / np.linalg.norm(ref))


def test_layer_norm():
    M, N = 10, 64
    x = (torch.randn(M, N) + 0.5).half()
    w, b = torch.randn(N).half(), torch.randn(N).half()
    y = np.full((M, N), np.nan, np.float16)
    run(example("norm/layer_norm.py").layer_norm.get_tir(M, N), X=x.numpy(), W=w.numpy(), B=b.numpy(), Y=y)
    ref = torch.nn.functional.layer_norm(x.double(), (N,), w.double(), b.double(), eps=1e-5).numpy()
    assert rel_err(y, ref) < 2e-3


@pytest.mark.parametrize("is_causal,staged", [(False, True), (False, False), (True, True), (True, False)])
def test_flash_attention(is_causal, staged):
    """O goes through Q's shared tile (transform/stage_epilogue.py; causal: with
    tl.enable_staged_epilogue), per thread with tl.disable_staged_epilogue; either way rows past
    S = 80 (a ragged row block) are not stored."""
    attention = example("attention/flash_attention.py")
    B, H, S, D = 1, 1, 80, 32
    q, k, v = (torch.randn(B, S, H, D).half() for _ in range(3))
    o = np.full((B, S, H, D), np.nan, np.float16)
    func = attention.flash_attention.get_tir(B, H, S, D, is_causal, block_M=64, block_N=32, threads=128)
    run(func, CudaOptions(disable_staged_epilogue=not staged, enable_staged_epilogue=staged and is_causal),
        Q=q.numpy(), K=k.numpy(), V=v.numpy(), O=o)
    assert rel_err(o, attention.reference(q, k, v, is_causal).numpy()) < 2e-3


def test_split_k_gemm_pipelines_through_a_bound_index():
    """`k0 = (bz * k_tiles + ko) * block_K` before the copies: still pipelined, still right."""
    M, N, K = 70, 40, 300
    a, b = torch.randn(M, K).half(), torch.randn(K, N).half()
    c = np.zeros((M, N), np.float32)
    run(example("gemm/gemm_splitk.py").gemm_splitk.get_tir(M, N, K, 3), A=a.numpy(), B=b.numpy(), C=c)
    assert rel_err(c, (a.double() @ b.double()).numpy()) < 1e-5


def test_grouped_gemms_under_a_block_uniform_guard():
    """MoE's grouped GEMMs (examples/moe): a tile of padding (-1) and masked tiles with no valid
    row skip the pipeline; the others read their expert's weights."""
    moe = example("moe/grouped_gemm.py")
    tiles = dict(block_M=32, block_N=32, block_K=16, num_stages=2, threads=128, dtype="float16")
    G, N, K = 3, 40, 40
    b = torch.randn(G, N, K).half()
    tile_group = np.array([2, -1, 0, 0], np.int32)
    a = torch.randn(128, K).half()
    c = np.full((128, N), np.nan, np.float16)
    run(moe.grouped_gemm_contiguous.get_tir(128, N, K, G, **tiles), A=a.numpy(), B=b.numpy(),
        tile_group=tile_group, C=c)
    for t, g in enumerate(tile_group):
        rows = slice(32 * t, 32 * t + 32)
        if g < 0:
            assert np.isnan(c[rows]).all()
        else:
            assert rel_err(c[rows], (a[rows].double() @ b[g].double().T).numpy()) < 2e-3
    a3 = torch.randn(G, 70, K).half()
    masked_m = np.array([33, 0, 70], np.int32)
    c3 = np.full((G, 70, N), np.nan, np.float16)
    run(moe.grouped_gemm_masked.get_tir(G, 70, N, K, **tiles), A=a3.numpy(), B=b.numpy(), masked_m=masked_m, C=c3)
    for g, m in enumerate(masked_m):
        if m:
            assert rel_err(c3[g, :m], (a3[g, :m].double() @ b[g].double().T).numpy()) < 2e-3
        assert np.isnan(c3[g, -(-m // 32) * 32:]).all()  # tiles past the valid rows: not written


@pytest.mark.parametrize("M", [1, 13])
def test_w4a16_gemm_decodes_into_the_register_operand(M):
    """examples/dequant: the weights decoded by each thread into the gemm's A fragment (mma.sync
    from registers on sm_80), tokens as its B operand, C written transposed."""
    dq = example("dequant/w4a16_gemm.py")
    N, K = 72, 256
    codes, s = dq.quantize(torch.randn(N, K), 64)
    s = s.half()
    a = torch.randn(M, K).half()
    c = np.full((M, N), np.nan, np.float16)
    run(dq.w4a16_gemm.get_tir(M, N, K, group=64, block_N=64, block_K=128, num_stages=2), A=a.numpy(),
        Wp=dq.pack_int4(codes).numpy(), S=s.numpy(), C=c)
    w = ((codes.double() - 8).view(N, K // 64, 64) * s.double()[..., None]).view(N, K)
    assert rel_err(c, (a.double() @ w.T).numpy()) < 2e-3


@pytest.mark.parametrize("is_causal, groups, stats", [(False, 1, "shared"), (True, 1, "shared"), (True, 2, "shared"),
                                                    (False, 2, "global"), (True, 1, "global")])
def test_flash_attention_backward(is_causal, groups, stats):
    """examples/attention/flash_attention_bwd.py for sm_80: P^T and dS^T through shared memory,
    dQ by atomics; S = 40 against 32-row tiles (the second tiles ragged); with groups=2, two query
    heads share each K/V head (one loop over both heads' blocks); stats="global": lse and delta
    loaded into per-column registers before the first gemm."""
    bwd = example("attention/flash_attention_bwd.py")
    B, H, S, D = 1, groups, 40, 16
    q, do = (torch.randn(B, S, H, D).half() for _ in range(2))
    k, v = (torch.randn(B, S, H // groups, D).half() for _ in range(2))
    o, lse, dq_ref, dk_ref, dv_ref = bwd.reference(q, k, v, do, is_causal)
    o16 = o.half().numpy()
    delta = np.full((B, H, S), np.nan, np.float32)
    run(bwd.flash_bwd_delta.get_tir(B, H, S, D, block=32), O=o16, dO=do.numpy(), Delta=delta)
    dq = np.zeros((B, S, H, D), np.float32)
    dk, dv = (np.full((B, S, H // groups, D), np.nan, np.float16) for _ in range(2))
    run(bwd.flash_bwd.get_tir(B, H, S, D, is_causal, block_M=32, block_N=32, num_stages=1, threads=128, groups=groups,
                              stats=stats),
        Q=q.numpy(), K=k.numpy(), V=v.numpy(), dO=do.numpy(), LSE=lse.float().numpy(), Delta=delta, dQ=dq, dK=dk, dV=dv)
    for got, ref in ((dq, dq_ref), (dk, dk_ref), (dv, dv_ref)):
        assert rel_err(got, ref.numpy()) < 5e-3
