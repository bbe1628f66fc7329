"""Stream-K (tl.enable_stream_k) against the default GEMM schedules and the vendor libraries on
the H200, every group timed in turns in one measurement (bench/NOTES.md).

    python bench/stream_k.py [--repeat 2] [--size 4096]

Floor and prediction: a 128x256 tile at 4096^3 is 512 tiles, 3.88 waves on 132 SMs, so one CTA
per tile runs 4 tile-times (3.0% over the mean); 8192^3: 2048 tiles, 15.5 waves -> 16 (3.1%).
Stream-K turns the partial wave into an even share per CTA, minus the partial sums' round trip
(128 KB per cut tile through the L2).
"""

import argparse
import sys

import torch

from bench_common import compile_timed, example, side_by_side

WIDE = dict(block_M=128, block_N=256, block_K=64, num_stages=4, threads=256)
TWO_BLOCKS = dict(block_M=128, block_N=128, block_K=64, num_stages=2, threads=128)
FP8 = dict(block_M=128, block_N=256, block_K=128, num_stages=4, threads=256)
#: the default (stream-K where the cost model says it pays), and what it is measured against
VARIANTS = {"default": None, "no stream-K": {"tl.disable_stream_k": True},
            "CTA per tile": {"tl.disable_persistent": True}, "forced": {"tl.enable_stream_k": True}}


def _group(title, flops, ref_name, ref_fn, variants, check):
    built = {}
    for label, (kernel, secs) in variants.items():
        err = check(kernel())
        built[label] = kernel
        print(f"  {label}: err {err:.1e}, compile {secs:.2f}s", flush=True)
    ms = side_by_side({**built, ref_name: ref_fn}, rounds=15)
    ref = flops / ms[ref_name] / 1e9
    row = [title, f"{ref:.0f}"]
    for label in built:
        tf = flops / ms[label] / 1e9
        row.append(f"{label} {tf:.0f} ({tf / ref:.3f}x)")
    print(" | ".join(row), flush=True)
    return row


def gemm_group(ex, dtype, size):
    """The bench's 128x256 tile under each schedule, and 128x128 on two blocks per SM (which
    stream-K leaves alone)."""
    a = torch.randn(size, size, device="cuda", dtype=dtype)
    b = torch.randn(size, size, device="cuda", dtype=dtype)
    ref = a.double() @ b.double()
    name = str(dtype).split(".")[-1]

    def variant(cfg, tiles=WIDE):
        kernel, secs = compile_timed(ex.gemm, size, size, size, dtype=name, **tiles, pass_configs=cfg)
        return (lambda: kernel(a, b)), secs

    variants = {label: variant(cfg) for label, cfg in VARIANTS.items()}
    variants["128x128, 2 blocks/SM"] = variant(None, TWO_BLOCKS)  # the 8192 bench tile before stream-K
    return _group(f"gemm {name} {size}^3", 2 * size ** 3, "cuBLAS", lambda: torch.matmul(a, b), variants,
                  lambda c: ((c.double() - ref).norm() / ref.norm()).item())


def fp8_group(ex, size):
    a = (torch.randn(size, size, device="cuda") / 2).to(torch.float8_e4m3fn)
    b = (torch.randn(size, size, device="cuda") / 2).to(torch.float8_e4m3fn)
    one = torch.ones((), device="cuda")
    ref = a.double() @ b.double().T

    def variant(cfg):
        kernel, secs = compile_timed(ex.gemm, size, size, size, False, True, dtype="float8_e4m3fn",
                                     out_dtype="float16", **FP8, pass_configs=cfg)
        return (lambda: kernel(a, b)), secs

    return _group(f"gemm e4m3 {size}^3", 2 * size ** 3, "_scaled_mm",
                  lambda: torch._scaled_mm(a, b.T, scale_a=one, scale_b=one, out_dtype=torch.float16),
                  {label: variant(cfg) for label, cfg in VARIANTS.items()},
                  lambda c: ((c.double() - ref).norm() / ref.norm()).item())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2, help="measure every group this many times")
    parser.add_argument("--size", type=int, action="append", help="default 4096 and 8192")
    args = parser.parse_args()
    ex = example("gemm/gemm.py")
    rows = []
    for _ in range(args.repeat):
        for size in args.size or (4096, 8192):
            for dtype in (torch.float16, torch.bfloat16):
                rows.append(gemm_group(ex, dtype, size))
            rows.append(fp8_group(ex, size))
    print(f"\n{torch.cuda.get_device_name()}, torch {torch.__version__} (TFLOP/s; ratio to the reference)")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
