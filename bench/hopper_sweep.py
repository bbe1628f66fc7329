"""Tile and schedule variants of the GEMM and FlashAttention examples on the H200, side by side
with cuBLAS / cuDNN in the same run (the "best hand-annotated variant" of issue 5).

    python bench/hopper_sweep.py [--only gemm|attention] [--cluster]
    python bench/hopper_sweep.py --only gemm --pick 0,3,7 --together --size 8192   # head to head
"""

import argparse
import sys

import torch

from rows_attention import attention_inputs
from bench_common import compile_timed, example, side_by_side

GEMM_VARIANTS = [  # (block_M, block_N, block_K, stages, threads, panel, pass configs); panel 0 = planner's
    (128, 256, 64, 4, 256, 0, None),
    (128, 256, 64, 4, 256, 0, {"tl.disable_tma_store": True}),
    (128, 256, 64, 4, 256, 0, {"tl.enable_persistent": True}),
    (128, 256, 64, 4, 256, 0, {"tl.disable_wgmma_overlap": True}),
    (128, 256, 64, 4, 256, 16, None),
    (256, 128, 64, 4, 256, 0, None),
    (128, 256, 64, 4, 256, 8, {"tl.disable_warp_specialized": True}),
    (128, 256, 64, 4, 256, 0, {"tl.enable_cluster_multicast": True}),
    (128, 256, 64, 4, 256, 0, {"tl.enable_cluster_multicast": True, "tl.disable_wgmma_overlap": True}),
    (128, 256, 64, 3, 256, 0, None),  # four strip buffers fit: the epilogue in one round
    (128, 128, 64, 2, 128, 0, None),  # one consumer warpgroup: two blocks take turns on an SM
    (128, 128, 64, 3, 128, 0, None),  # two blocks, thread stores (no room for a strip)
    (128, 128, 64, 2, 128, 0, {"tl.disable_two_blocks_per_sm": True}),
    (128, 128, 64, 5, 256, 0, None),  # five slots: the chain (one wgmma batch in flight)
    (128, 128, 64, 5, 256, 0, {"tl.disable_wgmma_overlap": True}),
    (256, 192, 64, 3, 256, 0, None),  # 1.5x the tile: 110 flop per operand byte against 85
    (192, 256, 64, 3, 384, 0, None),  # three consumer warpgroups, m64n128 (the 512-thread register cap)
    (128, 128, 64, 2, 128, 16, None), (128, 128, 64, 2, 128, 4, None),  # two blocks: panels of 16 / 4 rows
    (128, 256, 32, 4, 256, 0, None), (128, 128, 32, 4, 128, 0, None),  # block_K = 32: A by the 64-byte swizzle
    (64, 64, 32, 2, 128, 0, None), (64, 64, 32, 2, 128, 0, {"tl.disable_wgmma": True}),  # the example's defaults
    (128, 256, 64, 4, 256, 0, {"tl.enable_stream_k": True}),  # 23: the partial last wave shared along K
]
ATTN_VARIANTS = [  # (block_M, block_N, stages, threads, pass configs)
    (128, 128, 2, 256, None), (128, 128, 2, 256, {"tl.enable_overlap_block": True}),
    (128, 128, 2, 256, {"tl.disable_conditional_mask": True}),
    (128, 128, 3, 256, None),
    (128, 128, 2, 256, {"tl.disable_tma_store": True}), (128, 160, 2, 256, None),
    (128, 128, 2, 256, {"tl.disable_persistent": True}), (128, 128, 2, 256, {"tl.disable_pingpong": True}),
    (128, 128, 2, 256, {"tl.disable_wgmma_overlap": True}),
    (128, 128, 2, 256, {"tl.enable_cluster_multicast": True}),
    (128, 128, 2, 256, {"tl.enable_cluster_multicast": True, "tl.enable_overlap_block": True}),
    (192, 128, 2, 384, None), (128, 256, 2, 256, None),  # three consumer warpgroups; wide key blocks (D64 only)
    (64, 64, 2, 128, None), (64, 128, 2, 128, None),  # one consumer warpgroup: two blocks per SM where they fit
    (64, 64, 2, 128, {"tl.disable_two_blocks_per_sm": True}),
    (128, 128, 2, 256, {"tl.enable_longest_first": True}),  # causal row blocks launched longest first
    (128, 128, 2, 256, {"tl.enable_persistent": True}),  # on attention the same kernels as the default (s8)
    (128, 128, 2, 256, {"tl.fast_div": True}),  # the epilogue's acc_o / logsum as div.full.f32 (IEEE by default)
    (128, 128, 2, 256, {"tl.disable_stream_k": True}),  # 19: whole tiles in the last wave (s10)
    (192, 128, 2, 384, {"tl.disable_stream_k": True}),  # 20: the same for D64's tile
    (128, 128, 2, 256, {"tl.enable_stream_k": True}),  # 21: the tail shared whatever the cost model says
]


def _clustered(cfg) -> bool:
    return bool(cfg and cfg.get("tl.enable_cluster_multicast"))


def _picked(variants, cluster, pick):
    """The variants of this run: by --cluster (the cluster ones run as a step of their own, since a
    protocol error hangs) or, with --pick, exactly the listed indices."""
    if pick is not None:
        return [variants[i] for i in pick]
    return [v for v in variants if _clustered(v[-1]) == cluster]


