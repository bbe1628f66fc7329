"""Row softmax: Y[i, :] = exp(X[i, :] - max_j X[i, j]) / sum_j exp(...), computed in float32.

Each block owns `block_M` whole rows (N is a compile-time constant), so a row is reduced in one
tile; the rows of the last block may run past M (its loads read zeros, its stores are skipped).

    python examples/softmax/softmax.py [--m 1000 --n 300]
"""

import torch

import tilelang_core as tilelang
import tilelang_core.language as T
from tilelang_core.testing.examples import example_main


@tilelang.jit(out_idx=[-1])
def softmax(M, N, block_M=8, dtype="float16", threads=128):
    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            x = T.alloc_fragment((block_M, N), "float32")
            row_max = T.alloc_fragment((block_M,), "float32")
            row_sum = T.alloc_fragment((block_M,), "float32")
            T.copy(X[bx * block_M, 0], x)
            T.reduce_max(x, row_max, dim=1)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = T.exp(x[i, j] - row_max[i])
            T.reduce_sum(x, row_sum, dim=1)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = x[i, j] / row_sum[i]
            T.copy(x, Y[bx * block_M, 0])

    return main


def check(M, N, dtype=torch.float16, device="cpu", **kw) -> float:
    x = torch.randn(M, N, dtype=dtype, device=device) * 3
    y = softmax(M, N, dtype=str(dtype).split(".")[-1], **kw)(x)
    ref = torch.softmax(x.cpu().double(), dim=1)
    return ((y.cpu().double() - ref).norm() / ref.norm()).item()


if __name__ == "__main__":
    example_main(check, sizes={"M": 1000, "N": 300}, tolerance=1e-3, label="softmax")
