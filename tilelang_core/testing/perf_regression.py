"""TileLang's performance-regression entry points (``tilelang.testing.process_func/regression``).

An example's ``regression_*.py`` script defines ``regression_<case>()`` functions that each call
``process_func(run_regression_perf)`` (a function returning a latency), and ends with
``regression()``, which runs every such function of the calling module and prints the latencies::

    def regression_gemm():
        tilelang_core.testing.process_func(example_gemm.run_regression_perf)

    if __name__ == "__main__":
        tilelang_core.testing.regression()

Output: one ``name: latency`` line per result, or with ``TL_PERF_REGRESSION_FORMAT=json`` one line
``__TILELANG_PERF_RESULTS_JSON__=[{"name", "latency", "case"}...]`` for a collector to parse.
``TL_PERF_REGRESSION_ONLY`` (comma list or JSON list of patterns, fnmatch or substring) picks cases.
These two variables are TileLang's and belong to its collector, so they are read here and not
through ``tilelang_core.config``.
"""

from __future__ import annotations

import fnmatch
import inspect
import json
import logging
import os
import time
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Sequence

JSON_PREFIX = "__TILELANG_PERF_RESULTS_JSON__="
_RETRIES = 5


@dataclass(frozen=True)
class PerfResult:
    name: str
    latency: float
    case: str | None = None


_results: list[PerfResult] = []
_current_case: str | None = None


def process_func(func: Callable[..., float], name: str | None = None, /, **kwargs: Any) -> None:
    """Call ``func(**kwargs)`` and record the latency it returns under ``name`` (default: the
    function's module, ``regression_`` stripped). A non-positive latency is retried a few times,
    then dropped with a RuntimeWarning: it means the measurement failed."""
    label = getattr(func, "__module__", "<unknown>") if name is None else name
    label = label[len("regression_"):] if label.startswith("regression_") else label
    latency = float(func(**kwargs))
    for _ in range(_RETRIES):
        if latency > 0.0:
            break
        latency = float(func(**kwargs))
    if latency <= 0.0:
        warnings.warn(f"{label} has latency {latency} <= 0; check the profiling", RuntimeWarning, 2)
        return
    _results.append(PerfResult(label, latency, _current_case))


def _filters() -> list[str]:
    raw = os.environ.get("TL_PERF_REGRESSION_ONLY", "").strip()
    if not raw:
        return []
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw.split(",")
    value = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    return [str(v).strip() for v in value if str(v).strip()]


def _selected(names: Sequence[str], patterns: Sequence[str]) -> bool:
    if not patterns:
        return True
    return any(fnmatch.fnmatch(n.lower(), p.lower()) or p.lower() in n.lower()
               for n in names for p in patterns)


def regression(prefixes: Sequence[str] = ("regression_",), verbose: bool = True) -> None:
    """Run every function of the calling module whose name starts with one of ``prefixes`` (in
    name order), then print what ``process_func`` recorded (see the module docstring)."""
    global _current_case

    caller = inspect.currentframe().f_back.f_globals  # type: ignore[union-attr]
    _results.clear()
    cases = sorted((k, v) for k, v in list(caller.items())
                   if callable(v) and any(k.startswith(p) for p in prefixes))
    patterns = _filters()

    def short(name: str) -> str:
        return name[len("regression_"):] if name.startswith("regression_") else name

    cases = [(k, v) for k, v in cases if _selected((k, short(k)), patterns)]
    for i, (name, fn) in enumerate(cases, 1):
        _current_case = short(name)
        if verbose:
            print(f"  ├─ [{i}/{len(cases)}] {_current_case}", end="", flush=True)
        start = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                logging.disable(logging.WARNING)
                try:
                    fn()
                finally:
                    logging.disable(logging.NOTSET)
            if verbose:
                print(f" ({time.perf_counter() - start:.2f}s)", flush=True)
        finally:
            _current_case = None
    if os.environ.get("TL_PERF_REGRESSION_FORMAT", "text").strip().lower() == "json":
        items = [{"name": r.name, "latency": r.latency, **({"case": r.case} if r.case else {})}
                 for r in _results]
        print(JSON_PREFIX + json.dumps(items, separators=(",", ":")))
    else:
        for r in _results:
            print(f"{r.name}: {r.latency}")


__all__ = ["PerfResult", "process_func", "regression"]
