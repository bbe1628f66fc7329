"""Quick start: a matmul with a fused ReLU, in TileLang's eager style.

Runs on the best target present (target="auto": a GPU when its backend is installed, else the
cpu reference backend), checks the result against torch in float64 and shows the generated code.

    python examples/quickstart.py [--m 1000 --n 520 --k 264] [--target cuda]
"""

import argparse
import time

import torch

import tilelang_core as tilelang
import tilelang_core.language as T


@tilelang.jit
def matmul_relu(A, B, block_M: int = 64, block_N: int = 64, block_K: int = 32):
    M, N, K = T.const("M, N, K")
    A: T.Tensor((M, K), T.float16)
    B: T.Tensor((K, N), T.float16)
    C = T.empty((M, N), T.float16)

    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
        A_shared = T.alloc_shared((block_M, block_K), T.float16)
        B_shared = T.alloc_shared((block_K, block_N), T.float16)
        C_local = T.alloc_fragment((block_M, block_N), T.float32)
        T.clear(C_local)
        for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
            T.copy(A[by * block_M, ko * block_K], A_shared)
            T.copy(B[ko * block_K, bx * block_N], B_shared)
            T.gemm(A_shared, B_shared, C_local)
        for i, j in T.Parallel(block_M, block_N):
            C_local[i, j] = T.max(C_local[i, j], 0)
        T.copy(C_local, C[by * block_M, bx * block_N])
    return C


def reference(a, b):
    return torch.relu(a.double() @ b.double())


#: where a backend's source starts the kernel itself (CUDA/HIP, Metal, the cpu backend's LLVM IR:
#: its block loop, TVM's parallel lambda, or with one block the first loop after the argument
#: checks); before it: includes, helpers, string constants
BODY_MARKERS = (('extern "C" __global__',), ("__global__",), ("kernel void",), ("define ", "@__tvm_parallel_lambda"),
                ("for_begin",), ("define ",))


def kernel_body_line(lines: list[str]) -> int:
    """Index of the line where the kernel's own code starts (0 when no marker is found)."""
    for markers in BODY_MARKERS:
        for i, line in enumerate(lines):
            if all(m in line for m in markers) and not line.rstrip().endswith(";"):  # a definition
                return i
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--m", type=int, default=1000)
    parser.add_argument("--n", type=int, default=520)
    parser.add_argument("--k", type=int, default=264)
    parser.add_argument("--target", default="auto")
    args = parser.parse_args(argv)

    target = tilelang.resolve_target(args.target)
    device = "cuda" if target.kind == "cuda" else "cpu"
    print(f"target: {target}")
    a = torch.randn(args.m, args.k, dtype=torch.float16, device=device)
    b = torch.randn(args.k, args.n, dtype=torch.float16, device=device)

    with target:
        start = time.perf_counter()
        c = matmul_relu(a, b)
        first = time.perf_counter() - start
    ref = reference(a.cpu(), b.cpu())
    err = ((c.cpu().double() - ref).norm() / ref.norm()).item()
    print(f"C = relu(A @ B), A {tuple(a.shape)}, B {tuple(b.shape)} float16: relative error {err:.2e} "
          f"(float16 output: expect < 1e-3)  first call (compile + run) {first:.2f} s")
    print(f"stages kept on the kernel: {', '.join(matmul_relu.get_kernel(a, b).asm)}")
    kernel = matmul_relu.get_kernel(a, b)
    print(f"\n=== the kernel after lowering for {target} (kernel.asm['lowered']) ===")
    print(kernel.asm["lowered"])
    source = kernel.get_kernel_source().splitlines()
    start = kernel_body_line(source)
    print(f"=== generated source, lines {start + 1}-{min(start + 25, len(source))} of {len(source)}: the kernel "
          f"body (kernel.get_kernel_source()) ===")
    print("\n".join(source[start:start + 25]))
    if not err < 1e-3:
        raise SystemExit(f"FAILED: relative error {err:.2e}")
    print("OK")


if __name__ == "__main__":
    main()
