"""do_bench: time a callable in milliseconds, with CUDA events on a GPU and a monotonic clock on a CPU.

TileLang's signature and units (``tilelang.profiler.do_bench``)::

    ms = do_bench(lambda: kernel(a, b))                         # mean ms per call
    ms = do_bench(fn, warmup=50, rep=200, backend="cupti")      # kernel time from the profiler
    p50, p20, p80 = do_bench(fn, quantiles=[0.5, 0.2, 0.8])

On CUDA it follows the usual method: synchronize, estimate one call's time, warm up for ``warmup``
ms, then time ``rep`` ms worth of calls one event pair each, flushing the L2 cache before every
timed call (a ``cache_size`` MB write) so the inputs are read from memory as in a real model.
``backend="cudagraph"`` captures the call once and replays it, which removes launch gaps for tiny
kernels; ``backend="cupti"`` sums the device time of the kernels the call launches (torch's
profiler, flushes excluded), and falls back to CUDA events with a one-time note where the profiler
records no kernels. Every path returns milliseconds per call.

``device`` picks where the clock runs: None (TileLang's default: the current CUDA device when torch
sees one, else the CPU clock), ``"cpu"``, ``"cuda"``, ``"cuda:N"``, a CUDA index or a
``torch.device``. Torch is imported only when a CUDA device is asked for or looked for.
"""

from __future__ import annotations

import math
import statistics
import time
import warnings
from dataclasses import dataclass
from typing import Callable, Sequence

from ..errors import ConfigError

BACKENDS = ("event", "cupti", "cudagraph")
RETURN_MODES = ("min", "max", "mean", "median")
_FLUSH_LABEL = "tilelang_core::l2_flush"
_noted: set[str] = set()


@dataclass(frozen=True)
class BenchResult:
    """Per-call times in milliseconds. ``method`` says how they were taken: ``cpu-clock``,
    ``cuda-event``, ``cuda-graph`` or ``cupti`` (one sample: the mean kernel time)."""

    times_ms: tuple[float, ...]
    device: str
    method: str = ""

    @property
    def median(self) -> float:
        return statistics.median(self.times_ms)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.times_ms)

    @property
    def min(self) -> float:
        return min(self.times_ms)

    @property
    def max(self) -> float:
        return max(self.times_ms)

    def quantile(self, q: float) -> float:
        """Linear interpolation between the closest ranks (``torch.quantile``'s rule)."""
        if not 0.0 <= q <= 1.0:
            raise ConfigError(f"quantile {q} is outside [0, 1]")
        ordered = sorted(self.times_ms)
        pos = q * (len(ordered) - 1)
        lo, hi = math.floor(pos), math.ceil(pos)
        return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)

    def summary(self, return_mode: str = "mean", quantiles: Sequence[float] | None = None):
        """TileLang's answer: the ``quantiles`` (a float for one of them) or the ``return_mode``
        statistic."""
        if quantiles is not None:
            values = [self.quantile(q) for q in quantiles]
            return values[0] if len(values) == 1 else values
        if return_mode not in RETURN_MODES:
            raise ConfigError(f"return_mode must be one of {', '.join(RETURN_MODES)}, got {return_mode!r}")
        return getattr(self, return_mode)


def note_once(key: str, message: str) -> None:
    """A RuntimeWarning the first time ``key`` comes up in this process."""
    if key in _noted:
        return
    _noted.add(key)
    warnings.warn(message, RuntimeWarning, stacklevel=3)


def resolve_device(device) -> tuple[str, int | None]:
    """``("cpu", None)`` or ``("cuda", index or None)`` for a ``device`` argument (see module doc)."""
    if device is None:
        try:
            import torch
        except ImportError:  # pragma: no cover - the profiler's users have torch
            return "cpu", None
        return ("cuda", None) if torch.cuda.is_available() else ("cpu", None)
    if isinstance(device, bool):
        raise ConfigError(f"do_bench(device={device!r}) is not a device")
    if isinstance(device, int):
        return "cuda", device
    text = str(device)
    if text == "cpu":
        return "cpu", None
    if text == "cuda":
        index = None if isinstance(device, str) else getattr(device, "index", None)  # torch.device
        return "cuda", index
    if text.startswith("cuda:") and text[5:].isdigit():
        return "cuda", int(text[5:])
    raise ConfigError(f"do_bench(device={device!r}): give 'cpu', 'cuda', 'cuda:N', a CUDA index or a "
                      f"torch.device of those")


