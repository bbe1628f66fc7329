"""The Ampere-class GEMM path on the H200 (issue 4): ldmatrix + mma.sync + cp.async pipeline, i.e.
the GEMM example on cuda:sm_90a with wgmma and warp specialization turned off, for a few tile
configurations, next to cuBLAS (torch.matmul) in the same run.   python bench/ampere_gemm.py

Each case is checked against torch in float64 (relative Frobenius error) before it is timed;
times are medians of CUDA-event timings after warm-up (cuda_bench.bench). About a minute.
"""

import torch

from cuda_bench import bench, compile_timed, example

PASS_CONFIGS = {"tl.disable_wgmma": True, "tl.disable_warp_specialized": True}
#: (block_M, block_N, block_K, num_stages, threads): 64x64 warp tiles on 8 warps (128x256, 256x128)
#: or 4 warps (128x128); BK=64 halves the barriers per FLOP
CONFIGS = [(128, 256, 32, 3, 256), (128, 256, 64, 4, 256), (256, 128, 64, 3, 256), (128, 128, 32, 4, 128)]
SIZES = (4096, 8192)


def main():
    ex = example("gemm/gemm.py")
    header = ["size", "tile (MxNxK/stages/threads)", "rel err", "TFLOP/s", "cuBLAS", "ratio", "compile s"]
    rows = []
    print(" | ".join(header), flush=True)
    for size in SIZES:
        a = torch.randn(size, size, device="cuda", dtype=torch.float16)
        b = torch.randn(size, size, device="cuda", dtype=torch.float16)
        ref = a.double() @ b.double()
        flops = 2 * size ** 3
        cublas = flops / bench(lambda: torch.matmul(a, b)) / 1e9
        for bm, bn, bk, stages, threads in CONFIGS:
            kernel, secs = compile_timed(ex.gemm, size, size, size, block_M=bm, block_N=bn, block_K=bk,
                                         num_stages=stages, threads=threads, pass_configs=PASS_CONFIGS)
            c = kernel(a, b)
            err = ((c.double() - ref).norm() / ref.norm()).item()
            ours = flops / bench(lambda: kernel(a, b)) / 1e9
            rows.append([f"{size}^3", f"{bm}x{bn}x{bk}/{stages}/{threads}", f"{err:.1e}", f"{ours:.0f}",
                         f"{cublas:.0f}", f"{ours / cublas:.2f}x", f"{secs:.1f}"])
            print(" | ".join(rows[-1]), flush=True)
    print()
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    for r in [header] + rows:
        print("  ".join(str(x).ljust(w) for x, w in zip(r, widths)))


if __name__ == "__main__":
    main()
