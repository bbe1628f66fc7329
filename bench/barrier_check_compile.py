"""Compile time of a kernel with many per-thread shared stores, the barrier pass's worst case
(simt/transform/private_shared.py checks which thread owns each element the statements since the
last barrier touch). N unrolled stores of each thread's own swizzled element (written with the IR
builder, as TileLang's hand-written emitters write them), then a T.Parallel read of the tile.
No GPU needed: the CUDA source and cubin are built for sm_90a (nvcc), the cache off.

    python bench/barrier_check_compile.py [--sizes 16,64,128] [--target cuda:sm_90a]
"""

import argparse
import os
import time

os.environ["TILELANG_DISABLE_CACHE"] = "1"


def kernel(n):
    import tilelang_core.language as T
    from tvm import tirx

    def stores(S, tx, A):
        from tvm.script.ir_builder import tirx as B

        for k in range(n):  # one statement each (a Python loop at trace time)
            B.buffer_store(S, tirx.BufferLoad(A, [k, tx]), [k * 128 + ((tx ^ (k % 8)) & 127)])

    @T.prim_func
    def per_thread_stores(A: T.Tensor((n, 128), "float32"), B: T.Tensor((n * 128,), "float32")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((n * 128,), "float32")
            tx = T.get_thread_binding()
            stores(S, tx, A)
            for i in T.Parallel(n * 128):
                B[i] = S[i]

    return per_thread_stores


def main():
    import tilelang_core as tl

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="16,64,128")
    parser.add_argument("--target", default="cuda:sm_90a")
    args = parser.parse_args()
    print(f"{'stores':>6} | {'compile s':>9}")
    for n in map(int, args.sizes.split(",")):
        func = kernel(n)
        start = time.perf_counter()
        tl.compile(func, target=args.target)
        print(f"{n:>6} | {time.perf_counter() - start:9.2f}", flush=True)


if __name__ == "__main__":
    main()
