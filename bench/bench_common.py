"""What the CUDA benchmarks share: kernels from examples/, timing in turns (medians of CUDA events),
sustained timing with the clocks sampled, timed compiles, and the Ampere-class pass configs.

    from bench_common import AMPERE, compile_timed, example, side_by_side
"""

import importlib.util
import statistics
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


def square_sizes(description: str, default: str = "4096,8192") -> list[int]:
    """The ``--sizes`` of a square-GEMM bench's command line (M = N = K = each)."""
    import argparse

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--sizes", default=default)
    return [int(x) for x in parser.parse_args().sizes.split(",")]


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
