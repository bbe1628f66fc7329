"""Checking and timing one compiled candidate: the same code in the parent (local executor) and in
a Ray task (``executor="ray"``).

A candidate may win only after its outputs matched ``ref_prog`` on fresh random inputs; then it is
timed with the profiler (CUDA events on GPU kernels, the CPU clock on the cpu backend).

    settings = TimingSettings(warmup=25, rep=100, ref_prog=lambda a, b: a @ b)
    outcome = check_and_time(kernel, settings)     # {"ok": True, "latency": 0.42, ...}
"""

from __future__ import annotations

import threading
import traceback
from dataclasses import dataclass
from typing import Any, Callable

from ..errors import ResultMismatchError
from .spec import error_summary


@dataclass
class TimingSettings:
    warmup: float = 25.0
    rep: float = 100.0
    supply_type: Any = None
    ref_prog: Callable | None = None
    supply_prog: Callable | None = None
    atol: float = 1e-2
    rtol: float = 1e-2
    max_mismatched_ratio: float = 0.01
    skip_check: bool = False
    manual_check_prog: Callable | None = None


def check_and_time(kernel, settings: TimingSettings) -> dict:
    """``{"ok", "latency", "stage", "error", "detail"}`` for one kernel; never raises."""
    stage = "check"
    try:
        profiler = kernel.get_profiler(settings.supply_type)
        inputs = settings.supply_prog(kernel.params) if settings.supply_prog else None
        if not settings.skip_check:
            if settings.ref_prog is not None:
                profiler.assert_allclose(settings.ref_prog, input_tensors=inputs, atol=settings.atol,
                                         rtol=settings.rtol,
                                         max_mismatched_ratio=settings.max_mismatched_ratio)
            if settings.manual_check_prog is not None:
                ins = inputs if inputs is not None else profiler.make_inputs()
                outs = kernel(*ins)
                if settings.manual_check_prog(*ins, outs) is False:
                    raise ResultMismatchError(f"manual_check_prog rejected kernel '{kernel.name}'")
        stage = "bench"
        latency = profiler.do_bench(warmup=settings.warmup, rep=settings.rep, input_tensors=inputs)
    except BaseException as exc:  # noqa: BLE001 - one candidate's failure is a report, not a crash
        return {"ok": False, "latency": None, "stage": stage, "error": error_summary(exc),
                "detail": traceback.format_exc()}
    return {"ok": True, "latency": float(latency), "stage": "bench", "error": None, "detail": None}


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
