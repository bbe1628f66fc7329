"""Per-call launch overhead of a tiny kernel from Python on CUDA, side by side (medians, us):
the raw tvm-ffi entry, JITKernel with the output passed in, JITKernel allocating its output, and
torch's own tiny ops. Issue target: JITKernel <= 5 us; TileLang about 12 us, Triton about 20 us.

    python bench/cuda_call_overhead.py
"""

import statistics
import time
import warnings

import torch

import tilelang_core as tilelang
import tilelang_core.language as T


@tilelang.jit(target="cuda")
def add_one_eager(X):
    N = T.const("N")
    X: T.Tensor((N,), T.float32)
    Y = T.empty((N,), T.float32)
    with T.Kernel(T.ceildiv(N, 128), threads=128) as bx:
        for i in T.Parallel(128):
            if bx * 128 + i < N:
                Y[bx * 128 + i] = X[bx * 128 + i] + 1.0
    return Y


def make(n, out_idx):
    @T.prim_func
    def add_one(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
            for i in T.Parallel(128):
                if bx * 128 + i < n:
                    Y[bx * 128 + i] = X[bx * 128 + i] + 1.0

    return tilelang.compile(add_one, out_idx=out_idx, target="cuda")


def per_call_us(fn, calls=5000, repeats=7):
    for _ in range(200):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        samples.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(samples)


def main():
    warnings.simplefilter("ignore")
    n = 1024
    x = torch.randn(n, device="cuda")
    y = torch.empty(n, device="cuda")
    inplace, allocating = make(n, None), make(n, [-1])
    raw = inplace.function  # the tvm-ffi entry JITKernel launches
    rows = [("raw tvm-ffi entry function", per_call_us(lambda: raw(x, y)))]
    rows.append(("JITKernel, output passed in", per_call_us(lambda: inplace(x, y))))
    rows.append(("JITKernel, output allocated", per_call_us(lambda: allocating(x))))
    rows.append(("@jit eager call, output allocated", per_call_us(lambda: add_one_eager(x))))
    rows.append(("torch: y.copy_(x)", per_call_us(lambda: y.copy_(x))))
    rows.append(("torch: x + 1 (allocates)", per_call_us(lambda: x + 1)))
    assert torch.allclose(allocating(x), x + 1) and torch.allclose(add_one_eager(x), x + 1)
    torch_ref = rows[-1][1]
    print(f"\n{'launch path':<36} {'us/call':>8} {'vs torch x+1':>13}")
    for name, us in rows:
        print(f"{name:<36} {us:>8.2f} {us / torch_ref:>12.2f}x")


if __name__ == "__main__":
    main()
