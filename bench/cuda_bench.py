"""The CUDA benchmark table of issues 4 and 5, side by side in one run (H200).

    python bench/cuda_bench.py                 # everything (about 3 minutes)
    python bench/cuda_bench.py --only gemm     # gemm | sustained | fp8 | attention | attnbwd | rowwise | overhead | quant | grouped | dequant | fp8block | linattn
    python bench/cuda_bench.py --pass-config tl.disable_warp_specialized=1   # compare schedules

Kernels are the ones in examples/, compiled through tilelang_core.compile with target
cuda:sm_90a (the automatic schedule; only tile sizes are chosen here). Every case is checked
against torch in float64 first; times are medians of CUDA-event timings after warm-up. Ratios are
ours / theirs in throughput (higher is better).
"""

import argparse
import importlib.util
import os
import statistics
import sys
import time
from pathlib import Path

import torch

from gpu_clocks import ClockSampler

ROOT = Path(__file__).resolve().parents[1]


#: pass configs for Ampere-class instructions on sm_90a: mma.sync + ldmatrix + cp.async, no wgmma
#: or TMA producer warpgroup (the mma.sync benchmarks: ampere_*.py, ptxas_level.py, ncu_profile.py)
AMPERE = {"tl.disable_wgmma": True, "tl.disable_warp_specialized": True}


def example(relpath):
    spec = importlib.util.spec_from_file_location("bench_" + Path(relpath).stem, ROOT / "examples" / relpath)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def bench(fn, iters=30, warmup=5):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def side_by_side(fns: dict, rounds=9, per_round=3, warmup=3, timer=None) -> dict:
    """{name: median milliseconds per call}, the functions timed in turns (A B C A B C ...) so that
    clock and temperature drift during the run falls on all of them alike (cuBLAS alone moved
    657-752 TFLOP/s between runs on the H200). Each turn: one untimed call, so that the GPU is busy
    while the timed calls are queued, then ``per_round`` calls between two CUDA events. A
    function that raises RuntimeError on its first call comes back as nan."""
    timer = timer or _cuda_events
    times, live = {name: [] for name in fns}, {}
    for name, fn in fns.items():
        try:
            for _ in range(warmup):
                fn()
            live[name] = fn
        except RuntimeError:
            times[name] = [float("nan")]
    for _ in range(rounds):
        for name, fn in live.items():
            times[name].append(timer(fn, per_round) / per_round)
    return {name: statistics.median(t) for name, t in times.items()}


def turns_table(size: int, fns: dict, errs: dict, flops: float, baseline: str, width: int = 36) -> None:
    """Time ``fns`` in turns (side_by_side) and print one row per kernel: its relative error (from
    ``errs``), TFLOP/s and speed over ``baseline``'s; ``turns_header`` prints the header."""
    times = side_by_side(fns)
    base = times[baseline]
    for name, ms in times.items():
        print(f"{size:>6} | {name:<{width}} | {errs[name]:8.1e} | {flops / ms / 1e9:8.0f} | {base / ms:9.2f}",
              flush=True)


def turns_header(width: int = 36, against: str = "cuBLAS") -> None:
    print(f"{'size':>6} | {'kernel':<{width}} | {'rel err':>8} | {'TFLOP/s':>8} | {'vs ' + against:>9}", flush=True)


def _cuda_events(fn, calls: int) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    fn()
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end)


