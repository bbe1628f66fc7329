"""SASS instruction histogram of TileKernels' per-token cast kernel, compiled here for sm_90a (no GPU).

The fp4 casts are instruction-bound, not memory-bound: this counts what one thread executes (32
elements at hidden 7168) so a change to the encoders can be compared before a GPU run.

    python bench/tilekernels_sass.py --tree .device/tk/ours --fmt e2m1 --input bf16 --hidden 7168

``--tree`` is TileKernels with its two imports changed (tools/tilekernels_suite.py makes it);
it runs in fake-CUDA mode (TLSUITE_FAKE_CUDA=1 with the suite plugin on PYTHONPATH, see
docs/tilelang-suite.md) because TileKernels' helpers ask torch for the device.
"""

from __future__ import annotations

import argparse
import collections
import re
import sys


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", required=True)
    ap.add_argument("--fmt", choices=["e4m3", "e2m1"], default="e2m1")
    ap.add_argument("--input", choices=["bf16", "fp32", "e4m3", "e2m1"], default="bf16")
    ap.add_argument("--hidden", type=int, default=7168)
    args = ap.parse_args()
    sys.path.insert(0, args.tree)
    import torch

    import tilelang_core as tl
    from tile_kernels.quant.common import CastInputConfig, get_cast_output_config
    from tile_kernels.quant.per_token_cast_kernel import get_per_token_cast_kernel

    out_config = get_cast_output_config(args.fmt, (1, 128), True, True, True)
    if args.input in ("e4m3", "e2m1"):  # scaled input in 128x128 blocks (fp4 arrives as int8 bytes)
        dtype = torch.float8_e4m3fn if args.input == "e4m3" else torch.int8
        in_config = CastInputConfig(torch_dtype=dtype, with_sf=True, sf_block=(128, 128))
    else:
        dtype = torch.bfloat16 if args.input == "bf16" else torch.float32
        in_config = CastInputConfig(torch_dtype=dtype, with_sf=False, sf_block=(1, args.hidden))
    with tl.Target("cuda:sm_90a"):
        func = get_per_token_cast_kernel.get_tir(hidden=args.hidden, token_stride=args.hidden,
                                                 in_config=in_config, out_config=out_config)
        kernel = tl.compile(func, target="cuda:sm_90a")
    ops = collections.Counter()
    for line in kernel.asm["sass"].splitlines():
        m = re.match(r"\s+/\*[0-9a-f]{4}\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9]*)", line)
        if m:
            ops[m.group(2)] += 1
    print(f"per_token_cast {args.input} -> {args.fmt}, hidden {args.hidden}: {sum(ops.values())} SASS instructions")
    print(", ".join(f"{op} {n}" for op, n in ops.most_common(16)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
