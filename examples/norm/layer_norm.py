"""LayerNorm: Y = (X - mean) / sqrt(var + eps) * W + B over each row, computed in float32.

    python examples/norm/layer_norm.py [--m 1000 --n 384]
"""

import torch

import tilelang_core as tilelang
import tilelang_core.language as T
from tilelang_core.testing.examples import example_main


@tilelang.jit(out_idx=[-1])
def layer_norm(M, N, eps=1e-5, block_M=4, dtype="float16", threads=128):
    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype),
             Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            x = T.alloc_fragment((block_M, N), "float32")
            centered_sq = T.alloc_fragment((block_M, N), "float32")
            w = T.alloc_shared((N,), dtype)
            b = T.alloc_shared((N,), dtype)
            mean = T.alloc_fragment((block_M,), "float32")
            var = T.alloc_fragment((block_M,), "float32")
            T.copy(X[bx * block_M, 0], x)
            T.copy(W, w)
            T.copy(B, b)
            T.reduce_sum(x, mean, dim=1)
            for i in T.Parallel(block_M):
                mean[i] = mean[i] / N
            for i, j in T.Parallel(block_M, N):
                x[i, j] = x[i, j] - mean[i]
                centered_sq[i, j] = x[i, j] * x[i, j]
            T.reduce_sum(centered_sq, var, dim=1)
            for i in T.Parallel(block_M):
                var[i] = T.rsqrt(var[i] / N + eps)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = x[i, j] * var[i] * w[j] + b[j]
            T.copy(x, Y[bx * block_M, 0])

    return main


def check(M, N, dtype=torch.float16, device="cpu", **kw) -> float:
    x = torch.randn(M, N, dtype=dtype, device=device) + 0.5
    w = torch.randn(N, dtype=dtype, device=device)
    b = torch.randn(N, dtype=dtype, device=device)
    y = layer_norm(M, N, dtype=str(dtype).split(".")[-1], **kw)(x, w, b)
    ref = torch.nn.functional.layer_norm(x.cpu().double(), (N,), w.cpu().double(), b.cpu().double(), eps=1e-5)
    return ((y.cpu().double() - ref).norm() / ref.norm()).item()


if __name__ == "__main__":
    example_main(check, sizes={"M": 1000, "N": 384}, tolerance=1e-3, label="layer_norm")
