"""TileLang's hand-written MMA GEMM (its ``example_gemm_intrinsics``: the TensorCoreIntrinEmitter's
ldmatrix / mma.sync macros, T.Parallel tile loads in a 2-stage T.Pipelined loop, 2 x 2 warps of
64 x 64, block_K 32) on TileLang-X, next to the same tile written with T.gemm on the Ampere-class
path (mma.sync + cp.async: what the emitter's instructions allow), T.gemm on the default sm_90a
schedule (wgmma), and cuBLAS (torch.matmul). fp16 in, fp32 accumulate, fp16 out as in the example
(C is float32 here: the emitter kernel of backends/cuda/tests/emitter_kernels.py). All timed in
turns (bench_common.side_by_side, medians of CUDA events); each checked against torch first.

    python bench/hand_written_mma.py [--sizes 4096,8192]

The floor at 4096^3: 137 GFLOP / ~790 TFLOP/s dense fp16 = 0.17 ms (wgmma); mma.sync peaks near
half of that rate on Hopper (bench/mma_sync_ceiling.py), so the emitter's kernel and the Ampere
T.gemm are compared with each other, and the wgmma rows show what T.gemm gives the same GEMM.
"""

import sys
from pathlib import Path

import torch

from bench_common import AMPERE, square_sizes, turns_header, turns_table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "backends" / "cuda" / "tests"))


def main():
    import emitter_kernels as ek
    import kernels
    import tilelang_core as tl
    import tilelang_core.language as T

    def t_gemm(M, N, K):  # the emitter example's tile on T.gemm, B stored N x K as there
        return kernels.make_gemm(M, N, K, bm=128, bn=128, bk=32, stages=2, threads=128, out_dtype=T.float32,
                                 trans_b=True)

    sizes = square_sizes(__doc__.splitlines()[0])
    turns_header(34)
    for size in sizes:
        M = N = K = size
        a = torch.randn(M, K, device="cuda", dtype=torch.float16)
        bt = torch.randn(N, K, device="cuda", dtype=torch.float16)
        ref = (a.double() @ bt.double().T)
        variants = {
            "emitter (example), sm_90a default": (ek.emitter_gemm(M, N, K, warp_tiles=(64, 64)), None),
            "emitter (example), cp.async": (ek.emitter_gemm(M, N, K, warp_tiles=(64, 64)), AMPERE),
            "T.gemm 128x128x32 s2, mma.sync": (t_gemm(M, N, K), AMPERE),
            "T.gemm 128x128x32 s2, default": (t_gemm(M, N, K), None),
        }
        fns, errs = {}, {}
        for name, (func, configs) in variants.items():
            kernel = tl.compile(func, target="cuda", pass_configs=configs)
            c = torch.empty(M, N, device="cuda", dtype=torch.float32)
            kernel(a, bt, c)
            errs[name] = ((c.double() - ref).norm() / ref.norm()).item()
            fns[name] = (lambda k=kernel, c=c: k(a, bt, c))
        fns["cuBLAS (torch.matmul)"] = lambda: torch.matmul(a, bt.T)
        errs["cuBLAS (torch.matmul)"] = ((torch.matmul(a, bt.T).double() - ref).norm() / ref.norm()).item()
        turns_table(size, fns, errs, 2 * M * N * K, "cuBLAS (torch.matmul)", 34)


if __name__ == "__main__":
    main()
