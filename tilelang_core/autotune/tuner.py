"""``@autotune``: pick the fastest correct config of a ``@jit`` kernel factory.

    @tl.autotune(configs={"block_M": [64, 128], "block_N": [64, 128]}, warmup=25, rep=100,
                 ref_prog=lambda a, b: a @ b, atol=1e-2, rtol=1e-2, timeout=60)
    @tl.jit(out_idx=[-1])
    def matmul(M, N, K, block_M=128, block_N=128): ...

    kernel = matmul(1024, 1024, 1024)          # tunes once (or reads the result from disk)
    result = matmul.tune(1024, 1024, 1024)     # AutotuneResult: config, latency, candidates, ...

A search: expand the config space; compile every candidate in parallel (``local.py``: a process
pool, or Ray tasks with ``executor="ray"``); strictly one at a time on the device, check each
compiled candidate against ``ref_prog`` on fresh random inputs and time it (``timing.py``: after
the compiles on the cpu backend, overlapped with them on GPU targets). Failed candidates
(compile error, wrong result, timeout) are reported with their config and skipped; a tqdm bar shows
progress and the best so far. The outcome is stored on disk (``results_cache.py``), so the next
process with the same kernel source, arguments, target and toolchain skips the search.
Passing a tuned parameter explicitly (``matmul(M, N, K, block_M=64)``) skips tuning, as in TileLang.
"""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Mapping

from ..errors import AutotuneError, ConfigError
from .measure import TimingSettings
from .results_cache import ResultsCache, source_hash, tuning_key
from .space import check_config_keys, config_label, expand_configs
from .spec import KernelSpec

EXECUTORS = ("local", "ray")


@dataclass
class CandidateResult:
    """One config's fate. ``stage`` is where it ended: compile, check, bench or timeout."""

    config: dict
    latency: float | None = None
    error: str | None = None
    stage: str = "compile"
    compile_seconds: float = 0.0
    detail: str | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        return self.error is None and self.latency is not None


@dataclass
class AutotuneResult:
    """The winner (``config``, ``latency`` in ms, ``kernel``) and every candidate's result."""

    config: dict
    latency: float
    kernel: Any
    candidates: list[CandidateResult]
    key: str
    from_cache: bool = False
    elapsed: float = 0.0
    compile_wall: float = 0.0
    parallel: str = ""

    @property
    def failed(self) -> list[CandidateResult]:
        return [c for c in self.candidates if not c.ok]