def sustained(fn, seconds=2.0, chunk=20):
    """(median ms per call, median SM clock in MHz, median board power in W) over ``seconds`` of
    back-to-back calls, with nvidia-smi sampling every 20 ms: what one kernel runs at once the
    clocks have settled under its own load (the H200 lowered its SM clock to 1.67-1.72 GHz under
    the mma.sync GEMM, from 1.98, so a ratio to cuBLAS also compares clocks)."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times, end = [], time.perf_counter() + seconds
    with ClockSampler(torch.cuda.current_device()) as clocks:
        while time.perf_counter() < end:
            times.append(_cuda_events(fn, chunk) / chunk)
    return statistics.median(times), clocks.mhz, clocks.watts


def compile_timed(jit_fn, *args, pass_configs=None, **kwargs):
    import tilelang_core as tl

    func = jit_fn.get_tir(*args, **kwargs)
    configs = {**(getattr(jit_fn, "pass_configs", None) or {}), **(pass_configs or {})}  # the jit's, then ours
    start = time.perf_counter()
    kernel = tl.compile(func, out_idx=jit_fn.out_idx, target="cuda:sm_90a", pass_configs=configs or None)
    return kernel, time.perf_counter() - start


# -- Triton reference GEMM (the tutorial's schedule, a few configs) --------------------------------
def triton_matmul():
    try:
        import triton
        import triton.language as tl
    except ImportError:
        return None

    configs = [triton.Config({"BM": 128, "BN": 256, "BK": 64, "G": 8}, num_stages=3, num_warps=8),
               triton.Config({"BM": 128, "BN": 128, "BK": 64, "G": 8}, num_stages=4, num_warps=4),
               triton.Config({"BM": 256, "BN": 128, "BK": 64, "G": 8}, num_stages=3, num_warps=8)]

    @triton.autotune(configs=configs, key=["M", "N", "K"])
    @triton.jit
    def kernel(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, G: tl.constexpr):
        pid = tl.program_id(0)
        grid_m, grid_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
        group = pid // (G * grid_n)
        first_m = group * G
        size_m = min(grid_m - first_m, G)
        pid_m = first_m + (pid % (G * grid_n)) % size_m
        pid_n = (pid % (G * grid_n)) // size_m
        rm = pid_m * BM + tl.arange(0, BM)
        rn = pid_n * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            x = tl.load(a + rm[:, None] * K + (k * BK + rk)[None, :],
                        mask=(rm[:, None] < M) & ((k * BK + rk)[None, :] < K), other=0.0)
            y = tl.load(b + (k * BK + rk)[:, None] * N + rn[None, :],
                        mask=((k * BK + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
            acc += tl.dot(x, y)
        tl.store(c + rm[:, None] * N + rn[None, :], acc.to(c.dtype.element_ty),
                 mask=(rm[:, None] < M) & (rn[None, :] < N))

    def run(a, b, c):
        M, K = a.shape
        N = b.shape[1]
        grid = lambda meta: (triton.cdiv(M, meta["BM"]) * triton.cdiv(N, meta["BN"]),)  # noqa: E731
        kernel[grid](a, b, c, M, N, K)

    return run


#: the GEMM tile per size (the kernel author's choice; the schedule is the compiler's), timed in
#: turns with cuBLAS on the H200 (bench/NOTES.md). 4096^3: 128x256, which held 0.95-0.98x in every
#: run of s6, while 128x128 ranged 0.90-0.97x (0.90x in the run where cuBLAS reached 792 at full
#: clocks). 8192^3 took 128x128 on two blocks per SM (hopper/occupancy.py; s6: 652-661 vs 643-644
#: TFLOP/s fp16 for 128x256) until stream-K (session 9) made 128x256 as fast or faster there:
#: fp16 1.00x / 1.00x of cuBLAS against 1.00x / 1.00x, bf16 1.01x / 1.01x against 0.99x / 1.00x
#: (bench/stream_k.py, two rounds of one run)
GEMM_TILES = {4096: dict(block_M=128, block_N=256, block_K=64, num_stages=4, threads=256),
              8192: dict(block_M=128, block_N=256, block_K=64, num_stages=4, threads=256)}


def gemm_rows(pass_configs):
    ex = example("gemm/gemm.py")
    tri = triton_matmul()
    rows = []
    for dtype in (torch.float16, torch.bfloat16):
        for size in (4096, 8192):
            name = str(dtype).split(".")[-1]
            kernel, secs = compile_timed(ex.gemm, size, size, size, dtype=name, **GEMM_TILES[size],
                                         pass_configs=pass_configs)
            a = torch.randn(size, size, device="cuda", dtype=dtype)
            b = torch.randn(size, size, device="cuda", dtype=dtype)
            c = kernel(a, b)
            ref = a.double() @ b.double()
            err = ((c.double() - ref).norm() / ref.norm()).item()
            flops = 2 * size ** 3
            fns = {"ours": lambda: kernel(a, b), "cublas": lambda: torch.matmul(a, b)}
            if tri is not None:
                out = torch.empty_like(c)
                fns["triton"] = lambda: tri(a, b, out)
            ms = side_by_side(fns)
            ours, cublas = flops / ms["ours"] / 1e9, flops / ms["cublas"] / 1e9
            triton_tf = f"{flops / ms['triton'] / 1e9:.0f}" if "triton" in ms else "-"
            rows.append([f"gemm {name} {size}^3", f"{err:.1e}", f"{ours:.0f}", f"{cublas:.0f}", triton_tf,
                         f"{ours / cublas:.2f}x", f"{secs:.2f}"])
            print(" | ".join(rows[-1]), flush=True)
    return ["case", "rel err", "ours TFLOP/s", "cuBLAS", "Triton", "vs cuBLAS", "compile s"], rows


def sustained_rows(pass_configs):
    """GEMM 8192^3 fp16 with each kernel alone for 2 s (``sustained``): every kernel here reaches the
    board's power cap (about 690 W on the H200), so the clock it settles at is part of its speed.
    Timed in turns (the gemm rows), a kernel's short turn starts at the clock the previous one left,
    which favours the one that draws more power per FLOP less; this table shows the steady state."""
    ex = example("gemm/gemm.py")
    tri = triton_matmul()
    size = 8192
    a = torch.randn(size, size, device="cuda", dtype=torch.float16)
    b = torch.randn(size, size, device="cuda", dtype=torch.float16)
    ours, _ = compile_timed(ex.gemm, size, size, size, **GEMM_TILES[size], pass_configs=pass_configs)
    mma_sync, _ = compile_timed(ex.gemm, size, size, size, **GEMM_TILES[size],
                                pass_configs={**(pass_configs or {}), **AMPERE})
    fns = {"ours": lambda: ours(a, b), "ours, mma.sync (Ampere-class)": lambda: mma_sync(a, b),
           "cuBLAS": lambda: torch.matmul(a, b)}
    if tri is not None:
        out = torch.empty(size, size, device="cuda", dtype=torch.float16)
        fns["Triton"] = lambda: tri(a, b, out)
    measured = {name: sustained(fn) for name, fn in fns.items()}
    cublas = 2 * size ** 3 / measured["cuBLAS"][0] / 1e9
    rows = []
    for name, (ms, mhz, watts) in measured.items():
        tflops = 2 * size ** 3 / ms / 1e9
        rows.append([f"gemm fp16 {size}^3 {name}", f"{tflops:.0f}", f"{mhz:.0f}", f"{watts:.0f}",
                     f"{tflops / mhz * 1e3:.0f}", f"{tflops / cublas:.2f}x"])
        print(" | ".join(rows[-1]), flush=True)
    return ["sustained 2 s each", "TFLOP/s", "SM MHz", "W", "TFLOP/s per GHz", "vs cuBLAS"], rows


def fp8_rows(pass_configs):
    """e4m3 operands (B stored N x K, the layout torch._scaled_mm wants), fp32 accumulate, fp16 out."""
    ex = example("gemm/gemm.py")
    rows = []
    for size in (4096, 8192):
        kernel, secs = compile_timed(ex.gemm, size, size, size, False, True, dtype="float8_e4m3fn",
                                     out_dtype="float16", block_M=128, block_N=256, block_K=128, num_stages=4,
                                     threads=256, pass_configs=pass_configs)
        a = (torch.randn(size, size, device="cuda") / 2).to(torch.float8_e4m3fn)
        b = (torch.randn(size, size, device="cuda") / 2).to(torch.float8_e4m3fn)
        one = torch.ones((), device="cuda")
        c = kernel(a, b)
        ref = a.double() @ b.double().T
        err = ((c.double() - ref).norm() / ref.norm()).item()
        flops = 2 * size ** 3
        ms = side_by_side({"ours": lambda: kernel(a, b),
                           "scaled": lambda: torch._scaled_mm(a, b.T, scale_a=one, scale_b=one,
                                                              out_dtype=torch.float16)})
        ours, scaled = flops / ms["ours"] / 1e9, flops / ms["scaled"] / 1e9
        rows.append([f"gemm e4m3 {size}^3", f"{err:.1e}", f"{ours:.0f}", f"{scaled:.0f}", f"{ours / scaled:.2f}x",
                     f"{secs:.2f}"])
        print(" | ".join(rows[-1]), flush=True)
    return ["case", "rel err", "ours TFLOP/s", "torch._scaled_mm", "ratio", "compile s"], rows


#: tile sizes per head dim (the kernel author's choice; the schedule is the compiler's): D64 on
#: three consumer warpgroups of 64 rows each, 1.02x cuDNN against 0.95x with 128x128 on two
#: (bench/hopper_sweep.py, same run, bench/NOTES.md)
ATTENTION_TILES = {128: dict(block_M=128, block_N=128, num_stages=2, threads=256),
                   64: dict(block_M=192, block_N=128, num_stages=2, threads=384)}


def attention_inputs(B, H, S, D, causal):
    """Random (B, S, H, D) fp16 q, k, v on the GPU, and ``sdpa(backend)``: a call of torch's SDPA
    with that backend on the same tensors (their (B, H, S, D) views), returning its output."""
    from torch.nn.attention import sdpa_kernel

    q, k, v = (torch.randn(B, S, H, D, device="cuda", dtype=torch.float16) for _ in range(3))
    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))

    def sdpa(backend):
        def run():
            with sdpa_kernel(backend):
                return torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)
        return run

    return q, k, v, sdpa


def attention_rows(pass_configs):
    from torch.nn.attention import SDPBackend

    ex = example("attention/flash_attention.py")
    rows = []
    for B, H, S, D, causal in ((8, 16, 4096, 128, False), (8, 16, 4096, 128, True), (8, 16, 8192, 64, False)):
        kernel, secs = compile_timed(ex.flash_attention, B, H, S, D, causal, **ATTENTION_TILES[D],
                                     pass_configs=pass_configs)
        q, k, v, sdpa = attention_inputs(B, H, S, D, causal)
        o = kernel(q, k, v)
        ref = torch.nn.functional.scaled_dot_product_attention(*(x.transpose(1, 2).float() for x in (q, k, v)),
                                                                is_causal=causal).transpose(1, 2)
        err = (o.float() - ref).abs().max().item()
        flops = 4 * B * H * S * S * D / (2 if causal else 1)
        ms = side_by_side({"ours": lambda: kernel(q, k, v), "flash": sdpa(SDPBackend.FLASH_ATTENTION),
                           "cudnn": sdpa(SDPBackend.CUDNN_ATTENTION)}, per_round=2)
        ours = flops / ms["ours"] / 1e9
        theirs = {label: flops / ms[label] / 1e9 for label in ("flash", "cudnn")}
        rows.append([f"attn B{B} H{H} S{S} D{D}{' causal' if causal else ''}", f"{err:.1e}", f"{ours:.0f}",
                     f"{theirs['flash']:.0f}", f"{theirs['cudnn']:.0f}", f"{ours / theirs['cudnn']:.2f}x",
                     f"{secs:.2f}"])
        print(" | ".join(rows[-1]), flush=True)
    return ["case", "max err", "ours TFLOP/s", "SDPA flash", "SDPA cuDNN", "vs cuDNN", "compile s"], rows


def rowwise_rows(pass_configs):
    rows = []
    M, N = 16384, 1024
    x = torch.randn(M, N, device="cuda")
    soft = example("softmax/softmax.py")
    kernel, secs = compile_timed(soft.softmax, M, N, dtype="float32", pass_configs=pass_configs)
    y = kernel(x)
    err = (y.double() - torch.softmax(x.double(), 1)).abs().max().item()
    gbs = lambda ms: 2 * M * N * 4 / ms / 1e6  # noqa: E731
    ms = side_by_side({"ours": lambda: kernel(x), "torch": lambda: torch.softmax(x, 1)}, per_round=10)
    ours, torch_gbs = gbs(ms["ours"]), gbs(ms["torch"])
    rows.append([f"softmax {M}x{N} f32", f"{err:.1e}", f"{ours:.0f}", f"{torch_gbs:.0f}", f"{ours / torch_gbs:.2f}x",
                 f"{secs:.2f}"])
    norm = example("norm/rms_norm.py")
    kernel, secs = compile_timed(norm.rms_norm, M, N, dtype="float32", pass_configs=pass_configs)
    w = torch.randn(N, device="cuda")
    y = kernel(x, w)
    ref = x.double() * torch.rsqrt(x.double().pow(2).mean(1, keepdim=True) + 1e-6) * w.double()
    err = (y.double() - ref).abs().max().item()
    ms = side_by_side({"ours": lambda: kernel(x, w),
                       "torch": lambda: torch.nn.functional.rms_norm(x, (N,), w, eps=1e-6)}, per_round=10)
    ours, torch_gbs = gbs(ms["ours"]), gbs(ms["torch"])
    rows.append([f"rms_norm {M}x{N} f32", f"{err:.1e}", f"{ours:.0f}", f"{torch_gbs:.0f}",
                 f"{ours / torch_gbs:.2f}x", f"{secs:.2f}"])
    add = example("elementwise/scale_add.py")
    for dtype in (torch.float32, torch.bfloat16):
        name = str(dtype).split(".")[-1]
        kernel, secs = compile_timed(add.scale_add, M, 4 * N, 0.5, dtype=name, pass_configs=pass_configs)
        a, b = torch.randn(M, 4 * N, device="cuda", dtype=dtype), torch.randn(M, 4 * N, device="cuda", dtype=dtype)
        err = (kernel(a, b).double() - (0.5 * a.double() + b.double())).abs().max().item()
        ms = side_by_side({"ours": lambda: kernel(a, b), "torch": lambda: a * 0.5 + b}, per_round=10)
        moved = lambda t: 3 * a.numel() * a.element_size() / t / 1e6  # noqa: E731
        vector = "float4" in kernel.get_kernel_source() or "uint4" in kernel.get_kernel_source()
        rows.append([f"scale_add {M}x{4 * N} {name}{' (vector)' if vector else ''}", f"{err:.1e}",
                     f"{moved(ms['ours']):.0f}", f"{moved(ms['torch']):.0f}", f"{ms['torch'] / ms['ours']:.2f}x",
                     f"{secs:.2f}"])
    for r in rows:
        print(" | ".join(r), flush=True)
    return ["case", "max err", "ours GB/s", "torch GB/s", "ratio", "compile s"], rows


def overhead_rows(pass_configs):
    ex = example("elementwise/scale_add.py")
    kernel, _ = compile_timed(ex.scale_add, 32, 32, 0.5, pass_configs=pass_configs)
    x, y = torch.randn(32, 32, device="cuda"), torch.randn(32, 32, device="cuda")

    def per_call(fn, n=3000):
        for _ in range(200):
            fn()
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
        return (time.perf_counter() - start) / n * 1e6

    rows = [["tilelang-x scale_add 32x32", f"{per_call(lambda: kernel(x, y)):.1f}"],
            ["torch x * 0.5 + y", f"{per_call(lambda: x * 0.5 + y):.1f}"]]
    try:
        import triton
        import triton.language as tl

        @triton.jit
        def add(a, b, c, n, BLOCK: tl.constexpr):
            i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(c + i, tl.load(a + i, mask=i < n) * 0.5 + tl.load(b + i, mask=i < n), mask=i < n)

        out = torch.empty_like(x)
        rows.append(["triton scale_add 32x32", f"{per_call(lambda: add[(1,)](x, y, out, x.numel(), BLOCK=1024)):.1f}"])
    except ImportError:
        pass
    for r in rows:
        print(" | ".join(r), flush=True)
    return ["launch from Python", "us per call"], rows


_COPY_GBS: list = []


def copy_gbs() -> float:
    """This card's device-to-device copy bandwidth (GB/s, read + write of 1 GiB, median of CUDA
    events), measured once per run: the "of copy" columns divide by it, so they mean the same on
    an H100 (about 3.0 TB/s) as on an H200 (about 4.3)."""
    if not _COPY_GBS:
        src = torch.empty(1 << 29, dtype=torch.bfloat16, device="cuda")
        dst = torch.empty_like(src)
        ms = side_by_side({"copy": lambda: dst.copy_(src)}, per_round=5)["copy"]
        _COPY_GBS.append(2 * src.numel() * src.element_size() / ms / 1e6)
        print(f"device copy bandwidth: {_COPY_GBS[0]:.0f} GB/s", flush=True)
        del src, dst
    return _COPY_GBS[0]


def quant_rows(pass_configs):
    """SwiGLU + FP8 (e4m3) quantization with 1x128 (or per-token) scales: examples/quant/
    swiglu_fp8_quant.py against torch's composite (eager, and torch.compile where Triton is
    there). Memory-bound: GB/s over the bytes a fused kernel must move, and the share of the card's copy bandwidth."""
    import torch.nn.functional as F

    quant = example("quant/swiglu_fp8_quant.py")
    rows = []
    # the last two: scales stored MN-major (DeepGEMM's layout), each block's scales one contiguous run
    for M, N, group, mn_major in ((8192, 4096, 128, False), (4096, 7168, 128, False), (8192, 2048, 2048, False),
                                  (8192, 4096, 128, True), (4096, 7168, 128, True)):
        x = (torch.randn(M, 2 * N, device="cuda") * 3).to(torch.bfloat16)

        def composite(x=x, M=M, N=N, group=group):
            y = F.silu(x[:, :N].float()) * x[:, N:].float()
            yv = y.view(M, N // group, group)
            amax = yv.abs().amax(-1).clamp(min=quant.MIN_AMAX)
            q = (yv * (quant.FP8_MAX / amax)[..., None]).clamp(-quant.FP8_MAX, quant.FP8_MAX)
            return q.to(torch.float8_e4m3fn).view(M, N), amax / quant.FP8_MAX

        fns, errs, best = {"torch": lambda c=composite: c()}, {}, None
        try:
            compiled = torch.compile(composite)
            compiled()
            fns["torch.compile"] = compiled
        except Exception as exc:  # noqa: BLE001 - no Triton on the machine: the row says so
            print(f"torch.compile unavailable: {type(exc).__name__}: {str(exc)[:120]}", flush=True)
        _, s_ref, q_ref = quant.reference(x, group)
        tiles = ((1, 256), (2, 256), (4, 512), (8, 512)) if group == N else \
            ((16, 128), (32, 256), (64, 256), (64, 512), (128, 512))
        for block_M, threads in tiles:
            kernel, secs = compile_timed(quant.swiglu_fp8_quant, M, N, group=group, block_M=block_M,
                                         threads=threads, scales_mn_major=mn_major, pass_configs=pass_configs)
            q, s = kernel(x)
            s = s.T if mn_major else s
            bad = (q.cpu().double() != q_ref).float().mean().item()
            s_err = ((s.cpu().double() - s_ref).abs() / s_ref).max().item()
            errs[(block_M, threads)] = (bad, s_err, secs)
            fns[f"ours {block_M}x{threads}"] = lambda k=kernel: k(x)
        ms = side_by_side(fns, per_round=10)
        moved = M * (4 * N + N + 4 * N // group)
        gbs = {name: moved / t / 1e6 for name, t in ms.items()}
        best = max((n for n in gbs if n.startswith("ours")), key=lambda n: gbs[n])
        bm, th = (int(v) for v in best.split()[1].split("x"))
        bad, s_err, secs = errs[(bm, th)]
        ref_name = max((n for n in gbs if not n.startswith("ours")), key=lambda n: gbs[n])
        rows.append([f"swiglu+fp8 {M}x{N} g{group}{' S mn-major' if mn_major else ''}", f"{bad:.1e} / {s_err:.1e}",
                     best[5:], f"{gbs[best]:.0f}",
                     f"{100 * gbs[best] / copy_gbs():.0f}%", f"{gbs['torch']:.0f}",
                     f"{gbs.get('torch.compile', float('nan')):.0f}", f"{gbs[best] / gbs[ref_name]:.2f}x {ref_name}",
                     f"{secs:.2f}"])
        print(" | ".join(rows[-1]), {k: round(v) for k, v in gbs.items()}, flush=True)
    return ["case", "Q differs / S rel err", "tile", "ours GB/s", "of copy", "torch GB/s", "compile GB/s",
            "vs best torch", "compile s"], rows


#: MoE grouped GEMM cases (DeepSeek-V3-like: hidden 7168, expert width 2048; 8 or 32 experts on one
#: GPU): (name, groups, tokens routed per group on average, N, K). Many small groups are where a loop
#: of GEMMs leaves the GPU idle (one group's tiles fill a fraction of the SMs).
GROUPED_CASES = (("gate/up", 8, 1024, 4096, 7168), ("down", 8, 1024, 7168, 2048), ("gate/up", 32, 256, 4096, 7168),
                 ("gate/up", 32, 128, 4096, 7168), ("down", 32, 128, 7168, 2048), ("gate/up", 64, 64, 4096, 7168))
GROUPED_TILES = ((128, 128, 64, 4, 256), (128, 256, 64, 3, 256))


def grouped_rows(pass_configs):
    """Grouped GEMM for MoE (examples/moe/grouped_gemm.py), bf16, in DeepGEMM's contiguous layout
    (groups stacked, each padded to 128 rows) and masked layout (M_max rows per group, masked_m
    valid), against a loop of cuBLAS GEMMs over the groups and torch._grouped_mm where torch has it.
    TFLOP/s count the valid rows only (2 * tokens * N * K), the same work for every column."""
    moe = example("moe/grouped_gemm.py")
    rows = []
    for label, G, per_group, N, K in GROUPED_CASES:
        gen = torch.Generator().manual_seed(G * per_group)
        sizes = (torch.rand(G, generator=gen) * 2 * per_group).int().tolist()  # uneven, mean per_group
        flops = 2 * sum(sizes) * N * K
        b = torch.randn(G, N, K, device="cuda", dtype=torch.bfloat16)
        for layout in ("contiguous", "masked"):
            fns, kernels = {}, {}
            if layout == "contiguous":
                M, starts, tile_group = moe.pad_groups(sizes, 128)
                a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
                tile_group = tile_group.cuda()
                out = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
                parts = [(a[s:s + m], g, out[s:s + m]) for g, (s, m) in enumerate(zip(starts, sizes))]
                for bm, bn, bk, st, th in GROUPED_TILES:
                    kernel, secs = compile_timed(moe.grouped_gemm_contiguous, M, N, K, G, block_M=bm, block_N=bn,
                                                 block_K=bk, num_stages=st, threads=th, pass_configs=pass_configs)
                    kernels[f"ours {bm}x{bn}"] = (kernel, secs)
                    fns[f"ours {bm}x{bn}"] = lambda k=kernel: k(a, b, tile_group)
                ends = torch.tensor([s + m for s, m in zip(starts, sizes)], dtype=torch.int32, device="cuda")
                if hasattr(torch, "_grouped_mm"):
                    fns["torch._grouped_mm"] = lambda: torch._grouped_mm(a, b.transpose(-2, -1), offs=ends)
            else:
                M_max = max(sizes)
                a = torch.randn(G, M_max, K, device="cuda", dtype=torch.bfloat16)
                masked_m = torch.tensor(sizes, dtype=torch.int32, device="cuda")
                out = torch.empty(G, M_max, N, device="cuda", dtype=torch.bfloat16)
                parts = [(a[g, :m], g, out[g, :m]) for g, m in enumerate(sizes)]
                for bm, bn, bk, st, th in GROUPED_TILES:
                    kernel, secs = compile_timed(moe.grouped_gemm_masked, G, M_max, N, K, block_M=bm, block_N=bn,
                                                 block_K=bk, num_stages=st, threads=th, pass_configs=pass_configs)
                    kernels[f"ours {bm}x{bn}"] = (kernel, secs)
                    fns[f"ours {bm}x{bn}"] = lambda k=kernel: k(a, b, masked_m)
                fns["torch.bmm (all M_max rows)"] = lambda: torch.bmm(a, b.transpose(-2, -1))

            def loop(parts=parts):
                for x, g, o in parts:
                    torch.matmul(x, b[g].T, out=o)

            fns["cuBLAS loop"] = loop
            errs = {}
            for name, (kernel, secs) in kernels.items():
                c = fns[name]()
                worst = 0.0
                for (x, g, _), got in zip(parts, (c[s:s + m] for s, m in zip(starts, sizes)) if layout == "contiguous"
                                          else (c[g, :m] for g, m in enumerate(sizes))):
                    if len(x):
                        ref = x.double() @ b[g].double().T
                        worst = max(worst, ((got.double() - ref).norm() / ref.norm()).item())
                errs[name] = (worst, secs)
            ms = side_by_side(fns)
            tf = {name: flops / t / 1e9 for name, t in ms.items()}
            best = max(kernels, key=lambda n: tf[n])
            grouped = tf.get("torch._grouped_mm", tf.get("torch.bmm (all M_max rows)", float("nan")))
            rows.append([f"{label} {layout} G{G} {sum(sizes)} tok N{N} K{K}", f"{errs[best][0]:.1e}", best[5:],
                         f"{tf[best]:.0f}", f"{tf['cuBLAS loop']:.0f}", f"{grouped:.0f}",
                         f"{tf[best] / tf['cuBLAS loop']:.2f}x", f"{tf[best] / grouped:.2f}x", f"{errs[best][1]:.2f}"])
            print(" | ".join(rows[-1]), {k: round(v) for k, v in tf.items()}, flush=True)
    return ["case", "rel err", "tile", "ours TFLOP/s", "cuBLAS loop", "torch grouped/bmm", "vs loop",
            "vs grouped/bmm", "compile s"], rows


#: decode shapes of a 70B-class model's projections: (N, K); tokens M per case below
DEQUANT_SHAPES = ((8192, 8192), (28672, 8192), (8192, 28672))
DEQUANT_TILES = ((64, 128, 4), (64, 256, 4), (128, 128, 4), (64, 128, 8))


def dequant_rows(pass_configs):
    """Weight-only int4 GEMM for decoding (examples/dequant/w4a16_gemm.py), fp16, group 128,
    against cuBLAS on the same shape with fp16 weights (what a w4a16 kernel must beat by reading 4x
    fewer weight bytes). GB/s: the bytes the int4 kernel must read (codes, scales, activations)."""
    dq = example("dequant/w4a16_gemm.py")
    rows = []
    for N, K in DEQUANT_SHAPES:
        codes, s = dq.quantize(torch.randn(N, K), 128)
        wp, s = dq.pack_int4(codes).cuda(), s.half().cuda()
        w16 = ((codes.double() - 8).view(N, K // 128, 128) * s.cpu().double()[..., None]).view(N, K).half().cuda()
        for M in (1, 16):
            a = torch.randn(M, K, device="cuda", dtype=torch.float16)
            ref = a.double() @ w16.double().T
            fns, errs = {}, {}
            for bn, bk, st in DEQUANT_TILES:
                kernel, secs = compile_timed(dq.w4a16_gemm, M, N, K, block_N=bn, block_K=bk, num_stages=st,
                                             pass_configs=pass_configs)
                c = kernel(a, wp, s)
                errs[f"ours {bn}x{bk}x{st}"] = (((c.double() - ref).norm() / ref.norm()).item(), secs)
                fns[f"ours {bn}x{bk}x{st}"] = lambda k=kernel: k(a, wp, s)
            fns["cuBLAS fp16"] = lambda: torch.nn.functional.linear(a, w16)
            ms = side_by_side(fns, per_round=10)
            best = min((n for n in fns if n.startswith("ours")), key=lambda n: ms[n])
            moved = N * K // 2 + N * K // 128 * 2 + M * K * 2 + M * N * 2
            gbs = moved / ms[best] / 1e6
            rows.append([f"w4a16 M{M} N{N} K{K}", f"{errs[best][0]:.1e}", best[5:], f"{ms[best] * 1e3:.1f}",
                         f"{ms['cuBLAS fp16'] * 1e3:.1f}", f"{ms['cuBLAS fp16'] / ms[best]:.2f}x", f"{gbs:.0f}",
                         f"{100 * gbs / copy_gbs():.0f}%", f"{errs[best][1]:.2f}"])
            print(" | ".join(rows[-1]), {k: round(v * 1e3, 1) for k, v in ms.items()}, flush=True)
    return ["case", "rel err", "tile", "ours us", "cuBLAS fp16 us", "speedup", "ours GB/s", "of copy", "compile s"], rows


#: (block_M, block_N, stages, threads, slabs per iteration): slabs=2 promotes each slab under the other's gemm
#: (64x128 in 6 slots, 192x128 and 128x64 were never faster than 128x128 at s40's shapes)
FP8_BLOCK_TILES = ((128, 128, 4, 256, 1), (64, 128, 4, 128, 1), (128, 128, 3, 256, 2), (128, 128, 2, 256, 2),
                   (64, 128, 3, 128, 2))


def fp8_block_rows(pass_configs):
    """FP8 GEMM with DeepSeek-V3's block scales (examples/fp8/blockscaled_gemm.py: 1x128 scales of A,
    128x128 of B, promotion per 128-deep slab), bf16 out, against torch._scaled_mm with per-tensor
    scales (the issue's reference: one scale each, no promotion) and row-wise scales where torch
    has them, and our own unscaled e4m3 GEMM (the ceiling without promotion)."""
    bs = example("fp8/blockscaled_gemm.py")
    gemm = example("gemm/gemm.py")
    rows = []
    for M, N, K in ((4096, 4096, 4096), (8192, 8192, 8192), (4096, 7168, 2048)):
        a, sa = bs.quantize_1x128(torch.randn(M, K, device="cuda"))
        b, sb = bs.quantize_128x128(torch.randn(N, K, device="cuda"))
        ref = (a.double() * sa.double().repeat_interleave(128, 1)) @ \
            (b.double() * sb.double().repeat_interleave(128, 0)[:N].repeat_interleave(128, 1)).T
        fns, errs = {}, {}
        for bm, bn, st, th, slabs in FP8_BLOCK_TILES:
            kernel, secs = compile_timed(bs.blockscaled_gemm, M, N, K, block_M=bm, block_N=bn, num_stages=st,
                                         threads=th, slabs=slabs, pass_configs=pass_configs)
            c = kernel(a, b, sa, sb)
            name = f"ours {bm}x{bn}x{st}" + ("/2 slabs" if slabs == 2 else "")
            errs[name] = (((c.double() - ref).norm() / ref.norm()).item(), secs)
            fns[name] = lambda k=kernel: k(a, b, sa, sb)
        plain, _ = compile_timed(gemm.gemm, M, N, K, False, True, dtype="float8_e4m3fn", out_dtype="bfloat16",
                                 block_M=128, block_N=256, block_K=128, num_stages=4, threads=256,
                                 pass_configs=pass_configs)
        fns["ours unscaled"] = lambda: plain(a, b)
        one = torch.ones((), device="cuda")
        fns["_scaled_mm tensor"] = lambda: torch._scaled_mm(a, b.T, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
        ra, rb = torch.ones(M, 1, device="cuda"), torch.ones(1, N, device="cuda")
        fns["_scaled_mm rowwise"] = lambda: torch._scaled_mm(a, b.T, scale_a=ra, scale_b=rb, out_dtype=torch.bfloat16)
        ms = side_by_side(fns)
        tf = {name: 2 * M * N * K / t / 1e9 for name, t in ms.items()}
        best = max(errs, key=lambda n: tf[n])
        rows.append([f"fp8 block-scaled {M}x{N}x{K}", f"{errs[best][0]:.1e}", best[5:], f"{tf[best]:.0f}",
                     f"{tf['_scaled_mm tensor']:.0f}", f"{tf['_scaled_mm rowwise']:.0f}", f"{tf['ours unscaled']:.0f}",
                     f"{tf[best] / tf['_scaled_mm tensor']:.2f}x", f"{errs[best][1]:.2f}"])
        print(" | ".join(rows[-1]), {k: round(v) for k, v in tf.items()}, flush=True)
    return ["case", "rel err", "tile", "ours TFLOP/s", "_scaled_mm per-tensor", "_scaled_mm rowwise",
            "ours unscaled", "vs per-tensor", "compile s"], rows


def attention_lse(q, k, causal: bool):
    """(B, H, S) logsumexp of the scaled scores of BSHD ``q``, ``k`` per row, from float32 scores
    (a block of 1024 rows at a time keeps memory low): what the backward kernels read."""
    B, S, H, D = q.shape
    lse = torch.empty(B, H, S, device=q.device)
    for r in range(0, S, 1024):
        s = torch.einsum("bihd,bjhd->bhij", q[:, r:r + 1024].float(), k.float()) * D ** -0.5
        if causal:
            s.masked_fill_(torch.ones(s.shape[-2], S, dtype=torch.bool, device=q.device).triu(r + 1), float("-inf"))
        lse[:, :, r:r + 1024] = torch.logsumexp(s, -1)
    return lse


def attention_bwd_rows(pass_configs):
    """FlashAttention backward (examples/attention/flash_attention_bwd.py: delta kernel + per-key-block
    kernel, dQ by fp32 atomics) against torch SDPA's backward (flash and cuDNN), dQ/dK/dV from the
    same forward. Several tile choices are compiled and the fastest is reported with its tiles.
    FLOPs: five S x S x D matmuls, 10 B H S^2 D, halved for causal."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    ex = example("attention/flash_attention_bwd.py")
    tiles = [dict(block_M=64, block_N=64, num_stages=1, threads=128),
             dict(block_M=64, block_N=128, num_stages=1, threads=256),
             dict(block_M=64, block_N=128, num_stages=2, threads=256),
             dict(block_M=128, block_N=64, num_stages=1, threads=256)]
    # lse / delta read where used: warp-specialized on sm_90a (the example's stats="global")
    tiles += [dict(t, stats="global") for t in tiles[:3]]
    # FA3's D64 tile: all five gemms wgmma (at 64x128 D64's dQ gemm is mma.sync); 0.85x cuDNN at D64
    # on the H100 (stop 59) against 0.61x for 64x128
    tiles += [dict(block_M=128, block_N=128, num_stages=2, threads=256, stats="global")]
    # stats in shared memory by 1-D TMA boxes (stop 61; before, float32 kept those on cp.async)
    tiles += [dict(block_M=128, block_N=128, num_stages=2, threads=256)]
    if os.environ.get("ATTNBWD_TILES"):  # e.g. "2,6": a quick run of some of them (indices into tiles)
        tiles = [tiles[int(i)] for i in os.environ["ATTNBWD_TILES"].split(",")]
    rows = []
    # (the last two: GQA, `groups` query heads per K/V head)
    for B, H, S, D, causal, groups in ((8, 16, 4096, 128, False, 1), (8, 16, 4096, 128, True, 1),
                                       (8, 16, 4096, 64, False, 1), (8, 16, 4096, 128, False, 4),
                                       (8, 32, 4096, 128, True, 8)):
        q, do = (torch.randn(B, S, H, D, device="cuda", dtype=torch.float16) for _ in range(2))
        k, v = (torch.randn(B, S, H // groups, D, device="cuda", dtype=torch.float16) for _ in range(2))
        qt, kt, vt = (x.transpose(1, 2).detach().requires_grad_() for x in (q, k, v))
        gqa = dict(enable_gqa=True) if groups > 1 else {}
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            ot = torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=causal, **gqa)
        scores = attention_lse(q, k.repeat_interleave(groups, 2), causal)
        o = ot.detach().transpose(1, 2).contiguous()
        grads = torch.autograd.grad(ot, (qt, kt, vt), do.transpose(1, 2), retain_graph=True)
        ref = [g.transpose(1, 2).double() for g in grads]

        def sdpa_bwd(backend):
            with sdpa_kernel(backend):
                out = torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=causal, **gqa)
            return lambda: torch.autograd.grad(out, (qt, kt, vt), do.transpose(1, 2), retain_graph=True)

        best = None
        for t in tiles:
            try:
                got = ex.attention_backward(q, k, v, o, do, scores, causal, **t)
            except Exception as exc:  # a tile choice that does not compile is skipped, said so
                print(f"  tiles {t}: {type(exc).__name__}: {str(exc)[:120]}", flush=True)
                continue
            err = max(((g.double() - r).norm() / r.norm()).item() for g, r in zip(got, ref))
            ms = side_by_side({"ours": lambda t=t: ex.attention_backward(q, k, v, o, do, scores, causal, **t)},
                              rounds=5)["ours"]
            print(f"  tiles {t}: {ms:.3f} ms, rel err {err:.1e}", flush=True)
            if best is None or ms < best[0]:
                best = (ms, t, err)
        flops = 10 * B * H * S * S * D / (2 if causal else 1)
        ms = side_by_side({"flash": sdpa_bwd(SDPBackend.FLASH_ATTENTION), "cudnn": sdpa_bwd(SDPBackend.CUDNN_ATTENTION)},
                          rounds=5)
        name = f"attn bwd B{B} H{H} S{S} D{D}{' causal' if causal else ''}{f' groups {groups}' if groups > 1 else ''}"
        if best is None:
            rows.append([name, "-", "none compiled", "-", f"{flops / ms['flash'] / 1e9:.0f}",
                         f"{flops / ms['cudnn'] / 1e9:.0f}", "-"])
        else:
            ours = flops / best[0] / 1e9
            tile = f"{best[1]['block_M']}x{best[1]['block_N']} s{best[1]['num_stages']} t{best[1]['threads']}" + \
                (" global stats" if best[1].get("stats") == "global" else " shared stats")
            rows.append([name, f"{best[2]:.1e}", tile, f"{ours:.0f}", f"{flops / ms['flash'] / 1e9:.0f}",
                         f"{flops / ms['cudnn'] / 1e9:.0f}", f"{ours / (flops / ms['cudnn'] / 1e9):.2f}x"])
        print(" | ".join(rows[-1]), flush=True)
        del qt, kt, vt, ot, grads
    return ["case", "rel err", "tile", "ours TFLOP/s", "SDPA flash bwd", "SDPA cuDNN bwd", "vs cuDNN"], rows


#: (kind, batch, seq, heads, dim): TileLang's linear attention example's default shape and a long
#: one; its retention example's default (a fixed decay per head: our gated form) and a short one.
#: bench/linear_attention_tilelang.py times TileLang's own kernels on the same list.
LINATTN_SHAPES = (("linear", 1, 512, 16, 128), ("linear", 8, 4096, 16, 128),
                  ("retention", 8, 4096, 32, 128), ("retention", 1, 2048, 16, 128))
#: (block_V, threads, block_K): block_K None = dim_k whole; else split, partial outputs added into a
#: float32 O zeroed in the timed call (as TileLang's example is timed)
LINATTN_TILES = ((64, 128, None), (128, 128, None), (128, 256, None), (64, 256, None), (64, 128, 64),
                 (64, 256, 64), (128, 256, 64))


def _tilelang_times(kind: str) -> dict:
    """{(kind, batch, seq, heads, dim): ms} from the file TILELANG_LINATTN names (the probe's
    output), or {} where there is none."""
    import os

    path = os.environ.get("TILELANG_LINATTN")
    if not path or not os.path.exists(path):
        return {}
    out = {}
    for line in open(path):
        parts = line.split()
        if len(parts) == 7 and parts[0] == "TL" and parts[1] == kind:
            out[(kind, *map(int, parts[2:6]))] = float(parts[6])
    return out


def linear_attention_rows(pass_configs):
    """Chunked linear attention forward (examples/linear_attention/chunked_linear_attention.py),
    fp16, chunk 64, against TileLang 0.1.15's examples on the same shapes (linear_attn_fwd: no
    decay; retention_fwd: a fixed decay per head, here through the per-token log-decay input).
    Floors: FLOPs over 790 TFLOP/s; q, k, v, o once over 4.3 TB/s. Errors against the token
    recurrence in float64 on the first 256 tokens of batch 0."""
    la = example("linear_attention/chunked_linear_attention.py")
    rows = []
    for kind, B, S, H, D in LINATTN_SHAPES:
        q, k, v = (torch.randn(B, S, H, D, device="cuda", dtype=torch.float16) / D ** 0.25 for _ in range(3))
        g = torch.zeros(B, S, H, device="cuda")
        if kind == "retention":  # TileLang's example: log2 decay log2(1 - 2^(-5 - h)) per head
            g += torch.log1p(-torch.exp2(-5.0 - torch.arange(H, device="cuda", dtype=torch.float32)))
        ref_o, _ = la.reference(q[:1, :256].cpu(), k[:1, :256].cpu(), v[:1, :256].cpu(), g[:1, :256].cpu())
        fns, errs = {}, {}
        for block_V, threads, block_K in LINATTN_TILES:
            name = f"ours V{block_V} t{threads}" + (f" K{block_K}" if block_K else "")
            try:
                if block_K:
                    kernel, secs = compile_timed(la.chunked_linear_attention_split_k, B, S, H, D, D,
                                                 block_V=block_V, block_K=block_K, threads=threads,
                                                 pass_configs=pass_configs)
                else:
                    kernel, secs = compile_timed(la.chunked_linear_attention, B, S, H, D, D, block_V=block_V,
                                                 threads=threads, pass_configs=pass_configs)
            except Exception as exc:  # a tile that does not fit: say so, keep the others
                print(name, type(exc).__name__, str(exc)[:200], flush=True)
                continue
            if block_K:
                o = torch.zeros(B, S, H, D, device="cuda")

                def run(kernel=kernel, o=o):
                    o.zero_()  # the blocks add their partial outputs into O
                    kernel(q, k, v, g, o)
                run()
            else:
                o, _ = kernel(q, k, v, g)
                run = lambda kernel=kernel: kernel(q, k, v, g)  # noqa: E731
            errs[name] = ((o[:1, :256].cpu().double() - ref_o).norm() / ref_o.norm()).item()
            fns[name] = run
        ms = side_by_side(fns, per_round=5)
        best = min(fns, key=lambda n: ms[n])
        flops = B * H * -(-S // 64) * (2 * 64 * 64 * 2 * D + 4 * 64 * D * D)
        nbytes = 4 * B * S * H * D * 2
        tl_ms = _tilelang_times(kind).get((kind, B, S, H, D))
        rows.append([f"{kind} B{B} S{S} H{H} D{D}", f"{errs[best]:.1e}", best[5:], f"{ms[best] * 1e3:.1f}",
                     f"{tl_ms * 1e3:.1f}" if tl_ms else "-", f"{tl_ms / ms[best]:.2f}x" if tl_ms else "-",
                     f"{flops / ms[best] / 1e9:.0f}", f"{nbytes / ms[best] / 1e6:.0f}",
                     f"{max(flops / 790e12, nbytes / 4300e9) * 1e6:.1f}"])
        print(" | ".join(rows[-1]), {n: round(t * 1e3, 1) for n, t in ms.items()}, flush=True)
    return ["case", "rel err", "tile", "ours us", "TileLang us", "TileLang/ours", "TFLOP/s", "GB/s", "floor us"], rows


SECTIONS = {"gemm": gemm_rows, "sustained": sustained_rows, "fp8": fp8_rows, "attention": attention_rows,
            "rowwise": rowwise_rows, "overhead": overhead_rows, "quant": quant_rows,
            "grouped": grouped_rows, "dequant": dequant_rows, "fp8block": fp8_block_rows,
            "attnbwd": attention_bwd_rows, "linattn": linear_attention_rows}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(SECTIONS), action="append")
    parser.add_argument("--pass-config", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    configs = {}
    for item in args.pass_config:
        key, _, value = item.partition("=")
        configs[key] = value.lower() in ("1", "true", "yes") if value.lower() in ("0", "1", "true", "false", "yes", "no") else value
    tables = []
    for name in args.only or list(SECTIONS):
        try:
            tables.append(SECTIONS[name](configs or None))
        except Exception as exc:  # keep going: the table is the point
            tables.append((["section", "error"], [[name, f"{type(exc).__name__}: {exc}"[:300]]]))
    print(f"\n{torch.cuda.get_device_name()}, torch {torch.__version__}, pass configs {configs or 'default'}")
    for header, rows in tables:
        print("\n| " + " | ".join(header) + " |\n|" + "---|" * len(header))
        for r in rows:
            print("| " + " | ".join(r) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
