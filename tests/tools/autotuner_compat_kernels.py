"""Kernels for test_autotuner_compat.py. Module level on purpose: autotune workers import them by
name (an eager kernel travels to them as its name plus shape/dtype stand-ins for its tensors)."""

import tilelang_core as tl
import tilelang_core.language as T

#: tuned eager kernel: every config computes the same thing, the rows per block differ
ROW_CONFIGS = [{"blk_m": 8}, {"blk_m": 16}]


@tl.autotune(configs=ROW_CONFIGS, warmup=1, rep=3, ref_prog=lambda x: x.double() * 2 + 1,
             progress=False)
@tl.jit(target="cpu")
def twice_plus_one(X, blk_m, threads=32):
    """Y = 2 X + 1 with X of any (M, N) float32 shape (rows past M guarded)."""
    M, N = T.const("M, N")
    X: T.Tensor((M, N), T.float32)
    Y = T.empty((M, N), T.float32)
    with T.Kernel(T.ceildiv(M, blk_m), threads=threads) as bx:
        for i, j in T.Parallel(blk_m, N):
            if bx * blk_m + i < M:
                Y[bx * blk_m + i, j] = X[bx * blk_m + i, j] * 2.0 + 1.0
    return Y


def make_scaled_add(N, alpha):
    """A lazy factory closed over nothing but its arguments: C = A + alpha * B (alpha a scalar
    parameter of the kernel when ``alpha is None``)."""
    def factory(block=32):
        if alpha is None:
            @T.prim_func
            def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"), s: T.float32,
                     C: T.Tensor((N,), "float32")):
                with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
                    for i in T.Parallel(block):
                        if bx * block + i < N:
                            C[bx * block + i] = A[bx * block + i] + s * B[bx * block + i]
            return main

        @T.prim_func
        def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"),
                 C: T.Tensor((N,), "float32")):
            with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
                for i in T.Parallel(block):
                    if bx * block + i < N:
                        C[bx * block + i] = A[bx * block + i] + alpha * B[bx * block + i]
        return main
    return factory
