"""One kernel of the benchmark table, launched a few times, for Nsight Compute (H200):

    ncu --section SpeedOfLight --section WarpStateStats --launch-skip 3 --launch-count 1 \\
        python bench/ncu_profile.py gemm|attention|attention_d64

(the first launches warm up; the fourth is profiled). Prints nothing of its own but the case.
"""

import sys

import torch

from cuda_bench import compile_timed, example

case = sys.argv[1] if len(sys.argv) > 1 else "gemm"
if case == "gemm":
    size = 8192
    kernel, _ = compile_timed(example("gemm/gemm.py").gemm, size, size, size, block_M=128, block_N=256, block_K=64,
                              num_stages=4, threads=256)
    args = [torch.randn(size, size, device="cuda", dtype=torch.float16) for _ in range(2)]
else:
    S, D = (8192, 64) if case == "attention_d64" else (4096, 128)
    kernel, _ = compile_timed(example("attention/flash_attention.py").flash_attention, 8, 16, S, D, False,
                              block_M=128, block_N=128, num_stages=2, threads=256)
    args = [torch.randn(8, S, 16, D, device="cuda", dtype=torch.float16) for _ in range(3)]
for _ in range(6):
    kernel(*args)
torch.cuda.synchronize()
print(f"profiled: {case}")
