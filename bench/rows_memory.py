"""cuda_bench.py's memory-bound sections: row-wise kernels (softmax, norms), launch overhead, the
card's copy bandwidth and the SwiGLU + FP8 quantization casts."""

import time

import torch

from bench_common import compile_timed, example, side_by_side


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
