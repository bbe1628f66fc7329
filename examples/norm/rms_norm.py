"""RMSNorm: Y[i, :] = X[i, :] / sqrt(mean_j X[i, j]^2 + eps) * W, computed in float32.

    python examples/norm/rms_norm.py [--m 1000 --n 384]
"""

import torch

import tilelang_core as tilelang
import tilelang_core.language as T
from tilelang_core.testing.examples import example_main


@tilelang.jit(out_idx=[-1])
def rms_norm(M, N, eps=1e-6, block_M=4, dtype="float16", threads=128):
    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            x = T.alloc_fragment((block_M, N), "float32")
            sq = T.alloc_fragment((block_M, N), "float32")
            w = T.alloc_shared((N,), dtype)
            sum_sq = T.alloc_fragment((block_M,), "float32")
            T.copy(X[bx * block_M, 0], x)
            T.copy(W, w)
            for i, j in T.Parallel(block_M, N):
                sq[i, j] = x[i, j] * x[i, j]
            T.reduce_sum(sq, sum_sq, dim=1)
            for i in T.Parallel(block_M):
                sum_sq[i] = T.rsqrt(sum_sq[i] / N + eps)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = x[i, j] * sum_sq[i] * w[j]
            T.copy(x, Y[bx * block_M, 0])

    return main


def reference(x, w, eps=1e-6):
    x, w = x.double(), w.double()
    return x * torch.rsqrt(x.pow(2).mean(dim=1, keepdim=True) + eps) * w


def check(M, N, dtype=torch.float16, device="cpu", **kw) -> float:
    x = torch.randn(M, N, dtype=dtype, device=device)
    w = torch.rand(N, dtype=dtype, device=device) + 0.5
    y = rms_norm(M, N, dtype=str(dtype).split(".")[-1], **kw)(x, w)
    ref = reference(x.cpu(), w.cpu())
    return ((y.cpu().double() - ref).norm() / ref.norm()).item()


if __name__ == "__main__":
    example_main(check, sizes={"M": 1000, "N": 384}, tolerance=1e-3, label="rms_norm")
