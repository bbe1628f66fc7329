"""T.gemm with an fp16 accumulator (TileLang's ``accum_dtype=float16``) against the same tiles with
an fp32 one and cuBLAS (torch.matmul, fp32 accumulate): fp16 in, fp16 out, timed in turns
(bench_common.side_by_side, medians of CUDA events), each checked against float64 first.

    python bench/fp16_accumulate.py [--sizes 4096,8192]

Until stop 64 an fp16 accumulator sent T.gemm to the scalar FMA path on every arch (no mma.sync or
wgmma form was chosen for it); it now takes mma.sync's and wgmma's ``.f16`` forms. The floor is
the fp32-accumulating one: 2 M N K / ~790 TFLOP/s dense on the H200 (0.17 ms at 4096^3); fp16
accumulation halves the accumulator registers, not the tensor cores' rate on Hopper.
"""

import sys
from pathlib import Path

import torch

from bench_common import AMPERE, square_sizes, turns_header, turns_table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "backends" / "cuda" / "tests"))

TILES = dict(bm=128, bn=256, bk=64, stages=4, threads=256)


def main():
    import kernels
    import tilelang_core as tl
    import tilelang_core.language as T

    sizes = square_sizes(__doc__.splitlines()[0])
    turns_header(36)
    for size in sizes:
        M = N = K = size
        a = torch.randn(M, K, device="cuda", dtype=torch.float16) / 4
        b = torch.randn(K, N, device="cuda", dtype=torch.float16) / 4
        ref = a.double() @ b.double()
        variants = {
            "T.gemm fp16 acc, default (wgmma)": (T.float16, None),
            "T.gemm fp32 acc, default (wgmma)": (T.float32, None),
            "T.gemm fp16 acc, mma.sync + cp.async": (T.float16, AMPERE),
            "T.gemm fp32 acc, mma.sync + cp.async": (T.float32, AMPERE),
        }
        fns, errs = {}, {}
        for name, (acc, configs) in variants.items():
            kernel = tl.compile(kernels.make_gemm(M, N, K, accum_dtype=acc, **TILES), target="cuda",
                                pass_configs=configs)
            c = torch.empty(M, N, device="cuda", dtype=torch.float16)
            kernel(a, b, c)
            errs[name] = ((c.double() - ref).norm() / ref.norm()).item()
            fns[name] = (lambda k=kernel, c=c: k(a, b, c))
        fns["cuBLAS (torch.matmul)"] = lambda: torch.matmul(a, b)
        errs["cuBLAS (torch.matmul)"] = ((torch.matmul(a, b).double() - ref).norm() / ref.norm()).item()
        turns_table(size, fns, errs, 2 * M * N * K, "cuBLAS (torch.matmul)", 36)


if __name__ == "__main__":
    main()
