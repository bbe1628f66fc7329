"""The CUDA benchmark table of issues 4 and 5, side by side in one run (H200).

    python bench/cuda_bench.py                 # everything (about 3 minutes)
    python bench/cuda_bench.py --only gemm     # gemm | sustained | fp8 | attention | attnbwd | rowwise | overhead | quant | grouped | dequant | fp8block | linattn
    python bench/cuda_bench.py --pass-config tl.disable_warp_specialized=1   # compare schedules

Kernels are the ones in examples/, compiled through tilelang_core.compile with target
cuda:sm_90a (the automatic schedule; only tile sizes are chosen here). Every case is checked
against torch in float64 first; times are medians of CUDA-event timings after warm-up. Ratios are
ours / theirs in throughput (higher is better).

The sections live by kind in rows_gemm.py, rows_attention.py and rows_memory.py; what they share
(timing in turns, examples, timed compiles) in bench_common.py.
"""

import argparse
import sys

import torch

from rows_attention import attention_bwd_rows, attention_rows, linear_attention_rows
from rows_gemm import dequant_rows, fp8_block_rows, fp8_rows, gemm_rows, grouped_rows, sustained_rows
from rows_memory import overhead_rows, quant_rows, rowwise_rows


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
