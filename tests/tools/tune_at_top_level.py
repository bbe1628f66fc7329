"""A TileLang-style script that tunes at its top level, outside `if __name__ == "__main__":`
(run as a subprocess by test_autotune_scripts.py)."""

import time
import torch
import tilelang_core as tilelang
import tilelang_core.language as T


@tilelang.autotune(configs={"block_M": [16, 32], "block_N": [16, 32]}, ref_prog=lambda a, b: a @ b,
                   atol=1e-3, rtol=1e-3, warmup=1, rep=2)
@tilelang.jit(out_idx=[-1], target="cpu")
def matmul(M, N, K, block_M=32, block_N=32):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float32"), B: T.Tensor((K, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=32) as (bx, by):
            A_s = T.alloc_shared((block_M, K), "float32")
            B_s = T.alloc_shared((K, block_N), "float32")
            C_f = T.alloc_fragment((block_M, block_N), "float32")
            T.copy(A[by * block_M, 0], A_s)
            T.copy(B[0, bx * block_N], B_s)
            T.gemm(A_s, B_s, C_f, clear_accum=True)
            T.copy(C_f, C[by * block_M, bx * block_N])
    return main


t0 = time.time()
kernel = matmul(64, 64, 32)   # at the top level, as TileLang's scripts tune
a, b = torch.randn(64, 32), torch.randn(32, 64)
torch.testing.assert_close(kernel(a, b), a @ b, atol=1e-3, rtol=1e-3)
print("TUNED", kernel.config, f"{time.time() - t0:.1f}s")
