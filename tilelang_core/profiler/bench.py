"""do_bench: median time of a callable, with CUDA events on a GPU and a monotonic clock on a CPU.

On CUDA it follows the usual method: synchronize, estimate one call's time, warm up for
``warmup_ms``, then time ``rep_ms`` worth of calls one event pair each, flushing the L2 cache
before every timed call (a 256 MiB write) so the inputs are read from memory as in a real model.
With ``cuda_graph=True`` the calls are captured once and replayed, which removes launch gaps for
tiny kernels. Torch is imported only when a CUDA device is asked for.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Callable

from ..errors import ConfigError

_L2_FLUSH_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class BenchResult:
    """Per-call times in milliseconds."""

    times_ms: tuple[float, ...]
    device: str

    @property
    def median(self) -> float:
        return statistics.median(self.times_ms)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.times_ms)

    @property
    def min(self) -> float:
        return min(self.times_ms)

    def quantile(self, q: float) -> float:
        ordered = sorted(self.times_ms)
        return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def _check(warmup_ms: float, rep_ms: float, min_reps: int, max_reps: int) -> None:
    if warmup_ms < 0 or rep_ms <= 0:
        raise ConfigError(f"do_bench needs warmup_ms >= 0 and rep_ms > 0, got {warmup_ms}, {rep_ms}")
    if not 1 <= min_reps <= max_reps:
        raise ConfigError(f"do_bench needs 1 <= min_reps <= max_reps, got {min_reps}, {max_reps}")


def measure(fn: Callable[[], object], *, device: str = "cpu", warmup_ms: float = 25.0, rep_ms: float = 100.0,
            flush_l2: bool = True, cuda_graph: bool = False, min_reps: int = 5, max_reps: int = 10000) -> BenchResult:
    """Time ``fn`` and return every sample (see :func:`do_bench` for the arguments)."""
    _check(warmup_ms, rep_ms, min_reps, max_reps)
    if device.startswith("cuda"):
        return _measure_cuda(fn, warmup_ms, rep_ms, flush_l2, cuda_graph, min_reps, max_reps)
    if cuda_graph:
        raise ConfigError("cuda_graph=True needs device='cuda'")
    return _measure_cpu(fn, warmup_ms, rep_ms, min_reps, max_reps)


def do_bench(fn: Callable[[], object], *, device: str = "cpu", warmup_ms: float = 25.0, rep_ms: float = 100.0,
             flush_l2: bool = True, cuda_graph: bool = False, return_mode: str = "median") -> float:
    """Milliseconds per call of ``fn``: ``return_mode`` is median (default), mean or min.

    Example::

        ms = do_bench(lambda: kernel(a, b, c), device="cuda")
        tflops = 2 * M * N * K / ms / 1e9
    """
    result = measure(fn, device=device, warmup_ms=warmup_ms, rep_ms=rep_ms, flush_l2=flush_l2,
                     cuda_graph=cuda_graph)
    try:
        return {"median": result.median, "mean": result.mean, "min": result.min}[return_mode]
    except KeyError:
        raise ConfigError(f"return_mode must be median, mean or min, got {return_mode!r}") from None


def _reps_for(estimate_ms: float, budget_ms: float, min_reps: int, max_reps: int) -> int:
    return max(min_reps, min(max_reps, int(budget_ms / max(estimate_ms, 1e-6))))


def _measure_cpu(fn, warmup_ms, rep_ms, min_reps, max_reps) -> BenchResult:
    start = time.perf_counter()
    fn()
    estimate = (time.perf_counter() - start) * 1e3
    for _ in range(_reps_for(estimate, warmup_ms, 0 if warmup_ms == 0 else 1, max_reps)):
        fn()
    samples = []
    for _ in range(_reps_for(estimate, rep_ms, min_reps, max_reps)):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1e3)
    return BenchResult(tuple(samples), "cpu")


def _measure_cuda(fn, warmup_ms, rep_ms, flush_l2, cuda_graph, min_reps, max_reps) -> BenchResult:
    import torch

    if not torch.cuda.is_available():
        raise ConfigError("do_bench(device='cuda') but torch sees no CUDA device")
    cache = torch.empty(_L2_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda") if flush_l2 else None
    if cuda_graph:
        fn = _graphed(fn, torch)
    torch.cuda.synchronize()
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    begin.record()
    for _ in range(5):
        fn()
    end.record()
    torch.cuda.synchronize()
    estimate = begin.elapsed_time(end) / 5
    for _ in range(_reps_for(estimate, warmup_ms, 1, max_reps)):
        fn()
    reps = _reps_for(estimate, rep_ms, min_reps, max_reps)
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        if cache is not None:
            cache.zero_()
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return BenchResult(tuple(s.elapsed_time(e) for s, e in zip(starts, ends)), "cuda")


def _graphed(fn, torch):
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        fn()  # warm up outside the capture (allocations, lazy loading)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph.replay
