"""Split-K GEMM: each of `split_k` blocks along z reduces one slice of K and adds its partial tile
into C with atomic_add (C is float32 and must start at zero).

    python examples/gemm/gemm_splitk.py [--m 256 --n 200 --k 1000 --split-k 4]
"""

import torch

import tilelang_core as tilelang
import tilelang_core.language as T
from tilelang_core.testing.examples import example_main


@tilelang.jit
def gemm_splitk(M, N, K, split_k=4, block_M=64, block_N=64, block_K=32, threads=128, dtype="float16"):
    # Each split covers a whole number of K tiles; the last may run past K (copies read zeros there).
    k_tiles = (K + block_K * split_k - 1) // (block_K * split_k)

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), split_k, threads=threads) as (bx, by, bz):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(C_local)
            for ko in T.Pipelined(k_tiles, num_stages=2):
                k0 = (bz * k_tiles + ko) * block_K
                T.copy(A[by * block_M, k0], A_shared)
                T.copy(B[k0, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.atomic_add(C[by * block_M, bx * block_N], C_local)

    return main


def check(M, N, K, split_k=4, device="cpu", **tiles) -> float:
    a = torch.randn(M, K, dtype=torch.float16, device=device)
    b = torch.randn(K, N, dtype=torch.float16, device=device)
    c = torch.zeros(M, N, dtype=torch.float32, device=device)
    gemm_splitk(M, N, K, split_k, **tiles)(a, b, c)
    ref = a.cpu().double() @ b.cpu().double()
    return ((c.cpu().double() - ref).norm() / ref.norm()).item()


if __name__ == "__main__":
    example_main(check, sizes={"M": 256, "N": 200, "K": 1000, "split_k": 4}, tolerance=1e-4,
                 label="split-K gemm")