def _check(warmup_ms: float, rep_ms: float, min_reps: int, max_reps: int, backend: str) -> None:
    if warmup_ms < 0 or rep_ms <= 0:
        raise ConfigError(f"do_bench needs warmup_ms >= 0 and rep_ms > 0, got {warmup_ms}, {rep_ms}")
    if not 1 <= min_reps <= max_reps:
        raise ConfigError(f"do_bench needs 1 <= min_reps <= max_reps, got {min_reps}, {max_reps}")
    if backend not in BACKENDS:
        raise ConfigError(f"do_bench(backend={backend!r}) is not one of {', '.join(BACKENDS)}")


def measure(fn: Callable[[], object], *, device=None, warmup_ms: float = 25.0, rep_ms: float = 100.0,
            flush_l2: bool = True, cuda_graph: bool = False, min_reps: int = 5, max_reps: int = 10000,
            n_warmup: int = 0, n_repeat: int = 0, backend: str = "event", cache_size: int = 256,
            early_stop_baseline: float | None = None) -> BenchResult:
    """Time ``fn`` and return every sample (see :func:`do_bench` for the arguments).

    ``n_warmup``/``n_repeat``, when positive, fix the call counts instead of the time budgets.
    """
    if cuda_graph:
        backend = "cudagraph"
    _check(warmup_ms, rep_ms, min_reps, max_reps, backend)
    kind, index = resolve_device(device)
    if kind == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise ConfigError(f"do_bench(device={device!r}) but torch sees no CUDA device")
        if index is None:
            return _measure_cuda(fn, torch, warmup_ms, rep_ms, flush_l2, backend, min_reps, max_reps,
                                 n_warmup, n_repeat, cache_size, early_stop_baseline)
        with torch.cuda.device(index):
            return _measure_cuda(fn, torch, warmup_ms, rep_ms, flush_l2, backend, min_reps, max_reps,
                                 n_warmup, n_repeat, cache_size, early_stop_baseline)
    if backend == "cudagraph":
        raise ConfigError("backend='cudagraph' (cuda_graph=True) needs device='cuda'; CPU code is "
                          "timed with the CPU clock")
    if backend == "cupti":
        note_once("cupti-cpu", "do_bench(backend='cupti') on the CPU: timed with the CPU clock "
                               "(milliseconds per call, as CUPTI would give)")
    return _measure_cpu(fn, warmup_ms, rep_ms, min_reps, max_reps, n_warmup, n_repeat,
                        early_stop_baseline)


def do_bench(fn: Callable[[], object], warmup: float = 25, rep: float = 100, _n_warmup: int = 0,
             _n_repeat: int = 0, quantiles: Sequence[float] | None = None, fast_flush: bool = True,
             backend: str = "event", return_mode: str = "mean", device=None, cache_size: int = 256,
             early_stop_baseline: float | None = None, *, warmup_ms: float | None = None,
             rep_ms: float | None = None, flush_l2: bool = True, cuda_graph: bool = False):
    """Milliseconds per call of ``fn`` (TileLang's ``do_bench``).

    ``warmup``/``rep`` are time budgets in ms (``warmup_ms``/``rep_ms`` are the same, by their
    older names); ``_n_warmup``/``_n_repeat``, when positive, fix the counts instead.
    ``return_mode`` is mean (default), median, min or max; ``quantiles=[0.5, 0.2, 0.8]`` returns
    those instead (a float for one). ``backend``: event, cupti or cudagraph (see the module doc).
    ``early_stop_baseline`` (ms): when the first estimate is already slower, that estimate is
    returned without the full measurement. ``fast_flush`` is accepted for TileLang's signature
    (the flush always writes int32s); ``flush_l2=False`` skips the flush.

    Example::

        ms = do_bench(lambda: kernel(a, b, c))
        tflops = 2 * M * N * K / ms / 1e9
    """
    del fast_flush  # TileLang's int8-vs-int32 choice of flush buffer: no effect on what is timed
    result = measure(fn, device=device, warmup_ms=float(warmup if warmup_ms is None else warmup_ms),
                     rep_ms=float(rep if rep_ms is None else rep_ms), flush_l2=flush_l2,
                     cuda_graph=cuda_graph, n_warmup=_n_warmup, n_repeat=_n_repeat, backend=backend,
                     cache_size=cache_size, early_stop_baseline=early_stop_baseline)
    return result.summary(return_mode, quantiles)