class AutoTuner:
    """The object ``@autotune`` returns; callable like the ``@jit`` function it wraps."""

    def __init__(self, jit_fn, configs, *, warmup=25, rep=100, timeout=100, supply_type=None,
                 ref_prog=None, supply_prog=None, rtol=1e-2, atol=1e-2, max_mismatched_ratio=0.01,
                 skip_check=False, manual_check_prog=None, executor="local", compile_workers=None,
                 cache_results=True, progress=True, overlap_timing=None):
        if not hasattr(jit_fn, "get_tir"):
            raise ConfigError("@autotune goes on top of a lazy @jit function: write @autotune(...) "
                              "above @tl.jit(...) on a factory that returns a T.prim_func")
        if executor not in EXECUTORS:
            raise ConfigError(f"autotune executor={executor!r} is not one of {', '.join(EXECUTORS)}")
        if executor == "ray" and getattr(jit_fn, "_backend", None) is not None:
            raise ConfigError("autotune(executor='ray') cannot ship a @jit function's private backend "
                              "object to Ray workers; use an installed backend (target=...) or "
                              "executor='local'")
        self.jit = jit_fn
        self.fn = jit_fn.fn
        self.name = self.fn.__name__
        self.configs = configs
        self.timeout = timeout
        self.settings = TimingSettings(warmup=warmup, rep=rep, supply_type=supply_type,
                                       ref_prog=ref_prog, supply_prog=supply_prog, atol=atol, rtol=rtol,
                                       max_mismatched_ratio=max_mismatched_ratio, skip_check=skip_check,
                                       manual_check_prog=manual_check_prog)
        self.executor = executor
        self.compile_workers = compile_workers
        self.overlap_timing = overlap_timing
        self.cache_results = cache_results
        self.progress = progress
        self._results: dict = {}
        self._lock = threading.Lock()
        self.__name__, self.__doc__, self.__wrapped__ = self.name, self.fn.__doc__, jit_fn

    # -- calling ----------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        """The best kernel for these arguments (tuned on first use)."""
        return self.tune(*args, **kwargs).kernel

    def tune(self, *args, **kwargs) -> AutotuneResult:
        """Search (or recall) the best config for these call arguments."""
        configs = expand_configs(self.configs, args, kwargs, self.name)
        if any(k in kwargs for c in configs for k in c):  # tuned parameter given: no search
            kernel = self.jit(*args, **kwargs)
            return AutotuneResult(config={}, latency=float("nan"), kernel=kernel, candidates=[], key="")
        check_config_keys(configs, self.fn, self.name)
        memo = repr((args, sorted(kwargs.items())))
        with self._lock:
            hit = self._results.get(memo)
        if hit is None:
            hit = self._search(args, kwargs, configs)
            with self._lock:
                self._results.setdefault(memo, hit)
        return hit

    # -- the search -------------------------------------------------------------------------------
    def _target_and_backend(self):
        from ..jit.compiler import _resolve

        return _resolve(self.jit.target, self.jit._backend)

    def _key(self, args, kwargs, configs, target, backend) -> str:
        from ..jit.compiler import _versions

        s = self.settings
        return tuning_key({"source": source_hash(self.fn), "args": args, "kwargs": kwargs,
                           "configs": configs, "target": str(target), "out_idx": self.jit.out_idx,
                           "pass_configs": self.jit.pass_configs,
                           "toolchain": str(backend.toolchain_version()), **_versions(backend),
                           "checked": bool(s.ref_prog or s.manual_check_prog) and not s.skip_check})

    def _compile_best(self, spec: KernelSpec, config: Mapping, target):
        from ..jit.compiler import compile as _compile

        func = self.jit.get_tir(*spec.args, **{**spec.kwargs, **config})
        return _compile(func, out_idx=self.jit.out_idx, target=target,
                        pass_configs=self.jit.pass_configs, _backend=self.jit._backend)

    def _search(self, args, kwargs, configs) -> AutotuneResult:
        target, backend = self._target_and_backend()
        key = self._key(args, kwargs, configs, target, backend)
        cache = ResultsCache.from_config() if self.cache_results else None
        spec = KernelSpec.from_jit(self.jit, args, kwargs, target)
        if self.executor == "ray" and spec.importable():  # a closure: Ray's cloudpickle ships it
            spec.factory = self.fn
        record = cache.load(key) if cache is not None else None
        if record is not None:
            best = dict(record["config"])
            return AutotuneResult(config=best, latency=record["latency"],
                                  kernel=self._compile_best(spec, best, target),
                                  candidates=[CandidateResult(**c) for c in record["candidates"]],
                                  key=key, from_cache=True)
        start = time.perf_counter()
        if self.executor == "ray":
            from .ray_executor import RayTuner

            candidates, compile_wall, how = RayTuner(self).run(spec, configs, backend)
        else:
            candidates, compile_wall, how = self._run_local(spec, configs, target, backend)
        ok = [c for c in candidates if c.ok]
        if not ok:
            lines = "\n".join(f"  {{{config_label(c.config)}}}: [{c.stage}] {c.error}"
                              for c in candidates[:8])
            error = AutotuneError(f"autotune of '{self.name}': none of the {len(candidates)} configs "
                                  f"compiled, passed the reference check and ran:\n{lines}\nfix the "
                                  f"kernel or the config space (full tracebacks: the exception's "
                                  f".candidates[i].detail)")
            error.candidates = candidates
            raise error
        best = min(ok, key=lambda c: c.latency)
        result = AutotuneResult(config=best.config, latency=best.latency,
                                kernel=self._compile_best(spec, best.config, target),
                                candidates=candidates, key=key,
                                elapsed=time.perf_counter() - start, compile_wall=compile_wall,
                                parallel=how)
        if cache is not None:
            cache.store(key, {"kernel": self.name, "target": str(target), "config": best.config,
                              "latency": best.latency, "created": time.time(),
                              "candidates": [{k: v for k, v in asdict(c).items() if k != "detail"}
                                             for c in candidates]})
        return result

    def _run_local(self, spec: KernelSpec, configs, target, backend):
        from .. import config as _config
        from .local import LocalCompiler
        from .timing import SerialTimer

        workers = self.compile_workers if self.compile_workers is not None else _config.autotune_workers()
        why = spec.importable()
        if self.jit._backend is not None:
            why = "the @jit function uses a private backend object"
        elif _config.cache_disabled():
            why = "the disk cache is off (TILELANG_DISABLE_CACHE), and workers hand kernels back through it"
        if why and workers:
            self._note(f"autotune of '{self.name}': compiling in this process ({why})")
            workers = 0
        how = f"{workers} worker processes" if workers else "in-process"
        candidates = [CandidateResult(config=dict(c)) for c in configs]
        bar = self._bar(len(configs), "compile")
        overlap = self.overlap_timing
        if overlap is None:
            overlap = getattr(backend, "device_type", None) not in (None, "cpu")
        timer = SerialTimer(self, spec, target, len(configs), overlap)
        t0 = time.perf_counter()

        def on_result(i, outcome):
            c = candidates[i]
            c.compile_seconds = outcome["seconds"]
            if not outcome["ok"]:
                c.error, c.detail = outcome["error"], outcome.get("detail")
                c.stage = "timeout" if outcome.get("timeout") else "compile"
                self._report_failure(c, bar)
            else:
                timer.submit(c)
            bar.update(1)

        if workers or self.jit._backend is None:
            LocalCompiler(workers).compile(spec, configs, self.timeout, on_result)
        else:  # a private backend object: compile through the @jit function itself
            for i, cfg in enumerate(configs):
                on_result(i, self._compile_here(spec, cfg, target))
        compile_wall = time.perf_counter() - t0
        bar.close()
        timer.finish()
        return candidates, compile_wall, how + (", timing overlapped" if overlap else "")

    def _compile_here(self, spec, cfg, target) -> dict:
        from .spec import error_summary

        t0 = time.perf_counter()
        try:
            self._compile_best(spec, cfg, target)
        except Exception as exc:  # noqa: BLE001
            return {"ok": False, "seconds": time.perf_counter() - t0, "error": error_summary(exc)}
        return {"ok": True, "seconds": time.perf_counter() - t0}

    # -- reporting --------------------------------------------------------------------------------
    def record(self, c: CandidateResult, outcome: Mapping, bar) -> None:
        c.stage = outcome.get("stage", c.stage)
        if outcome["ok"]:
            c.latency = outcome["latency"]
        else:
            c.error, c.detail = outcome["error"], outcome.get("detail")
            self._report_failure(c, bar)

    def _bar(self, total: int, phase: str):
        from tqdm import tqdm

        return tqdm(total=total, desc=f"autotune {self.name}: {phase}", unit="cfg", file=sys.stderr,
                    disable=not self.progress, leave=True, dynamic_ncols=True)

    def _report_failure(self, c: CandidateResult, bar) -> None:
        if self.progress:
            bar.write(f"autotune {self.name}: skipped {{{config_label(c.config)}}}: [{c.stage}] "
                      f"{c.error}", file=sys.stderr)

    def _note(self, text: str) -> None:
        if self.progress:
            print(text, file=sys.stderr)


