"""TileLang's safe memory access in T.Parallel loops on the cpu backend: a global load past a
tensor's end reads 0 and a global store past it is skipped (the GPU backends do the same)."""

import torch

import tilelang_core.language as T
from cpu_harness import compile_cpu, rand




def test_ragged_parallel_tile_neither_reads_nor_writes_past_the_end():
    N, block = 70, 32  # the third block overhangs by 26 elements
    storage = torch.full((N + 64,), -5.0)
    x = storage[:N]
    x.copy_(rand((N,), torch.float32, 2))
    y_storage = torch.full((N + 64,), 7.0)
    y = y_storage[:N]

    @T.prim_func
    def scale(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=32) as b:
            for i in T.Parallel(block):
                k = b * block + i  # a bound value, as TileLang kernels write them
                Y[k] = X[k] * 2.0 + 1.0

    compile_cpu(scale)(x, y)
    torch.testing.assert_close(y, x * 2 + 1)
    assert torch.all(y_storage[N:] == 7.0)  # nothing written past Y


def test_ragged_reads_give_zero_in_a_reduction():
    N, K, bK = 5, 70, 32

    @T.prim_func
    def rowsum(A: T.Tensor((N, K), "float32"), Out: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=32):
            a = T.alloc_fragment((N, bK), "float32")
            s = T.alloc_fragment((N,), "float32")
            total = T.alloc_fragment((N,), "float32")
            T.clear(total)
            for k in T.serial(T.ceildiv(K, bK)):
                for i, j in T.Parallel(N, bK):
                    a[i, j] = A[i, k * bK + j]  # past column K: 0, not the next row
                T.reduce_sum(a, s, dim=1)
                for i in T.Parallel(N):
                    total[i] = total[i] + s[i]
            T.copy(total, Out)

    a = rand((N, K), torch.float32, 4)
    out = torch.zeros(N)
    compile_cpu(rowsum)(a, out)
    torch.testing.assert_close(out.double(), a.double().sum(1), rtol=1e-5, atol=1e-5)
