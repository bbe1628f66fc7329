"""Tile and schedule variants of the GEMM and FlashAttention examples on the H200, side by side
with cuBLAS / cuDNN in the same run (the "best hand-annotated variant" of issue 5).

    python bench/hopper_sweep.py [--only gemm|attention]
"""

import argparse
import sys

import torch

from cuda_bench import compile_timed, example, side_by_side

GEMM_VARIANTS = [  # (block_M, block_N, block_K, stages, threads, panel, pass configs); panel 0 = planner's
    (128, 256, 64, 4, 256, 0, None),
    (128, 256, 64, 4, 256, 0, {"tl.disable_tma_store": True}),
    (128, 256, 64, 4, 256, 0, {"tl.enable_persistent": True}),
    (128, 256, 64, 4, 256, 0, {"tl.disable_wgmma_overlap": True}),
    (128, 256, 64, 4, 256, 16, None),
    (256, 128, 64, 4, 256, 0, None),
    (128, 256, 64, 4, 256, 8, {"tl.disable_warp_specialized": True}),
    (128, 256, 64, 4, 256, 0, {"tl.enable_cluster_multicast": True}),
]
ATTN_VARIANTS = [  # (block_M, block_N, stages, threads, pass configs)
    (128, 128, 2, 256, None), (128, 128, 2, 256, {"tl.enable_overlap_block": True}),
    (128, 128, 2, 256, {"tl.enable_conditional_mask": True}),
    (128, 128, 2, 256, {"tl.enable_overlap_block": True, "tl.enable_conditional_mask": True}),
    (128, 128, 2, 256, {"tl.disable_tma_store": True}), (128, 160, 2, 256, None),
    (128, 128, 2, 256, {"tl.enable_persistent": True}), (128, 128, 2, 256, {"tl.disable_pingpong": True}),
    (128, 128, 2, 256, {"tl.disable_wgmma_overlap": True}),
    (128, 128, 2, 256, {"tl.enable_cluster_multicast": True}),
]


def _clustered(cfg) -> bool:
    return bool(cfg and cfg.get("tl.enable_cluster_multicast"))


def gemm_sweep(cluster=False):
    ex = example("gemm/gemm.py")
    for size in (4096, 8192):
        a = torch.randn(size, size, device="cuda", dtype=torch.float16)
        b = torch.randn(size, size, device="cuda", dtype=torch.float16)
        flops = 2 * size ** 3
        print(f"gemm f16 {size}^3 (each variant timed in turns with cuBLAS)", flush=True)
        ref = None
        for bm, bn, bk, st, th, panel, cfg in (v for v in GEMM_VARIANTS if _clustered(v[-1]) == cluster):
            label = f"  {bm}x{bn}x{bk} s{st} t{th} panel{panel} {cfg or ''}"
            try:
                kernel, secs = compile_timed(ex.gemm, size, size, size, block_M=bm, block_N=bn, block_K=bk,
                                             num_stages=st, threads=th, panel_size=panel, pass_configs=cfg)
                c = kernel(a, b)
                if ref is None:
                    ref = a.double() @ b.double()
                err = ((c.double() - ref).norm() / ref.norm()).item()
                ms = side_by_side({"ours": lambda: kernel(a, b), "cublas": lambda: torch.matmul(a, b)})
                tf, cublas = flops / ms["ours"] / 1e9, flops / ms["cublas"] / 1e9
                print(f"{label}: {tf:.0f} TFLOP/s ({tf / cublas:.2f}x of cuBLAS {cublas:.0f}) err {err:.1e} "
                      f"compile {secs:.2f}s", flush=True)
            except Exception as exc:
                print(f"{label}: ERROR {type(exc).__name__}: {str(exc)[:200]}", flush=True)
        del ref


def attention_sweep(cluster=False):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    ex = example("attention/flash_attention.py")
    for B, H, S, D, causal in ((8, 16, 4096, 128, False), (8, 16, 4096, 128, True), (8, 16, 8192, 64, False)):
        q, k, v = (torch.randn(B, S, H, D, device="cuda", dtype=torch.float16) for _ in range(3))
        qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
        flops = 4 * B * H * S * S * D / (2 if causal else 1)
        def cudnn_call():
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)

        print(f"attn B{B} H{H} S{S} D{D} causal={causal} (each variant timed in turns with cuDNN)", flush=True)
        ref = torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=causal).transpose(1, 2)
        for bm, bn, st, th, cfg in (v for v in ATTN_VARIANTS if _clustered(v[-1]) == cluster):
            label = f"  {bm}x{bn} s{st} t{th} {cfg or ''}"
            try:
                kernel, secs = compile_timed(ex.flash_attention, B, H, S, D, causal, block_M=bm, block_N=bn,
                                             num_stages=st, threads=th, pass_configs=cfg)
                o = kernel(q, k, v)
                err = (o.float() - ref.float()).abs().max().item()
                ms = side_by_side({"ours": lambda: kernel(q, k, v), "cudnn": cudnn_call}, per_round=2)
                tf, cudnn = flops / ms["ours"] / 1e9, flops / ms["cudnn"] / 1e9
                print(f"{label}: {tf:.0f} TFLOP/s ({tf / cudnn:.2f}x of cuDNN {cudnn:.0f}) err {err:.1e} "
                      f"compile {secs:.2f}s", flush=True)
            except Exception as exc:
                print(f"{label}: ERROR {type(exc).__name__}: {str(exc)[:200]}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=["gemm", "attention"])
    parser.add_argument("--cluster", action="store_true",
                        help="only the tl.enable_cluster_multicast variants (a cluster protocol error hangs: "
                             "bench/h200_session.sh runs them as a step of their own)")
    args = parser.parse_args()
    if args.only in (None, "gemm"):
        gemm_sweep(args.cluster)
    if args.only in (None, "attention"):
        attention_sweep(args.cluster)
    return 0


if __name__ == "__main__":
    sys.exit(main())