def autotune(func: Callable | None = None, *, configs: Any = None, warmup: float = 25,
             rep: float = 100, timeout: float | None = 100, supply_type=None,
             ref_prog: Callable | None = None, supply_prog: Callable | None = None,
             rtol: float = 1e-2, atol: float = 1e-2, max_mismatched_ratio: float = 0.01,
             skip_check: bool = False, manual_check_prog: Callable | None = None,
             executor: str = "local", compile_workers: int | None = None,
             cache_results: bool = True, progress: bool = True, overlap_timing: bool | None = None):
    """Decorate a lazy ``@jit`` function so that calling it returns its fastest correct config.

    TileLang's arguments (``configs`` as a list of dicts or a function of the call's arguments,
    ``warmup``/``rep`` in ms, ``timeout`` in seconds per candidate and phase, ``ref_prog``,
    ``atol``/``rtol``, ``skip_check``, ``supply_type``, ``supply_prog``, ``manual_check_prog``),
    plus ``configs`` as a dict of lists (the cartesian product), ``executor="ray"`` (candidates as
    Ray tasks), ``compile_workers`` (processes; 0 compiles in this process, where a compile cannot
    be timed out; default ``TILELANG_AUTOTUNE_WORKERS``), ``cache_results`` and ``progress``;
    ``overlap_timing`` measures each candidate as soon as it compiles (default: on GPU targets,
    whose device idles during compiles; never on cpu, whose cores compile). Timing past ``timeout``
    cannot stop a running kernel: the candidate is reported as timed out and the search moves on
    (TileLang does the same).

    Example::

        @tl.autotune(configs={"block_M": [32, 64], "block_N": [32, 64]}, ref_prog=ref)
        @tl.jit(out_idx=[-1])
        def gemm(M, N, K, block_M=64, block_N=64): ...

        kernel = gemm(128, 128, 128)
    """
    if configs is None:
        raise ConfigError("@autotune needs configs=: a list of dicts, a dict of lists, or a function")
    options = dict(configs=configs, warmup=warmup, rep=rep, timeout=timeout, supply_type=supply_type,
                   ref_prog=ref_prog, supply_prog=supply_prog, rtol=rtol, atol=atol,
                   max_mismatched_ratio=max_mismatched_ratio, skip_check=skip_check,
                   manual_check_prog=manual_check_prog, executor=executor,
                   compile_workers=compile_workers, cache_results=cache_results, progress=progress,
                   overlap_timing=overlap_timing)

    def wrap(jit_fn):
        return AutoTuner(jit_fn, **options)

    return wrap(func) if func is not None else wrap
