"""MLA decode over a paged KV cache (examples/attention/mla_decode.py) on the GPU: median time of
the split kernel + combine over CUDA events, against the floors (FLOPs over 790 TFLOP/s, bytes of
KV/Q/O over this card's device-to-device copy bandwidth, measured in the same run: ~4.3 TB/s on the
H200, ~3.0 on the H100). TileLang's own example runs in a process of its own (it needs
its own PYTHONPATH): .device/s43/mla_probe.py shows how, same shapes.

    python bench/mla_decode.py [--heads 128 --dim 512 --pe-dim 64]
"""

import argparse
import importlib.util
from pathlib import Path

import torch

from rows_memory import copy_gbs  # (this script's folder is on sys.path when run as a script)

spec = importlib.util.spec_from_file_location("mla_decode", Path(__file__).resolve().parents[1] / "examples" /
                                              "attention" / "mla_decode.py")
mla = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mla)


def median_ms(fn, iters=50):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    return sorted(times)[len(times) // 2]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--heads", type=int, default=128)
    parser.add_argument("--dim", type=int, default=512)
    parser.add_argument("--pe-dim", type=int, default=64)
    args = parser.parse_args()
    h, d, pe = args.heads, args.dim, args.pe_dim
    copy = copy_gbs()  # (rows_memory.py's: measured once, printed)
    print(torch.cuda.get_device_name())
    print("batch seqlen split | ms | GB/s | % of copy | TFLOP/s | rel err vs float64")
    # (batch 1 with 64 splits: 2 head blocks x 64 = 128 CTAs, about one per SM, as the others have)
    for batch, seqlen, split in [(1, 8192, 8), (1, 8192, 64), (16, 8192, 4), (32, 8192, 2), (64, 8192, 1),
                                 (132, 8192, 1)]:
        inputs = mla.make_inputs(batch, h, d, pe, seqlen, 64, device="cuda")
        inputs[-1].fill_(seqlen)  # every sequence full length: the bandwidth number means the cache
        out = mla.mla_decode(*inputs, num_split=split, num_stages=2)
        # the float64 reference of the first two sequences (all of them take minutes on the CPU)
        q, q_pe, kv, k_pe, table, lens = inputs
        ref = mla.reference(q[:2], q_pe[:2], kv, k_pe, table[:2], lens[:2])
        err = ((out[:2].cpu().double() - ref).norm() / ref.norm()).item()
        ms = median_ms(lambda: mla.mla_decode(*inputs, num_split=split, num_stages=2))
        nbytes = batch * seqlen * (d + pe) * 2 + batch * h * (2 * d + pe) * 2
        flops = 2 * batch * h * seqlen * (2 * d + pe)
        gbs = nbytes / ms / 1e6
        print(f"{batch} {seqlen} {split} | {ms:.4f} | {gbs:.0f} | {100 * gbs / copy:.0f}% | "
              f"{flops / ms / 1e9:.0f} | {err:.1e}", flush=True)


if __name__ == "__main__":
    main()
