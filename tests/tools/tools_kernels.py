"""Kernels for the tools tests. Module level on purpose: autotune workers import them by name."""

import sys
import time
from pathlib import Path

import tilelang_core as tl
import tilelang_core.language as T

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "gemm"))
from gemm import gemm  # noqa: E402  (the GEMM example, lazy style)

SIZE = 128

#: 16 configs: 2 x 2 x 2 x 2
SPACE = {"block_M": [32, 64], "block_N": [32, 64], "block_K": [32, 64], "num_stages": [1, 2]}


def ref_gemm(a, b):
    return a.double() @ b.double()


def tuned_gemm(**options):
    """The GEMM example under @autotune with the 16-config space (fresh tuner per call)."""
    return tl.autotune(configs=SPACE, warmup=1, rep=5, ref_prog=ref_gemm, **options)(gemm)


@tl.jit(out_idx=[-1], target="cpu")
def flaky_gemm(M, N, K, block_M=32, block_N=32, mode="good"):
    """GEMM whose config decides its fate: 'good', 'raise' (factory error), 'hang' (factory never
    returns), 'wrong' (a kernel that only zeroes C: wrong, and faster than any real GEMM)."""
    if mode == "raise":
        raise ValueError(f"tile {block_M}x{block_N} is not supported by this kernel")
    if mode == "hang":
        time.sleep(3600)
    if mode == "wrong":
        @T.prim_func
        def zero(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
                 C: T.Tensor((M, N), "float16")):
            with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=32) as (bx, by):
                C_local = T.alloc_fragment((block_M, block_N), "float32")
                T.clear(C_local)
                T.copy(C_local, C[by * block_M, bx * block_N])
        return zero
    return gemm.fn(M, N, K, block_M=block_M, block_N=block_N, block_K=32, num_stages=1)


@tl.jit(out_idx=[-1], target="cpu")
def scale(N, factor=2.0, block=64):
    """C = A * factor (factor=3.0 plays a kernel with a bug)."""
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = A[bx * block + i] * factor
    return main


@T.prim_func
def add_one(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
    with T.Kernel(1, threads=32) as _:
        for i in T.Parallel(64):
            B[i] = A[i] + 1.0


#: an @autotune function at module level (the CLI compiles it with the given arguments, untuned)
tuned_scale = tl.autotune(configs={"block": [32, 64]}, ref_prog=lambda a: a * 2)(scale)
