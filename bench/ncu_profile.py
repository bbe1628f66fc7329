"""Our GEMM and FlashAttention next to cuBLAS / cuDNN under Nsight Compute: where the time goes.

Each kernel runs once inside an NVTX range named ``prof``, after warm-up outside it, so that
``--nvtx-include prof/`` profiles exactly those launches:

    ncu --clock-control none --nvtx --nvtx-include "prof/" --section SpeedOfLight \\
        --section ComputeWorkloadAnalysis --section WarpStateStats python3 bench/ncu_profile.py [gemm|attention|attnbwd|attnbwd-ours|fp8block|fp8block-ours|ampere|ampere-gemm-128x256x64/4/256 ...]

(``--clock-control none``: the device's notes say to leave the clocks alone; ncu's default locks
them to base, which is not the speed the benchmarks see.) Without ncu the script only checks
that every kernel runs.
"""

import sys

import torch

from bench_common import AMPERE, compile_timed, example
from rows_attention import attention_inputs, attention_lse


def profiled(name, fn, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push("prof")
    torch.cuda.nvtx.range_push(name)
    fn()
    torch.cuda.nvtx.range_pop()
    torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()


def main():
    which = sys.argv[1:] or ["gemm", "attention"]
    if "gemm" in which:
        gemm_cases()
    if "attention" in which:
        attention_cases()
    if "attnbwd" in which or "attnbwd-ours" in which:
        attention_bwd_cases(ours_only="attnbwd-ours" in which)
    if "fp8block" in which or "fp8block-ours" in which:
        fp8_block_cases(ours_only="fp8block-ours" in which)
    if "stream-k" in which or "stream-k-only" in which:
        stream_k_cases(only="stream_k" if "stream-k-only" in which else "")
    if "stream-k-8192" in which:
        stream_k_cases(only="stream_k", size=8192)
    if "persistent-8192" in which:
        stream_k_cases(only="persistent", size=8192)
    if "ampere" in which or "ampere-causal" in which:
        ampere_attention_cases(causal_only="ampere-causal" in which)
    # one kernel per case, for NCU_SOURCE (its CSV export reads one kernel per report)
    for case in which:
        parts = case.split("-")
        if len(parts) == 3 and parts[0] == "ampere" and parts[1] in ("causal", "full"):
            ampere_attention_cases(causal_only=parts[1] == "causal", full_only=parts[1] == "full",
                                   kernels=(parts[2],))
        if case.startswith("ampere-gemm-"):  # e.g. ampere-gemm-128x256x64/4/256 (bench/ampere_gemm.py's tiles)
            ampere_gemm_case(case[len("ampere-gemm-"):])
    print(f"profiled: {', '.join(which)}")
    return 0


def gemm_cases():
    """8192^3 fp16: the default schedule, the one that waits for each wgmma batch, and cuBLAS."""
    gemm = example("gemm/gemm.py")
    size = 8192
    a, b = (torch.randn(size, size, device="cuda", dtype=torch.float16) for _ in range(2))
    for label, configs in (("ours_gemm_8192", None),
                           ("ours_gemm_8192_no_overlap", {"tl.disable_wgmma_overlap": True})):
        kernel, _ = compile_timed(gemm.gemm, size, size, size, block_M=128, block_N=256, block_K=64, num_stages=4,
                                  threads=256, pass_configs=configs)
        profiled(label, lambda: kernel(a, b))
    profiled("cublas_gemm_8192", lambda: torch.matmul(a, b))


def ampere_gemm_case(tile, size=8192):
    """The mma.sync GEMM at one tile (``128x256x64/4/256``), 8192^3 fp16."""
    from ampere_gemm import parse_config

    bm, bn, bk, stages, threads = parse_config(tile)
    gemm = example("gemm/gemm.py")
    a, b = (torch.randn(size, size, device="cuda", dtype=torch.float16) for _ in range(2))
    kernel, _ = compile_timed(gemm.gemm, size, size, size, block_M=bm, block_N=bn, block_K=bk, num_stages=stages,
                              threads=threads, pass_configs=AMPERE)
    profiled(f"ampere_gemm_{bm}x{bn}x{bk}_{stages}_{threads}", lambda: kernel(a, b))


def stream_k_cases(only="", size=4096):
    """128x256 fp16 tiles (512 on 132 SMs at 4096^3, 2048 at 8192^3): one CTA per tile, the
    persistent walk without a tail split, and stream-K forced; ``only``: one of the last two
    ("stream-k-only" / "stream-k-8192": stream-K, "persistent-8192": the plain walk), for source
    counters, which are read one kernel per report."""
    gemm = example("gemm/gemm.py")
    a, b = (torch.randn(size, size, device="cuda", dtype=torch.float16) for _ in range(2))
    cases = {f"ours_gemm_{size}": {"tl.disable_stream_k": True},
             f"ours_gemm_{size}_persistent": {"tl.enable_persistent": True, "tl.disable_stream_k": True},
             f"ours_gemm_{size}_stream_k": {"tl.enable_stream_k": True}}
    if only:
        cases = {label: cfg for label, cfg in cases.items() if label.endswith(only)}
    for label, configs in cases.items():
        kernel, _ = compile_timed(gemm.gemm, size, size, size, block_M=128, block_N=256, block_K=64, num_stages=4,
                                  threads=256, pass_configs=configs)
        profiled(label, lambda: kernel(a, b))


def attention_cases():
    from torch.nn.attention import SDPBackend

    attention = example("attention/flash_attention.py")
    B, H, S, D = 8, 16, 4096, 128
    for causal in (False, True):
        q, k, v, sdpa = attention_inputs(B, H, S, D, causal)
        tag = "causal" if causal else "full"
        # the overlap block: every exp under P V in the SASS, yet 3-5% slower (bench/NOTES.md)
        for label, configs in ((f"ours_attn_{tag}", None), (f"ours_attn_{tag}_overlap_block",
                                                             {"tl.enable_overlap_block": True})):
            fa, _ = compile_timed(attention.flash_attention, B, H, S, D, causal, block_M=128, block_N=128,
                                  num_stages=2, threads=256, pass_configs=configs)
            profiled(label, lambda: fa(q, k, v))

        profiled(f"cudnn_attn_{tag}", sdpa(SDPBackend.CUDNN_ATTENTION))


def attention_bwd_cases(ours_only=False):
    """FlashAttention backward, B8 H16 S4096 D128, not causal: the bench's warp-specialized tile
    (64x128, 2 stages, 256 threads, global stats) next to cuDNN's backward. Only the main kernel is
    inside the range (delta and the zeroed dQ are made before it), so ``attnbwd-ours`` (that kernel
    alone) serves source counters, which are read one kernel per report."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    ex = example("attention/flash_attention_bwd.py")
    B, H, S, D = 8, 16, 4096, 128
    q, k, v, do = (torch.randn(B, S, H, D, device="cuda", dtype=torch.float16) for _ in range(4))
    qt, kt, vt = (x.transpose(1, 2).detach().requires_grad_() for x in (q, k, v))
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        out = torch.nn.functional.scaled_dot_product_attention(qt, kt, vt)
    o = out.detach().transpose(1, 2).contiguous()
    lse = attention_lse(q, k, False)
    delta = ex.flash_bwd_delta(B, H, S, D)(o, do)
    dq = torch.zeros(B, S, H, D, dtype=torch.float32, device="cuda")
    bwd = ex.flash_bwd(B, H, S, D, False, block_M=64, block_N=128, num_stages=2, threads=256, stats="global")
    profiled("ours_attn_bwd", lambda: bwd(q, k, v, do, lse, delta, dq))
    if not ours_only:
        profiled("cudnn_attn_bwd",
                 lambda: torch.autograd.grad(out, (qt, kt, vt), do.transpose(1, 2), retain_graph=True))


def fp8_block_cases(ours_only=False, size=4096):
    """FP8 block-scaled GEMM 4096^3 at the bench's best tile (128x128, 2 stages, two slabs) next to
    our unscaled e4m3 GEMM and torch._scaled_mm per tensor (``fp8block-ours``: ours alone)."""
    bs = example("fp8/blockscaled_gemm.py")
    a, sa = bs.quantize_1x128(torch.randn(size, size, device="cuda"))
    b, sb = bs.quantize_128x128(torch.randn(size, size, device="cuda"))
    kernel, _ = compile_timed(bs.blockscaled_gemm, size, size, size, block_M=128, block_N=128, num_stages=2,
                              threads=256, slabs=2)
    profiled("ours_fp8block", lambda: kernel(a, b, sa, sb))
    if ours_only:
        return
    plain, _ = compile_timed(example("gemm/gemm.py").gemm, size, size, size, False, True, dtype="float8_e4m3fn",
                             out_dtype="bfloat16", block_M=128, block_N=256, block_K=128, num_stages=4, threads=256)
    profiled("ours_fp8_unscaled", lambda: plain(a, b))
    one = torch.ones((), device="cuda")
    profiled("scaled_mm_tensor", lambda: torch._scaled_mm(a, b.T, scale_a=one, scale_b=one, out_dtype=torch.bfloat16))


def ampere_attention_cases(causal_only=False, full_only=False, kernels=("ours", "flash")):
    """The mma.sync path (issue 4: causal at 0.98x of SDPA flash) next to SDPA flash, causal and
    not, S4096 D128 with the bench's 128x64 / 2 stages / 4 warps tile (cases ``ampere-causal-ours``,
    ``ampere-full-flash``, ...: one kernel alone)."""
    from torch.nn.attention import SDPBackend

    attention = example("attention/flash_attention.py")
    B, H, S, D = 8, 16, 4096, 128
    for causal in (True,) if causal_only else (False,) if full_only else (False, True):
        tag = "causal" if causal else "full"
        q, k, v, sdpa = attention_inputs(B, H, S, D, causal)
        if "ours" in kernels:
            fa, _ = compile_timed(attention.flash_attention, B, H, S, D, causal, block_M=128, block_N=64,
                                  num_stages=2, threads=128, pass_configs=AMPERE)
            profiled(f"ours_mma_sync_attn_{tag}", lambda: fa(q, k, v))
        if "flash" in kernels:
            profiled(f"flash_attn_{tag}", sdpa(SDPBackend.FLASH_ATTENTION))


if __name__ == "__main__":
    sys.exit(main())
