"""Where causal attention's time goes under each tile schedule (B8 H16 S4096 D128, H200).

    python bench/causal_probe.py            # every schedule in turns with cuDNN, then device-only times
    ncu --clock-control none --nvtx --nvtx-include "prof/" --section SpeedOfLight --section LaunchStats \\
        --section WarpStateStats python bench/causal_probe.py --ncu     # default vs dynamic scheduler

Schedules: one CTA per tile (the default), the same launched longest first, and the dynamic tile
scheduler (``tl.enable_persistent``) with heads taken 1, 8 (its default) or all 128 at a time
(``tile_scheduler.CHUNK``, patched per build; the disk cache is off so each build sees it).
Two timings: CUDA events around back-to-back calls (what the benchmark table measures, host work
of each call included where the GPU waits for it) and the kernels' own durations from the
profiler (device only). A gap between the two is host or stream work, not the kernel.
"""

import os
import statistics
import sys

os.environ["TILELANG_DISABLE_CACHE"] = "1"

import torch  # noqa: E402

from rows_attention import attention_inputs  # noqa: E402
from bench_common import compile_timed, example, side_by_side  # noqa: E402
from ncu_profile import profiled  # noqa: E402

B, H, S, D = 8, 16, 4096, 128
FLOPS = 4 * B * H * S * S * D / 2
SCHEDULES = [  # (label, pass configs, tile_scheduler.CHUNK)
    ("one CTA per tile", None, None),
    ("longest first", {"tl.enable_longest_first": True}, None),
    ("dynamic, chunk 8", {"tl.enable_persistent": True}, 8),
    ("dynamic, chunk 1", {"tl.enable_persistent": True}, 1),
    ("dynamic, chunk 128", {"tl.enable_persistent": True}, 128),
]


def build(attention, label, configs, chunk):
    from tilelang_core.jit import clear_memory_cache
    from tilelang_cuda.hopper import tile_scheduler

    clear_memory_cache()  # the in-memory memo's key does not see CHUNK either
    if chunk is not None:
        tile_scheduler.CHUNK = chunk
    kernel, secs = compile_timed(attention.flash_attention, B, H, S, D, True, block_M=128, block_N=128,
                                 num_stages=2, threads=256, pass_configs=configs)
    tile_scheduler.CHUNK = 8
    return kernel, secs


def device_ms(fn, calls=20):
    """Median device duration of the kernels ``fn`` launches (the profiler's CUDA activity), ms,
    and the names of the kernels seen."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    events = [e for e in prof.events() if e.device_type == DeviceType.CUDA]
    longest = max(events, key=lambda e: e.time_range.elapsed_us()).name if events else "?"
    times = [e.time_range.elapsed_us() for e in events if e.name == longest] or [float("nan")]
    others = sorted({e.name[:40] for e in events if e.name != longest})
    return statistics.median(times) / 1e3, others


def main():
    from torch.nn.attention import SDPBackend

    attention = example("attention/flash_attention.py")
    q, k, v, sdpa = attention_inputs(B, H, S, D, True)
    cudnn = sdpa(SDPBackend.CUDNN_ATTENTION)
    ref = cudnn().transpose(1, 2).double()
    picked = SCHEDULES[:3:2] if "--ncu" in sys.argv else SCHEDULES
    fns = {}
    for label, configs, chunk in picked:
        kernel, secs = build(attention, label, configs, chunk)
        err = (kernel(q, k, v).double() - ref).abs().max().item()
        print(f"{label}: built in {secs:.2f} s, max err {err:.1e}", flush=True)
        fns[label] = lambda kernel=kernel: kernel(q, k, v)
    if "--ncu" in sys.argv:
        for label, fn in [*fns.items(), ("cuDNN", cudnn)]:
            profiled(label, fn)
        return 0
    ms = side_by_side({**fns, "cuDNN": cudnn}, rounds=15, per_round=2)
    print(f"\ncausal attention B{B} H{H} S{S} D{D}, in turns with cuDNN")
    print("| schedule | events TFLOP/s | vs cuDNN | device-only TFLOP/s | other kernels |")
    print("|---|---|---|---|---|")
    for label in [*fns, "cuDNN"]:
        dev, others = device_ms(fns.get(label, cudnn))
        print(f"| {label} | {FLOPS / ms[label] / 1e9:.0f} | {ms['cuDNN'] / ms[label]:.2f}x | "
              f"{FLOPS / dev / 1e9:.0f} | {', '.join(others) or '-'} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
