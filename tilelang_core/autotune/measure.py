"""Checking and timing one compiled candidate: the same code in the parent (local executor) and in
a Ray task (``executor="ray"``).

A candidate may win only after its outputs matched ``ref_prog`` on fresh random inputs (or the
``set_autotune_inputs`` / ``supply_prog`` ones); then it is timed with the profiler (CUDA events on
GPU kernels, the CPU clock on the cpu backend). ``warmup`` and ``rep`` are call counts, as in
TileLang's tuner (0: the profiler's time budgets instead); the latency is the median in ms.

    settings = TimingSettings(warmup=25, rep=100, ref_prog=lambda a, b: a @ b)
    outcome = check_and_time(kernel, settings)     # {"ok": True, "latency": 0.42, ...}
"""

from __future__ import annotations

import threading
import traceback
from dataclasses import dataclass
from typing import Any, Callable

from .spec import error_summary


@dataclass
class TimingSettings:
    warmup: int = 25
    rep: int = 100
    supply_type: Any = None
    ref_prog: Callable | None = None
    supply_prog: Callable | None = None
    atol: float = 1e-2
    rtol: float = 1e-2
    max_mismatched_ratio: float = 0.01
    skip_check: bool = False
    manual_check_prog: Callable | None = None
    cache_input_tensors: bool = False
    backend: str = "event"
    #: early stop: a candidate whose first estimate is past best * factor is not measured further
    early_stop_factor: float | None = None


def _fits(params, tensors) -> bool:
    """Whether cached input tensors still match a candidate's input parameters."""
    if tensors is None or len(params) != len(tensors):
        return False
    for p, t in zip(params, tensors):
        if p.is_tensor and (tuple(getattr(t, "shape", ())) != tuple(p.shape)
                            or str(getattr(t, "dtype", "")).replace("torch.", "") != p.dtype):
            return False
    return True


def check_and_time(kernel, settings: TimingSettings, best_latency: float | None = None,
                   cache: dict | None = None) -> dict:
    """``{"ok", "latency", "stage", "error", "detail"}`` for one kernel; never raises.

    ``best_latency`` (ms) is the best so far, for early stop; ``cache`` holds the inputs between
    candidates when ``settings.cache_input_tensors`` is on.
    """
    stage = "check"
    try:
        profiler = kernel.get_profiler(settings.supply_type)
        input_params = [p for p in kernel.params if not p.is_output]
        inputs = None
        if settings.cache_input_tensors and cache is not None and _fits(input_params, cache.get("inputs")):
            inputs = cache["inputs"]
        elif settings.supply_prog is not None:  # TileLang passes the input parameters
            inputs = list(settings.supply_prog(input_params))
        elif settings.cache_input_tensors:
            inputs = profiler.make_inputs()
        if cache is not None and settings.cache_input_tensors:
            cache["inputs"] = inputs
        _check(profiler, settings, inputs)
        stage = "bench"
        baseline = (best_latency * settings.early_stop_factor
                    if settings.early_stop_factor and best_latency is not None else None)
        latency = profiler.do_bench(n_warmup=int(settings.warmup), n_repeat=int(settings.rep),
                                    input_tensors=inputs, backend=settings.backend,
                                    return_mode="median", early_stop_baseline=baseline)
    except BaseException as exc:  # noqa: BLE001 - one candidate's failure is a report, not a crash
        return {"ok": False, "latency": None, "stage": stage, "error": error_summary(exc),
                "detail": traceback.format_exc()}
    return {"ok": True, "latency": float(latency), "stage": "bench", "error": None, "detail": None}


def _check(profiler, settings: TimingSettings, inputs) -> None:
    if settings.skip_check or settings.ref_prog is None:
        return
    if settings.manual_check_prog is not None:
        profiler.manual_assert_close(settings.ref_prog, input_tensors=inputs,
                                     manual_check_prog=settings.manual_check_prog)
    else:
        profiler.assert_allclose(settings.ref_prog, input_tensors=inputs, atol=settings.atol,
                                 rtol=settings.rtol, max_mismatched_ratio=settings.max_mismatched_ratio)


def check_only(kernel, settings: TimingSettings) -> str | None:
    """None when ``kernel`` passes the settings' reference check (or there is none), else why not.
    For a result read from disk: the reference it was checked against then may not be this one."""
    try:
        inputs = None
        if settings.supply_prog is not None:
            inputs = list(settings.supply_prog([p for p in kernel.params if not p.is_output]))
        _check(kernel.get_profiler(settings.supply_type), settings, inputs)
    except BaseException as exc:  # noqa: BLE001 - reported to the caller, which searches again
        return error_summary(exc)
    return None


def time_reference(kernel, settings: TimingSettings) -> float | None:
    """The reference program's median ms on the winner's inputs (TileLang's ``ref_latency``);
    None without a reference or when it fails (it is a report, never a reason to fail the search)."""
    if settings.ref_prog is None:
        return None
    try:
        profiler = kernel.get_profiler(settings.supply_type)
        inputs = None
        if settings.supply_prog is not None:
            inputs = list(settings.supply_prog([p for p in kernel.params if not p.is_output]))
        return float(profiler.do_bench(settings.ref_prog, n_warmup=int(settings.warmup),
                                       n_repeat=int(settings.rep), input_tensors=inputs,
                                       backend=settings.backend, return_mode="median"))
    except Exception:  # noqa: BLE001
        return None


def run_with_timeout(fn: Callable[[], dict], timeout: float | None, what: str) -> dict:
    """Run ``fn`` in a watchdog thread. A kernel launch cannot be interrupted, so past the timeout
    the thread is abandoned (it finishes in the background) and the candidate is reported as
    timed out; TileLang's tuner does the same."""
    if not timeout:
        return fn()
    box: dict = {}

    def target():
        box["result"] = fn()

    thread = threading.Thread(target=target, name=f"tilelang-autotune-{what}", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        return {"ok": False, "latency": None, "stage": "timeout", "timeout": True, "detail": None,
                "error": f"timed out after {timeout:g} s ({what})"}
    return box["result"]
