"""FlashAttention forward with Ampere-class instructions on the H200 (mma.sync + ldmatrix + cp.async:
sm_90a with wgmma and warp specialization off) next to torch SDPA's flash backend, same run.

    python bench/ampere_attention.py          # about a minute: the compiles, then one table

Each case is checked against SDPA in float32 first (max abs error); every tile configuration of a
case and SDPA flash are timed in turns (``side_by_side``: CUDA events, medians). The cp.async
pipeline issues V's copy with K's, one iteration ahead (tilelang_core/simt/transform/
software_pipeline.py: mid-body producers).

Why the 4-warp configurations: with 8 warps on 128 query rows each warp owns 16 rows and reads all
of K and V through ldmatrix, 512 KB of shared memory per 128 keys, as long as the mma.sync work
itself at the shared memory's 128 B/clock; with 4 warps each owns 32 rows and every fragment
feeds two mma.sync, half the traffic per flop (FlashAttention-2's own split).
"""
import argparse

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from bench_common import AMPERE, compile_timed, example, side_by_side

CASES = ((8, 16, 4096, 128, False), (8, 16, 4096, 128, True), (8, 16, 8192, 64, False))
#: (block_M, block_N, num_stages, threads, extra pass configs) per head dim; with EVERY_MASK the
#: causal fill is evaluated in every iteration (without the kit's split_masked_fills)
EVERY_MASK = {"tl.disable_conditional_mask": True}
#: with LONGEST the causal row blocks are launched longest first (the kit's longest_first)
LONGEST = {"tl.enable_longest_first": True}
#: with FAST_DIV the epilogue's acc_o / logsum are div.full.f32 (transform/fast_divide.py; IEEE
#: division is the default since s49, as in TileLang)
FAST_DIV = {"tl.fast_div": True}
#: with PER_THREAD_O each thread stores its own O elements (by default O goes through Q's shared
#: tile for 16-byte row stores: transform/stage_epilogue.py)
PER_THREAD_O = {"tl.disable_staged_epilogue": True}
#: with STAGED_O a causal kernel's O goes through Q's tile too (by default a loop whose trip count
#: depends on the row block keeps the per-thread stores, which measured 3% faster there)
STAGED_O = {"tl.enable_staged_epilogue": True}
#: with SYNC_Q, Q's copy before the loop is synchronous (by default it joins the first cp.async
#: group: the kit's software_pipeline, _async_preloads)
SYNC_Q = {"tl.disable_async_preload": True}
SYNC_Q_PER_THREAD_O = {**SYNC_Q, **PER_THREAD_O}
#: ptxas -O1 (nvcc route): ptxas's default -O3 schedule of the causal loop sits at 255 registers
#: and, depending on the epilogue, issues the softmax's ex2 in runs of 16-20 (bench/NOTES.md, s11)
PTXAS_O1 = {"tl.extra_nvcc_flags": ["-Xptxas", "-O1"], "tl.device_compiler": "nvcc"}
PER_THREAD_O_PTXAS_O1 = {**PER_THREAD_O, **PTXAS_O1}
#: --ab: only the 128x64 tile, Q's copy and O's store each both ways, and ptxas -O1
AB = [(128, 64, 2, 128, extra) for extra in ({}, SYNC_Q, PER_THREAD_O, SYNC_Q_PER_THREAD_O, PTXAS_O1,
                                             PER_THREAD_O_PTXAS_O1)]
#: each variant's label in the table; the causal-only ones change nothing without a causal mask
LABELS = ((EVERY_MASK, " every mask"), (LONGEST, " longest first"), (FAST_DIV, " div.full"),
          (PER_THREAD_O, " per-thread O"), (STAGED_O, " staged O"), (SYNC_Q, " synchronous Q"),
          (SYNC_Q_PER_THREAD_O, " synchronous Q, per-thread O"), (PTXAS_O1, " ptxas -O1"),
          (PER_THREAD_O_PTXAS_O1, " per-thread O, ptxas -O1"))
CAUSAL_ONLY = (EVERY_MASK, LONGEST, STAGED_O)
#: s10 also measured, all slower than 128x64/2/128 and dropped here (bench/NOTES.md): 128x64 with
#: 3 stages, 128x32 with 2 and 3 stages, 128x64 on 8 warps, 64x64, 64x128
CONFIGS = {128: [(128, 128, 2, 256, {}), (128, 64, 2, 128, {}), (128, 64, 2, 128, SYNC_Q),
                 (128, 64, 2, 128, EVERY_MASK), (128, 64, 2, 128, LONGEST), (128, 64, 2, 128, FAST_DIV),
                 (128, 64, 2, 128, PER_THREAD_O), (128, 64, 2, 128, STAGED_O)],
           64: [(128, 128, 2, 256, {}), (128, 64, 2, 128, {}), (128, 128, 2, 128, {})]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--causal-only", action="store_true", help="only the causal case")
    parser.add_argument("--ab", action="store_true", help="D128 only, the 128x64 tile with Q's copy and O's "
                                                         "store each both ways")
    parser.add_argument("--repeat", type=int, default=1, help="time the set this many times (a row each)")
    args = parser.parse_args()
    ex = example("attention/flash_attention.py")
    sdpa = torch.nn.functional.scaled_dot_product_attention
    header = ["case", "tile (MxN/stages/threads)", "max err", "ours TFLOP/s", "SDPA flash", "ours/flash",
              "compile s"]
    print(" | ".join(header), flush=True)
    for B, H, S, D, causal in CASES:
        if (args.causal_only and not causal) or (args.ab and D != 128):
            continue
        q, k, v = (torch.randn(B, S, H, D, device="cuda", dtype=torch.float16) for _ in range(3))
        qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
        ref = sdpa(qt.float(), kt.float(), vt.float(), is_causal=causal).transpose(1, 2)
        flops = 4 * B * H * S * S * D / (2 if causal else 1)
        name = f"attn B{B} H{H} S{S} D{D}{' causal' if causal else ''}"
        built = {}
        for bm, bn, stages, threads, extra in AB if args.ab else CONFIGS[D]:
            if not causal and any(extra is cfg for cfg in CAUSAL_ONLY):
                continue  # a non-causal fill is the same either way (only the ragged block masks)
            kernel, secs = compile_timed(ex.flash_attention, B, H, S, D, causal, block_M=bm, block_N=bn,
                                         num_stages=stages, threads=threads, pass_configs={**AMPERE, **extra})
            err = (kernel(q, k, v).float() - ref).abs().max().item()
            label = f"{bm}x{bn}/{stages}/{threads}" + next((name for cfg, name in LABELS if extra is cfg), "")
            built[label] = (lambda kernel=kernel: kernel(q, k, v)), err, secs

        def flash():
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                sdpa(qt, kt, vt, is_causal=causal)

        for _ in range(args.repeat):
            ms = side_by_side({**{label: fn for label, (fn, _, _) in built.items()}, "flash": flash}, per_round=2)
            theirs = flops / ms["flash"] / 1e9
            for label, (_, err, secs) in built.items():
                ours = flops / ms[label] / 1e9
                print(" | ".join([name, label, f"{err:.1e}", f"{ours:.0f}", f"{theirs:.0f}", f"{ours / theirs:.2f}x",
                                  f"{secs:.2f}"]), flush=True)
                if err > 2e-2:
                    print(f"  ^ max error {err:.1e} is above 2e-2: the kernel is wrong", flush=True)


if __name__ == "__main__":
    main()
