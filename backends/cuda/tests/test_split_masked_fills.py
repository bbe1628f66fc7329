"""SplitMaskedFills (tilelang_core/simt/transform/split_masked_fills.py) on the CUDA lowering: a
loop's mask fill that is all zeros in some iterations writes zeros there. The condition is
checked exact against brute force; the lowered kernels run in the SIMT interpreter against torch."""

import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from tvm import tirx
from tvm.sym import Analyzer

from tilelang_core.simt.transform.split_masked_fills import zero_when
from tilelang_core.simt.transform.state import substitute
from tilelang_cuda.interpreter import run_kernel
from tilelang_cuda.options import CudaOptions
from tilelang_cuda.pipeline import CudaBackend

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
AMPERE = dict(disable_wgmma=True, disable_warp_specialized=True)


class Target:
    def __init__(self, arch="sm_80"):
        self.arch = arch


def flash_attention():
    spec = importlib.util.spec_from_file_location("smf_flash", EXAMPLES / "attention" / "flash_attention.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def lowered(func, arch="sm_80", **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        backend, opts = CudaBackend(Target(arch)), CudaOptions(**options)
        mod = backend.lower(func, opts)
        return mod, backend.codegen(mod, opts)


@pytest.mark.parametrize("bm,bn,seq_len", [(128, 128, 1000), (128, 64, 520), (64, 128, 1024), (64, 64, 130)])
def test_causal_mask_zero_condition_is_exact(bm, bn, seq_len):
    """zero_when on the example's causal mask: for every (row block, key block) the derived
    condition holds exactly when the mask is 0 at every (i, j) of the tile (checked by brute
    force): the fill may be skipped only where that is so, and is skipped wherever it is."""

    bx, k, i, j = (tirx.Var(n, "int32") for n in ("bx", "k", "i", "j"))
    cond = tirx.bitwise_and(bx * bm + i >= k * bn + j, k * bn + j < seq_len)  # the example's `&`
    value = tirx.if_then_else(cond, tirx.const(0.0, "float32"), tirx.const(float("-inf"), "float32"))
    loops = [tirx.For(v, tirx.const(0, "int32"), tirx.const(n, "int32"), tirx.ForKind.SERIAL, tirx.Evaluate(0))
             for v, n in ((i, bm), (j, bn))]
    when = zero_when(value, loops)
    assert when is not None
    analyzer = Analyzer()
    rows, keys = -(-seq_len // bm), -(-seq_len // bn)
    for x in range(rows):
        for kk in range(keys):
            derived = analyzer.simplify(substitute(when, {bx: tirx.const(x, "int32"), k: tirx.const(kk, "int32")}))
            truth = all(x * bm + ii >= kk * bn + jj and kk * bn + jj < seq_len
                        for ii in range(bm) for jj in range(bn))
            assert bool(derived) == truth, (x, kk, derived)


def zero_branch(source) -> bool:
    """Is there an ``if (<condition on k>) {`` whose first statement stores zeros into S?"""
    lines = source[source.find("for (int k"):].splitlines()
    return any(line.strip().startswith("if (") and "k" in line and "acc_s_ptr" in nxt and "0x0p+0f" in nxt
               for line, nxt in zip(lines, lines[1:]))


def test_causal_fill_writes_zeros_left_of_the_diagonal():
    """mma.sync path (sm_80), causal 128x64 tiles over 1000 keys: the fill is split on the derived
    condition (key block left of the diagonal and not the ragged last one): zeros there, the mask
    only in the else branch; tl.disable_conditional_mask keeps the fill as written. The non-causal fill of a length that divides the tile is constant
    (nothing to split), and one that does not is split on the ragged block alone."""
    ex = flash_attention()
    _, source = lowered(ex.flash_attention.get_tir(1, 2, 1000, 128, True, block_M=128, block_N=64, threads=128))
    kernel = source[source.find('extern "C" __global__'):]
    split = kernel.index("if ((63 < ((((int)blockIdx.x) * 128) - (k * 64))) && (k < 15)) {")
    zeros, mask = kernel[split:kernel.index("} else {", split)], kernel[kernel.index("} else {", split):]
    assert zeros.count("make_float2(0x0p+0f") == 32 and "<=" not in zeros  # 64 zeros a thread, as pairs
    assert "<= (((((int)blockIdx.x) * 128)" in mask[:3000]
    func = ex.flash_attention.get_tir(1, 2, 1000, 128, True, block_M=128, block_N=64, threads=128)
    assert not zero_branch(lowered(func, disable_conditional_mask=True)[1])  # the switch keeps the mask
    _, ragged = lowered(ex.flash_attention.get_tir(1, 2, 1000, 128, False, block_M=128, block_N=64, threads=128))
    ragged = ragged[ragged.find("tl_cp_async_commit();", ragged.find("for (int k")):]
    assert ragged.split("\n")[1].strip() == "if (k < 15) {" and "make_float2(0x0p+0f" in ragged.split("\n")[2]
    _, even = lowered(ex.flash_attention.get_tir(1, 2, 1024, 128, False, block_M=128, block_N=64, threads=128))
    even = even[even.find("tl_cp_async_commit();", even.find("for (int k")):]
    assert "make_float2(0x0p+0f" in even.split("\n")[1]  # constant zeros, no branch


@pytest.mark.parametrize("causal,seq_len,tiles", [
    (True, 200, dict(block_M=64, block_N=32, threads=128)),   # 7 key blocks: zeros, diagonal, ragged
    (True, 300, dict(block_M=64, block_N=128, threads=128)),  # key block wider than the row block
    (False, 100, dict(block_M=64, block_N=32, threads=128)),  # only the ragged block masks
])
def test_split_fills_keep_attention_exact(causal, seq_len, tiles):
    """The split kernels (mma.sync lowering, run by the SIMT interpreter) against torch in float64."""
    ex = flash_attention()
    B, H, D = 1, 1, 32
    q, k, v = (torch.randn(B, seq_len, H, D).half() for _ in range(3))
    o = np.full((B, seq_len, H, D), np.nan, np.float16)
    mod, source = lowered(ex.flash_attention.get_tir(B, H, seq_len, D, causal, **tiles))
    assert zero_branch(source), "no branch writing plain zeros"
    (gvar,) = mod.functions.keys()
    run_kernel(mod[gvar], {"Q": q.numpy(), "K": k.numpy(), "V": v.numpy(), "O": o})
    ref = ex.reference(q, k, v, causal).numpy()
    assert np.abs(o.astype(np.float64) - ref).max() < 2e-2


def windowed_scores(seq, block, window):
    """A sliding-window mask fill before the score gemm (TileLang's attention-sink example): in
    no iteration is it zero at every point, so the wgmma fold's condition is the constant False."""
    import tilelang_core.language as T

    @T.prim_func
    def main(Q: T.Tensor((seq, 64), "float16"), K: T.Tensor((seq, 64), "float16"),
             S: T.Tensor((seq, seq), "float32")):
        with T.Kernel(seq // block, threads=128) as bx:
            Q_shared = T.alloc_shared((block, 64), "float16")
            K_shared = T.alloc_shared((block, 64), "float16")
            acc_s = T.alloc_fragment((block, block), "float32")
            T.copy(Q[bx * block, 0], Q_shared)
            for k in T.Pipelined(T.max(0, bx - 1), bx + 1, num_stages=2):
                T.copy(K[k * block, 0], K_shared)
                for i, j in T.Parallel(block, block):
                    q_idx = bx * block + i
                    k_idx = k * block + j
                    acc_s[i, j] = T.if_then_else(q_idx >= k_idx and q_idx < k_idx + window, 0,
                                                 -T.infinity("float32"))
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True)
                T.copy(acc_s, S[bx * block, k * block])

    return main


def test_window_mask_never_all_zero_keeps_the_fill_on_wgmma():
    """sm_90a, where the fold is conditional on wgmma's clear flag: a condition that simplifies to
    a constant came back from the options map as a Python int and TVM's Select refused it."""
    _, source = lowered(windowed_scores(256, 64, 64), arch="sm_90a")
    kernel = source[source.find('extern "C" __global__'):]
    assert "tl_wgmma_ss_f16" in kernel and "-CUDART_INF_F" in kernel  # wgmma, and the mask kept


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_bool_tiles_are_not_moved_as_vectors(arch):
    """TVM's CUDA printer spells a vector of 4 bools ``ushort4`` (8 bytes for 4): TileLang's
    block-sparse attention copied its [4] bool mask that way and faulted on the H200. Bool tiles
    move element by element, into fragments, shared memory and through T.Parallel."""
    import tilelang_core.language as T

    @T.prim_func
    def masks(M: T.Tensor((4, 16), "bool"), X: T.Tensor((4, 16), "float32"), Y: T.Tensor((4, 16), "float32")):
        with T.Kernel(4, threads=128) as bx:
            frag = T.alloc_fragment([16], "bool")
            smem = T.alloc_shared([16], "bool")
            T.copy(M[bx, :], frag)
            T.copy(M[bx, :], smem)
            for k in T.serial(16):
                if frag[k]:  # plain code: the fragment is held whole, its 16 registers contiguous
                    for i in T.Parallel(16):
                        Y[bx, i] = T.if_then_else(smem[i] and M[bx, i], X[bx, i], 0.0) + k

    _, source = lowered(masks, arch=arch)
    kernel = source[source.find('extern "C" __global__'):]
    assert "ushort" not in kernel and "bool" in kernel