def _reps_for(estimate_ms: float, budget_ms: float, min_reps: int, max_reps: int) -> int:
    return max(min_reps, min(max_reps, int(budget_ms / max(estimate_ms, 1e-6))))


def _counts(estimate, warmup_ms, rep_ms, min_reps, max_reps, n_warmup, n_repeat) -> tuple[int, int]:
    warm = n_warmup if n_warmup > 0 else (
        0 if warmup_ms == 0 else _reps_for(estimate, warmup_ms, 1, max_reps))
    reps = n_repeat if n_repeat > 0 else _reps_for(estimate, rep_ms, min_reps, max_reps)
    return warm, reps


def _measure_cpu(fn, warmup_ms, rep_ms, min_reps, max_reps, n_warmup, n_repeat, baseline) -> BenchResult:
    start = time.perf_counter()
    fn()
    estimate = (time.perf_counter() - start) * 1e3
    if baseline is not None and estimate > baseline:
        return BenchResult((estimate,), "cpu", "cpu-clock")
    warm, reps = _counts(estimate, warmup_ms, rep_ms, min_reps, max_reps, n_warmup, n_repeat)
    for _ in range(warm):
        fn()
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1e3)
    return BenchResult(tuple(samples), "cpu", "cpu-clock")


def _measure_cuda(fn, torch, warmup_ms, rep_ms, flush_l2, backend, min_reps, max_reps, n_warmup,
                  n_repeat, cache_size, baseline) -> BenchResult:
    cache = (torch.empty(int(cache_size) * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
             if flush_l2 else None)
    call = _graphed(fn, torch) if backend == "cudagraph" else fn
    call()
    torch.cuda.synchronize()
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    begin.record()
    for _ in range(5):
        call()
    end.record()
    torch.cuda.synchronize()
    estimate = begin.elapsed_time(end) / 5
    method = "cuda-graph" if backend == "cudagraph" else "cuda-event"
    if baseline is not None and estimate > baseline:
        return BenchResult((estimate,), "cuda", method)
    warm, reps = _counts(estimate, warmup_ms, rep_ms, min_reps, max_reps, n_warmup, n_repeat)
    for _ in range(warm):
        call()
    if backend == "cupti":
        per_call = _cupti_ms(call, torch, cache, reps)
        if per_call is not None:
            return BenchResult((per_call,), "cuda", "cupti")
        note_once("cupti-missing", "do_bench(backend='cupti'): torch's profiler recorded no CUDA "
                                   "kernels (CUPTI unavailable?); timing with CUDA events instead "
                                   "(milliseconds per call, launch gaps included)")
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        if cache is not None:
            cache.zero_()
        starts[i].record()
        call()
        ends[i].record()
    torch.cuda.synchronize()
    return BenchResult(tuple(s.elapsed_time(e) for s, e in zip(starts, ends)), "cuda", method)


def _cupti_ms(fn, torch, cache, reps: int) -> float | None:
    """Mean device time per call of the kernels ``fn`` launches, in ms, from torch's profiler
    (CUPTI underneath); the L2 flushes run inside a labelled range whose time is taken out. None
    when the profiler cannot run or recorded no CUDA kernels."""
    from torch.profiler import ProfilerActivity, profile, record_function

    try:
        with warnings.catch_warnings():  # torch's own notes about profiler cycles
            warnings.simplefilter("ignore")
            prof = _profile_calls(fn, torch, cache, reps, profile, ProfilerActivity, record_function)
            events = prof.events()
    except Exception:  # noqa: BLE001 - any profiler failure means: time with events instead
        return None
    return _kernel_ms(events, reps)


def _profile_calls(fn, torch, cache, reps, profile, ProfilerActivity, record_function):
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            if cache is not None:
                with record_function(_FLUSH_LABEL):
                    cache.zero_()
            fn()
        torch.cuda.synchronize()
    return prof


def _kernel_ms(events, reps: int) -> float | None:
    """Mean per-call device time (ms) of the non-annotation CUDA events, the flush range's time
    taken out; None when there are none."""
    total_us = flush_us = 0.0
    kernels = 0
    for event in events:
        if getattr(getattr(event, "device_type", None), "name", "") != "CUDA":
            continue
        if getattr(event, "is_user_annotation", False):
            if event.name == _FLUSH_LABEL:
                flush_us += event.device_time_total
            continue
        total_us += event.self_device_time_total
        kernels += 1
    if kernels == 0:
        return None
    return max(total_us - flush_us, 0.0) / reps / 1e3


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
