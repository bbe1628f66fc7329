"""Elementwise: C = alpha * A + B, with a fused cast, over a 2-D tensor of any shape.

    python examples/elementwise/scale_add.py [--m 1000 --n 777 --alpha 0.5]
"""

import torch

import tilelang_core as tilelang
import tilelang_core.language as T
from tilelang_core.testing.examples import example_main


@tilelang.jit(out_idx=[-1])
def scale_add(M, N, alpha, block_M=32, block_N=128, dtype="float32", threads=128):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                row = by * block_M + i
                col = bx * block_N + j
                if row < M and col < N:
                    C[row, col] = T.cast(alpha * T.cast(A[row, col], "float32") + T.cast(B[row, col], "float32"),
                                         dtype)

    return main


def check(M, N, alpha=0.5, dtype=torch.float32, device="cpu", **kw) -> float:
    a = torch.randn(M, N, dtype=dtype, device=device)
    b = torch.randn(M, N, dtype=dtype, device=device)
    c = scale_add(M, N, alpha, dtype=str(dtype).split(".")[-1], **kw)(a, b)
    ref = alpha * a.cpu().double() + b.cpu().double()
    return ((c.cpu().double() - ref).norm() / ref.norm()).item()


if __name__ == "__main__":
    example_main(check, sizes={"M": 1000, "N": 777, "alpha": 0.5}, tolerance=1e-6, label="scale_add")
