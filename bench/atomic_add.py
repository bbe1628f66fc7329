"""Vector atomic adds (AtomicAddx2 / x4, tilelang_core/simt/vector_atomic_adds.py) against one atomic per
element (tl.disable_vector_atomics) and torch's ``B += A.sum(0)``, same run, medians of CUDA events.

Split-K's epilogue: K partial (M, N) tiles added into B from registers, each block one (bm, bn) tile
of one partial. Floor: the partials' bytes over HBM bandwidth (the atomics land in L2, which holds B).

    python bench/atomic_add.py
"""
import torch

import tilelang_core as tl
import tilelang_core.language as T
from bench_common import side_by_side

TORCH = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def split_k_epilogue(M, N, K, bm, bn, dtype, threads=256):
    @T.prim_func
    def main(A: T.Tensor((K, M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, bm), T.ceildiv(N, bn), K, threads=threads) as (bx, by, bz):
            acc = T.alloc_fragment((bm, bn), dtype)
            T.copy(A[bz, bx * bm, by * bn], acc)
            T.atomic_add(B[bx * bm, by * bn], acc)

    return main


def main():
    print(f"{torch.cuda.get_device_name()}; split-K epilogue, GB/s of partials read (floor: ~4300)")
    for dtype in ("float32", "float16", "bfloat16"):
        for M, N, K in ((4096, 4096, 8), (8192, 8192, 4), (1024, 4096, 16)):
            func = split_k_epilogue(M, N, K, 64, 128, dtype)
            vector = tl.compile(func, target="cuda")
            scalar = tl.compile(func, target="cuda", pass_configs={"tl.disable_vector_atomics": True})
            assert "AtomicAddx" in vector.get_kernel_source() and "AtomicAddx" not in scalar.get_kernel_source()
            a = torch.randn(K, M, N, device="cuda").to(TORCH[dtype])
            b = torch.zeros(M, N, device="cuda", dtype=TORCH[dtype])
            want = a.double().sum(0)
            vector(a, b)
            err = ((b.double() - want).norm() / want.norm()).item()
            ms = side_by_side({"vector": lambda: vector(a, b), "scalar": lambda: scalar(a, b),
                               "torch": lambda: b.add_(a.sum(0))})
            gbs = {k: a.numel() * a.element_size() / v / 1e6 for k, v in ms.items()}
            print(f"{dtype:8s} M{M} N{N} K{K}: vector {gbs['vector']:.0f}  scalar {gbs['scalar']:.0f}  "
                  f"torch {gbs['torch']:.0f} GB/s  | vector/scalar {ms['scalar'] / ms['vector']:.2f}x  "
                  f"vector/torch {ms['torch'] / ms['vector']:.2f}x  (rel err {err:.1e})", flush=True)


if __name__ == "__main__":
    main()
