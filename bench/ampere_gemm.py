"""The Ampere-class GEMM path on the H200 (issue 4): ldmatrix + mma.sync + cp.async pipeline, i.e.
the GEMM example on cuda:sm_90a with wgmma and warp specialization turned off, for a few tile
configurations, next to cuBLAS (torch.matmul) in the same run.   python bench/ampere_gemm.py
Then int8 (mma.sync m16n8k32, int32 out) against torch._int_mm and float32 on tf32 tensor cores
against torch.matmul with TF32 allowed, each timed in turns with its reference.
    python bench/ampere_gemm.py --configs 128x128x64/3/128,256x128x64/3/256 --sizes 8192 --fp16-only

Each case is checked against torch in float64 (relative Frobenius error) before it is timed;
times are medians of CUDA-event timings after warm-up, every tile of a size and cuBLAS in turns
(bench_common.side_by_side). About a minute.
"""

import argparse

import torch

from bench_common import AMPERE, compile_timed, example, side_by_side, sustained

#: (block_M, block_N, block_K, num_stages, threads): 64x64 warp tiles on 8 warps (128x256, 256x128)
#: or 4 warps (128x128); BK=64 halves the barriers per FLOP
CONFIGS = [(128, 256, 32, 3, 256), (128, 256, 64, 4, 256), (256, 128, 64, 3, 256), (128, 128, 32, 4, 128)]
SIZES = (4096, 8192)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", help="tiles to time, e.g. 128x128x64/3/128,256x128x64/3/256 "
                        "(block_M x block_N x block_K / stages / threads; default: CONFIGS)")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="square GEMM sizes (default: 4096,8192)")
    parser.add_argument("--fp16-only", action="store_true", help="skip the int8 and tf32 table")
    parser.add_argument("--clocks", action="store_true", help="also time each tile and cuBLAS alone for 2 s with "
                        "the SM clock and power sampled: TFLOP/s per GHz compares the kernels at equal clocks")
    args = parser.parse_args()
    configs = [parse_config(c) for c in args.configs.split(",")] if args.configs else CONFIGS
    ex = example("gemm/gemm.py")
    header = ["size", "tile (MxNxK/stages/threads)", "rel err", "TFLOP/s", "cuBLAS", "ratio", "compile s"]
    rows, clock_rows = [], []
    print(" | ".join(header), flush=True)
    for size in map(int, args.sizes.split(",")):
        a = torch.randn(size, size, device="cuda", dtype=torch.float16)
        b = torch.randn(size, size, device="cuda", dtype=torch.float16)
        ref = a.double() @ b.double()
        flops = 2 * size ** 3
        kernels, checked = {}, {}
        for bm, bn, bk, stages, threads in configs:
            name = f"{bm}x{bn}x{bk}/{stages}/{threads}"
            kernel, secs = compile_timed(ex.gemm, size, size, size, block_M=bm, block_N=bn, block_K=bk,
                                         num_stages=stages, threads=threads, pass_configs=AMPERE)
            c = kernel(a, b)
            checked[name] = (((c.double() - ref).norm() / ref.norm()).item(), secs)
            kernels[name] = lambda kernel=kernel: kernel(a, b)
        # every tile and cuBLAS in turns, so that clock drift falls on all of them alike
        ms = side_by_side({**kernels, "cuBLAS": lambda: torch.matmul(a, b)})
        cublas = flops / ms["cuBLAS"] / 1e9
        for name, (err, secs) in checked.items():
            ours = flops / ms[name] / 1e9
            rows.append([f"{size}^3", name, f"{err:.1e}", f"{ours:.0f}", f"{cublas:.0f}", f"{ours / cublas:.2f}x",
                         f"{secs:.1f}"])
            print(" | ".join(rows[-1]), flush=True)
        if args.clocks:
            clock_rows.extend(clock_table(size, {**kernels, "cuBLAS": lambda: torch.matmul(a, b)}))
    print()
    table(header, rows)
    if clock_rows:
        print()
        table(["size", "kernel", "TFLOP/s", "SM MHz", "W", "TFLOP/s per GHz"], clock_rows)
    if not args.fp16_only:
        print()
        table(*other_dtypes(ex))


def clock_table(size, fns):
    """Each kernel alone for 2 s (bench_common.sustained): TFLOP/s, SM clock, power, TFLOP/s per GHz."""
    rows = []
    for name, fn in fns.items():
        ms, mhz, watts = sustained(fn)
        tflops = 2 * size ** 3 / ms / 1e9
        rows.append([f"{size}^3", name, f"{tflops:.0f}", f"{mhz:.0f}", f"{watts:.0f}", f"{tflops / mhz * 1e3:.0f}"])
        print(" | ".join(rows[-1]), flush=True)
    return rows


def parse_config(text):
    """"128x256x64/4/256" -> (128, 256, 64, 4, 256)."""
    tile, stages, threads = text.strip().split("/")
    return (*map(int, tile.split("x")), int(stages), int(threads))


def other_dtypes(ex):
    """int8 (B stored N x K, what ldmatrix feeds) and tf32 GEMMs at 8192^3 and 4096^3."""
    header = ["case", "rel err", "TFLOP/s (TOP/s)", "torch", "ratio", "compile s"]
    rows = []
    torch.backends.cuda.matmul.allow_tf32 = True
    for size in (4096, 8192):
        flops = 2 * size ** 3
        a8 = torch.randint(-128, 128, (size, size), device="cuda", dtype=torch.int8)
        b8 = torch.randint(-128, 128, (size, size), device="cuda", dtype=torch.int8)  # N x K
        a32, b32 = torch.randn(size, size, device="cuda"), torch.randn(size, size, device="cuda")
        cases = [("int8", a8, b8, True, dict(dtype="int8", accum_dtype="int32", out_dtype="int32", block_K=64),
                  lambda: torch._int_mm(a8, b8.t())),
                 ("tf32", a32, b32, False, dict(dtype="float32", accum_dtype="float32", block_K=32),
                  lambda: torch.matmul(a32, b32))]
        for name, a, b, trans_b, kw, reference in cases:
            try:
                kernel, secs = compile_timed(ex.gemm, size, size, size, False, trans_b, block_M=128, block_N=256,
                                             num_stages=3, threads=256, pass_configs=AMPERE, **kw)
                c = kernel(a, b)
                ref = a.double() @ (b.double().T if trans_b else b.double())
                err = ((c.double() - ref).norm() / ref.norm()).item()
                ms = side_by_side({"ours": lambda: kernel(a, b), "torch": reference})
                ours, theirs = flops / ms["ours"] / 1e9, flops / ms["torch"] / 1e9
                rows.append([f"{name} {size}^3", f"{err:.1e}", f"{ours:.0f}", f"{theirs:.0f}",
                             f"{ours / theirs:.2f}x", f"{secs:.1f}"])
            except Exception as exc:  # noqa: BLE001 - a missing torch path (e.g. _int_mm) is a row, not a crash
                rows.append([f"{name} {size}^3", "-", "-", "-", f"ERROR {type(exc).__name__}: {str(exc)[:80]}", "-"])
            print(" | ".join(rows[-1]), flush=True)
    return header, rows


def table(header, rows):
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    for r in [header] + rows:
        print("  ".join(str(x).ljust(w) for x, w in zip(r, widths)))


if __name__ == "__main__":
    main()
