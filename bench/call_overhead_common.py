"""Shared by cpu_call_overhead.py and cuda_call_overhead.py: the kernels and the timing table.

One tiny kernel (x + 1 over 1024 floats), launched five ways: the raw tvm-ffi entry function,
``JITKernel`` with the output passed in, ``JITKernel`` allocating it (``out_idx``), the ``@jit``
eager decorator (``T.const``/``T.empty``) and a lazy ``@jit`` factory called then launched. Each path is timed in batches of ``calls``
calls, the batches of all paths interleaved round by round so that drift of the machine hits them
alike; a row shows the median per call and the median over rounds of its difference to its
floor in the same round (raw call; raw call + ``new_empty`` for the allocating paths).
"""

from __future__ import annotations

import statistics
import time

import torch

import tilelang_core as tilelang
import tilelang_core.language as T


def make_eager(target):
    @tilelang.jit(target=target)
    def add_one_eager(X):
        N = T.const("N")
        X: T.Tensor((N,), T.float32)
        Y = T.empty((N,), T.float32)
        with T.Kernel(T.ceildiv(N, 128), threads=128) as bx:
            for i in T.Parallel(128):
                if bx * 128 + i < N:
                    Y[bx * 128 + i] = X[bx * 128 + i] + 1.0
        return Y

    return add_one_eager


def make_lazy(target):
    @tilelang.jit(out_idx=[-1], target=target)
    def add_one_lazy(n):
        @T.prim_func
        def add_one(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
            with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
                for i in T.Parallel(128):
                    if bx * 128 + i < n:
                        Y[bx * 128 + i] = X[bx * 128 + i] + 1.0

        return add_one

    return add_one_lazy


def make_compiled(n, out_idx, target):
    @T.prim_func
    def add_one(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
            for i in T.Parallel(128):
                if bx * 128 + i < n:
                    Y[bx * 128 + i] = X[bx * 128 + i] + 1.0

    return tilelang.compile(add_one, out_idx=out_idx, target=target)


def paths(x, y, target):
    """(label, call, floor label or None) for the comparison; x is the input, y an output."""
    import tvm_ffi  # loaded by tilelang_core's runtime anyway; imported here for the no-op

    n = x.shape[0]
    nop = tvm_ffi.get_global_func("testing.nop")
    inplace, allocating = make_compiled(n, None, target), make_compiled(n, [-1], target)
    eager, lazy = make_eager(target), make_lazy(target)
    raw = inplace.function  # the tvm-ffi entry function JITKernel launches
    for check in (allocating(x), eager(x), lazy(n)(x)):
        assert (check - (x + 1)).abs().max().item() < 1e-6
    inplace(x, y)
    assert (y - (x + 1)).abs().max().item() < 1e-6
    return [
        ("raw tvm-ffi call, output passed", lambda: raw(x, y), None),
        ("JITKernel, output passed", lambda: inplace(x, y), "raw tvm-ffi call, output passed"),
        ("raw tvm-ffi call + x.new_empty(n)", lambda: raw(x, x.new_empty(n)), None),
        ("JITKernel, out_idx allocates", lambda: allocating(x), "raw tvm-ffi call + x.new_empty(n)"),
        ("@jit eager call (T.empty output)", lambda: eager(x), "raw tvm-ffi call + x.new_empty(n)"),
        ("@jit lazy: f(n)(x), out_idx", lambda: lazy(n)(x), "raw tvm-ffi call + x.new_empty(n)"),
        ("torch: x + 1 (allocates)", lambda: x + 1, None),
        # tvm-ffi's own cost of passing two tensors (DLPack exchange, stream), no kernel: what the
        # raw row spends before the wrapper's checks and the CUDA launch
        ("tvm-ffi testing.nop(x, y), no kernel", lambda: nop(x, y), None),
        # torch's own launch of the same work with the output passed: the host's floor for a
        # Python-level kernel launch, next to which our rows are read
        ("torch: torch.add(x, 1, out=y)", lambda: torch.add(x, 1, out=y), None),
    ]


def measure(rows, calls, rounds, sync=lambda: None, warmup=200):
    """{label: [us per call, one per round]}, batches interleaved round by round."""
    samples = {label: [] for label, _, _ in rows}
    for _, fn, _ in rows:
        for _ in range(warmup):
            fn()
    sync()
    for _ in range(rounds):
        for label, fn, _ in rows:
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            sync()
            samples[label].append((time.perf_counter() - start) / calls * 1e6)
    return samples


def report(rows, samples, title):
    print(f"\n{title}")
    print(f"{'launch path':<38} {'median us':>9} {'over floor':>10}  floor")
    for label, _, floor in rows:
        own = samples[label]
        line = f"{label:<38} {statistics.median(own):>9.2f}"
        if floor is not None:
            diff = statistics.median(a - b for a, b in zip(own, samples[floor]))
            line += f" {diff:>+10.2f}  {floor}"
        print(line)
