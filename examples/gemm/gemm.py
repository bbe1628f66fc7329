"""GEMM with optional transposed operands, in TileLang's lazy style.

    C[M, N] = op(A) @ op(B),  op(A) = A.T if trans_A (A stored K x M), op(B) = B.T if trans_B

    python examples/gemm/gemm.py [--m 300 --n 200 --k 136] [--trans-a] [--trans-b] [--target auto]
"""

import torch

import tilelang_core as tilelang
import tilelang_core.language as T
from tilelang_core.testing.examples import example_main


@tilelang.jit(out_idx=[-1])
def gemm(M, N, K, trans_A=False, trans_B=False, block_M=64, block_N=64, block_K=32, num_stages=2,
         threads=128, dtype="float16", accum_dtype="float32", panel_size=0, out_dtype=None):
    out_dtype = out_dtype or dtype  # e.g. float8_e4m3fn operands, float16 out
    A_shape = (K, M) if trans_A else (M, K)
    B_shape = (N, K) if trans_B else (K, N)
    A_tile = (block_K, block_M) if trans_A else (block_M, block_K)
    B_tile = (block_N, block_K) if trans_B else (block_K, block_N)

    @T.prim_func
    def main(A: T.Tensor(A_shape, dtype), B: T.Tensor(B_shape, dtype), C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            # blocks walk the grid in panels of panel_size block rows: neighbours share A and B in L2
            T.use_swizzle(panel_size=max(panel_size, 1), enable=panel_size > 0)
            A_shared = T.alloc_shared(A_tile, dtype)
            B_shared = T.alloc_shared(B_tile, dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                if trans_A:
                    T.copy(A[ko * block_K, by * block_M], A_shared)
                else:
                    T.copy(A[by * block_M, ko * block_K], A_shared)
                if trans_B:
                    T.copy(B[bx * block_N, ko * block_K], B_shared)
                else:
                    T.copy(B[ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_A=trans_A, transpose_B=trans_B)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def reference(a, b, trans_A, trans_B):
    a = a.double().T if trans_A else a.double()
    b = b.double().T if trans_B else b.double()
    return a @ b


def check(M, N, K, trans_A=False, trans_B=False, dtype=torch.float16, device="cpu", **tiles) -> float:
    """Relative error of the kernel against torch in float64, on fresh random data."""
    a = torch.randn(*((K, M) if trans_A else (M, K)), dtype=dtype, device=device)
    b = torch.randn(*((N, K) if trans_B else (K, N)), dtype=dtype, device=device)
    kernel = gemm(M, N, K, trans_A, trans_B, dtype=str(dtype).split(".")[-1], **tiles)
    c = kernel(a, b)
    ref = reference(a.cpu(), b.cpu(), trans_A, trans_B)
    return ((c.cpu().double() - ref).norm() / ref.norm()).item()


if __name__ == "__main__":
    example_main(check, sizes={"M": 300, "N": 200, "K": 136}, flags=("trans_A", "trans_B"),
                 tolerance=1e-3, label="gemm")
