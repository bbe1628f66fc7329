"""cuda_bench.py's GEMM sections: dense fp16/bf16 against cuBLAS and Triton, sustained clocks, fp8,
MoE grouped GEMM, w4a16 dequantized GEMM, FP8 block-scaled GEMM."""

import torch

from bench_common import AMPERE, compile_timed, example, side_by_side, sustained
from rows_memory import copy_gbs


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