def run_case(title, flops, ref_name, ref_fn, candidates, check, together, per_round=3):
    """Build every candidate (label, build -> callable), check it, and time it against the reference:
    one at a time in turns with the reference, or, with ``together``, all candidates and the
    reference in turns in one measurement (their medians are then directly comparable)."""
    print(f"{title} ({'all variants' if together else 'each variant'} timed in turns with {ref_name})",
          flush=True)
    built = []
    for label, build in candidates:
        try:
            fn, secs = build()
            built.append((label, fn, f"err {check(fn()):.1e} compile {secs:.2f}s"))
        except Exception as exc:
            print(f"{label}: ERROR {type(exc).__name__}: {str(exc)[:200]}", flush=True)
    groups = [built] if together else [[b] for b in built]
    for group in groups:
        fns = {label: fn for label, fn, _ in group}
        ms = side_by_side({**fns, ref_name: ref_fn}, rounds=15 if together else 9, per_round=per_round)
        ref = flops / ms[ref_name] / 1e9
        for label, _, note in group:
            tf = flops / ms[label] / 1e9
            print(f"{label}: {tf:.0f} TFLOP/s ({tf / ref:.2f}x of {ref_name} {ref:.0f}) {note}", flush=True)


def gemm_sweep(cluster=False, pick=None, together=False, sizes=(4096, 8192), dtype="float16"):
    ex = example("gemm/gemm.py")
    for size in sizes:
        a = torch.randn(size, size, device="cuda", dtype=getattr(torch, dtype))
        b = torch.randn(size, size, device="cuda", dtype=getattr(torch, dtype))
        ref = a.double() @ b.double()

        def check(c):
            return ((c.double() - ref).norm() / ref.norm()).item()

        def build(bm, bn, bk, st, th, panel, cfg):
            kernel, secs = compile_timed(ex.gemm, size, size, size, dtype=dtype, block_M=bm, block_N=bn,
                                         block_K=bk, num_stages=st, threads=th, panel_size=panel, pass_configs=cfg)
            return (lambda: kernel(a, b)), secs

        candidates = [(f"  {v[0]}x{v[1]}x{v[2]} s{v[3]} t{v[4]} panel{v[5]} {v[6] or ''}",
                       lambda v=v: build(*v)) for v in _picked(GEMM_VARIANTS, cluster, pick)]
        run_case(f"gemm {dtype} {size}^3", 2 * size ** 3, "cuBLAS", lambda: torch.matmul(a, b), candidates, check,
                 together)



def attention_sweep(cluster=False, pick=None, together=False, cases=None):
    from torch.nn.attention import SDPBackend

    ex = example("attention/flash_attention.py")
    for B, H, S, D, causal in cases or ((8, 16, 4096, 128, False), (8, 16, 4096, 128, True), (8, 16, 8192, 64, False)):
        q, k, v, sdpa = attention_inputs(B, H, S, D, causal)
        cudnn_call = sdpa(SDPBackend.CUDNN_ATTENTION)
        ref = cudnn_call().transpose(1, 2).float()

        def check(o):
            return (o.float() - ref).abs().max().item()

        def build(bm, bn, st, th, cfg):
            kernel, secs = compile_timed(ex.flash_attention, B, H, S, D, causal, block_M=bm, block_N=bn,
                                         num_stages=st, threads=th, pass_configs=cfg)
            return (lambda: kernel(q, k, v)), secs

        candidates = [(f"  {v[0]}x{v[1]} s{v[2]} t{v[3]} {v[4] or ''}", lambda v=v: build(*v))
                      for v in _picked(ATTN_VARIANTS, cluster, pick)]
        run_case(f"attn B{B} H{H} S{S} D{D} causal={causal}", 4 * B * H * S * S * D / (2 if causal else 1),
                 "cuDNN", cudnn_call, candidates, check, together, per_round=2)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=["gemm", "attention"])
    parser.add_argument("--cluster", action="store_true",
                        help="only the tl.enable_cluster_multicast variants (a cluster protocol error hangs: "
                             "bench/h200_session.sh runs them as a step of their own)")
    parser.add_argument("--pick", type=lambda s: [int(i) for i in s.split(",")],
                        help="comma-separated indices into GEMM_VARIANTS / ATTN_VARIANTS (cluster ones included)")
    parser.add_argument("--together", action="store_true",
                        help="time all picked variants and the reference in turns in one measurement")
    parser.add_argument("--size", type=int, action="append", help="GEMM size (repeatable; default 4096 and 8192)")
    parser.add_argument("--dtype", choices=["float16", "bfloat16"], default="float16", help="GEMM operand dtype")
    parser.add_argument("--causal", choices=["yes", "no"], help="only the causal / non-causal attention cases")
    args = parser.parse_args()
    if args.only in (None, "gemm"):
        gemm_sweep(args.cluster, args.pick, args.together, tuple(args.size or (4096, 8192)), args.dtype)
    if args.only in (None, "attention"):
        cases = [c for c in ((8, 16, 4096, 128, False), (8, 16, 4096, 128, True), (8, 16, 8192, 64, False))
                 if args.causal is None or c[-1] == (args.causal == "yes")]
        attention_sweep(args.cluster, args.pick, args.together, cases)
    return 0


if __name__ == "__main__":
    sys.exit(main())
