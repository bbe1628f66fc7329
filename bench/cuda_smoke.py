"""CUDA backend smoke run for the H200: build, check numerics against torch float64, time.

    python bench/cuda_smoke.py                 # split host/device build, NVRTC if found (default)
    python bench/cuda_smoke.py --device-compiler nvcc
    python bench/cuda_smoke.py --host-build nvcc

Prints one row per case: compile seconds (lower / codegen / nvcc device / host), max error vs a
float64 reference, and kernel time (CUDA events, median of 50) with TFLOP/s for GEMMs next to
torch.matmul. Exit status 1 if any case is wrong.
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "backends" / "cuda" / "tests"))

import torch  # noqa: E402

import kernels  # noqa: E402
from bench_common import bench  # noqa: E402  (CUDA events, median)
import tilelang_core.language as T  # noqa: E402
from tilelang_cuda.options import CudaOptions  # noqa: E402
from tilelang_cuda.pipeline import CudaBackend  # noqa: E402


class Target:
    arch = "sm_90a"


def build(func, name, options):
    backend = CudaBackend(Target())
    workdir = Path(tempfile.mkdtemp(prefix=f"tl_{name}_"))
    start = time.perf_counter()
    mod = backend.lower(func, options)
    source = backend.codegen(mod, options)
    backend.build(mod, source, options, workdir)
    total = time.perf_counter() - start
    kernel = backend.load(workdir / "kernel.so")
    return kernel, backend.timings, total


def gemm_case(M, N, K, dtype, trans_b, options, label, **tiles):
    tdt = {"float16": torch.float16, "bfloat16": torch.bfloat16}[dtype]
    func = kernels.make_gemm(M, N, K, dtype=getattr(T, dtype), out_dtype=getattr(T, dtype),
                             trans_b=trans_b, **tiles)
    kernel, timings, total = build(func, "gemm", options)
    a = torch.randn(M, K, device="cuda", dtype=tdt)
    b = torch.randn(N, K, device="cuda", dtype=tdt) if trans_b else torch.randn(K, N, device="cuda", dtype=tdt)
    c = torch.empty(M, N, device="cuda", dtype=tdt)
    fn = kernel["gemm"]
    fn(a, b, c)
    torch.cuda.synchronize()
    ref = a.double() @ (b.double().T if trans_b else b.double())
    err = ((c.double() - ref).abs().max() / ref.abs().max()).item()
    ms = bench(lambda: fn(a, b, c))
    bt = b.T if trans_b else b
    ms_torch = bench(lambda: torch.matmul(a, bt))
    tflops = 2 * M * N * K / ms / 1e9
    ok = err < 2e-2
    return [label, f"{total:.2f}", _fmt_timings(timings), f"{err:.1e}", f"{ms:.3f}",
            f"{tflops:.1f}", f"{2 * M * N * K / ms_torch / 1e9:.1f}", "ok" if ok else "WRONG"], ok


def attention_case(B, H, S, D, options, label):
    func = kernels.make_flash_attention(B, H, S, D, block_m=128, block_n=64 if D == 128 else 128,
                                        threads=256, stages=2)
    kernel, timings, total = build(func, "attn", options)
    q, k, v = (torch.randn(B, S, H, D, device="cuda", dtype=torch.float16) for _ in range(3))
    o = torch.empty_like(q)
    fn = kernel["flash_attn"]
    fn(q, k, v, o)
    torch.cuda.synchronize()
    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
    ref = torch.nn.functional.scaled_dot_product_attention(qt.float(), kt.float(), vt.float()).transpose(1, 2)
    err = (o.float() - ref).abs().max().item()
    ms = bench(lambda: fn(q, k, v, o), iters=20)
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        ms_torch = bench(lambda: torch.nn.functional.scaled_dot_product_attention(qt, kt, vt), iters=20)
    flops = 4 * B * H * S * S * D
    ok = err < 1e-2
    return [label, f"{total:.2f}", _fmt_timings(timings), f"{err:.1e}", f"{ms:.3f}",
            f"{flops / ms / 1e9:.1f}", f"{flops / ms_torch / 1e9:.1f} (sdpa flash)",
            "ok" if ok else "WRONG"], ok


def rowwise_case(kind, M, N, options, label):
    """Bandwidth-bound row kernels, in GB/s (read + write) next to torch."""
    if kind == "softmax":
        kernel, timings, total = build(kernels.make_softmax(M, N, 4, 128), "softmax", options)
        fn = kernel["softmax"]
        x = torch.randn(M, N, device="cuda")
        y = torch.empty_like(x)
        args, ref_fn = (x, y), (lambda: torch.softmax(x, dim=1))
        ref = torch.softmax(x.double(), dim=1)
    else:
        kernel, timings, total = build(kernels.make_rms_norm(M, N, 4), "rms", options)
        fn = kernel["rms"]
        x = torch.randn(M, N, device="cuda")
        w = torch.randn(N, device="cuda")
        y = torch.empty_like(x)
        args = (x, w, y)
        ref_fn = (lambda: torch.nn.functional.rms_norm(x, (N,), w, eps=1e-6))
        ref = x.double() * torch.rsqrt(x.double().pow(2).mean(1, keepdim=True) + 1e-6) * w.double()
    fn(*args)
    torch.cuda.synchronize()
    err = (y.double() - ref).abs().max().item()
    ms = bench(lambda: fn(*args))
    ms_torch = bench(ref_fn)
    gbs = 2 * M * N * 4 / ms / 1e6
    ok = err < 1e-4
    return [label, f"{total:.2f}", _fmt_timings(timings), f"{err:.1e}", f"{ms:.3f}",
            f"{gbs:.0f} GB/s", f"{2 * M * N * 4 / ms_torch / 1e6:.0f} GB/s", "ok" if ok else "WRONG"], ok


def row_max_case(options):
    M, N = 4096, 64
    kernel, timings, total = build(kernels.make_row_max(M, N), "row_max", options)
    x = torch.randn(M, N, device="cuda", dtype=torch.float32)
    y = torch.empty(M, device="cuda", dtype=torch.float32)
    fn = kernel["row_max"]
    fn(x, y)
    torch.cuda.synchronize()
    err = (y.double() - (x.double() * 2).amax(dim=1)).abs().max().item()
    ms = bench(lambda: fn(x, y))
    return [f"row_max {M}x{N}", f"{total:.2f}", _fmt_timings(timings), f"{err:.1e}", f"{ms:.3f}",
            "-", "-", "ok" if err == 0 else "WRONG"], err == 0


def call_overhead(options):
    kernel, _, _ = build(kernels.make_row_max(64, 64), "tiny", options)
    x = torch.randn(64, 64, device="cuda")
    y = torch.empty(64, device="cuda")
    fn = kernel["row_max"]
    for _ in range(100):
        fn(x, y)
    torch.cuda.synchronize()
    n = 2000
    start = time.perf_counter()
    for _ in range(n):
        fn(x, y)
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / n * 1e6


def _fmt_timings(t):
    keys = [("lower", "lower"), ("codegen", "cg"), ("build_device", "dev"), ("build_host", "host"),
            ("build_nvcc", "nvcc")]
    return " ".join(f"{short}={t[k]:.2f}" for k, short in keys if k in t)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--host-build", default="split", choices=["split", "nvcc"])
    parser.add_argument("--device-compiler", default="auto", choices=["auto", "nvrtc", "nvcc"])
    args = parser.parse_args()
    options = CudaOptions(host_build=args.host_build, device_compiler=args.device_compiler)
    from tilelang_cuda import nvrtc

    print(f"device compiler: {args.device_compiler} ({nvrtc.version()} available)"
          if nvrtc.available() else f"device compiler: {args.device_compiler} (no NVRTC: nvcc)")
    rows, all_ok = [], True
    big = {"bm": 128, "bn": 256, "bk": 32, "threads": 256, "stages": 3}
    cases = [
        ("gemm f16 1024^3 NN", lambda label: gemm_case(1024, 1024, 1024, "float16", False, options, label)),
        ("gemm f16 1000^3 ragged", lambda label: gemm_case(1000, 1000, 1000, "float16", False, options, label)),
        ("gemm f16 1024^3 NT", lambda label: gemm_case(1024, 1024, 1024, "float16", True, options, label)),
        ("gemm bf16 1024^3", lambda label: gemm_case(1024, 1024, 1024, "bfloat16", False, options, label)),
        ("gemm f16 4096^3 128x128", lambda label: gemm_case(4096, 4096, 4096, "float16", False, options, label)),
        ("gemm f16 4096^3 128x256", lambda label: gemm_case(4096, 4096, 4096, "float16", False, options, label, **big)),
        ("gemm f16 8192^3 128x256", lambda label: gemm_case(8192, 8192, 8192, "float16", False, options, label, **big)),
        ("gemm bf16 8192^3 128x256", lambda label: gemm_case(8192, 8192, 8192, "bfloat16", False, options, label, **big)),
        ("attn fwd B8 H16 S4096 D128", lambda label: attention_case(8, 16, 4096, 128, options, label)),
        ("attn fwd B8 H16 S8192 D64", lambda label: attention_case(8, 16, 8192, 64, options, label)),
        ("softmax 16384x1024 f32", lambda label: rowwise_case("softmax", 16384, 1024, options, label)),
        ("rms_norm 16384x1024 f32", lambda label: rowwise_case("rms", 16384, 1024, options, label)),
        ("row_max 4096x64", lambda label: row_max_case(options)),
    ]
    for label, case in cases:
        try:
            row, ok = case(label)
        except Exception as exc:  # keep going: the table is the point
            row, ok = [label, "-", "-", "-", "-", "-", "-", f"ERROR {type(exc).__name__}: {exc}"[:400]], False
        rows.append(row)
        all_ok &= ok
        print(" | ".join(row), flush=True)
    header = ["case", "compile s", "parts s", "max err", "ms", "TFLOP/s|GB/s", "torch", "status"]
    print("\n" + " | ".join(header))
    for row in rows:
        print(" | ".join(row))
    try:
        print(f"\nper-call overhead (tiny kernel, from Python): {call_overhead(options):.1f} us")
    except Exception as exc:
        print(f"\nper-call overhead: ERROR {exc}")
    sys.exit(0 if all_ok else 1)


if __name__ == "__main__":
    main()
