"""FlashAttention forward with Ampere-class instructions on the H200 (mma.sync + ldmatrix + cp.async:
sm_90a with wgmma and warp specialization off) next to torch SDPA's flash backend, same run.

    python bench/ampere_attention.py          # about 30 s: three compiles, then the table

Each case is checked against SDPA in float32 first (max abs error); times are medians of
CUDA-event timings. The cp.async pipeline issues V's copy with K's, one iteration ahead
(tilelang_core/simt/transform/software_pipeline.py: mid-body producers).
"""
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from cuda_bench import bench, compile_timed, example

AMPERE = {"tl.disable_wgmma": True, "tl.disable_warp_specialized": True}
CASES = ((8, 16, 4096, 128, False), (8, 16, 4096, 128, True), (8, 16, 8192, 64, False))


def main():
    ex = example("attention/flash_attention.py")
    sdpa = torch.nn.functional.scaled_dot_product_attention
    header = ["case", "max err", "ours TFLOP/s", "SDPA flash", "ours/flash", "compile s"]
    print(" | ".join(header), flush=True)
    for B, H, S, D, causal in CASES:
        kernel, secs = compile_timed(ex.flash_attention, B, H, S, D, causal, block_M=128, block_N=128,
                                     num_stages=2, threads=256, pass_configs=AMPERE)
        q, k, v = (torch.randn(B, S, H, D, device="cuda", dtype=torch.float16) for _ in range(3))
        o = kernel(q, k, v)
        qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
        ref = sdpa(qt.float(), kt.float(), vt.float(), is_causal=causal).transpose(1, 2)
        err = (o.float() - ref).abs().max().item()
        flops = 4 * B * H * S * S * D / (2 if causal else 1)
        ours = flops / bench(lambda: kernel(q, k, v), iters=20) / 1e9
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            flash = flops / bench(lambda: sdpa(qt, kt, vt, is_causal=causal), iters=20) / 1e9
        row = [f"attn B{B} H{H} S{S} D{D}{' causal' if causal else ''}", f"{err:.1e}", f"{ours:.0f}",
               f"{flash:.0f}", f"{ours / flash:.2f}x", f"{secs:.2f}"]
        print(" | ".join(row), flush=True)
        if err > 2e-2:
            print(f"  ^ max error {err:.1e} is above 2e-2: the kernel is wrong", flush=True)


if __name__ == "__main__":
    main()
