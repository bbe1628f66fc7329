"""``@autotune``: pick the fastest correct config of a ``@jit`` kernel.

    @tl.autotune(configs={"block_M": [64, 128], "block_N": [64, 128]}, warmup=25, rep=100,
                 ref_prog=lambda a, b: a @ b, atol=1e-2, rtol=1e-2, timeout=60)
    @tl.jit(out_idx=[-1])
    def matmul(M, N, K, block_M=128, block_N=128): ...

    kernel = matmul(1024, 1024, 1024)          # tunes once (or reads the result from disk)
    result = matmul.tune(1024, 1024, 1024)     # AutotuneResult: config, latency, candidates, ...

On an eager ``@jit`` kernel (written on tensors) a call tunes for the tensors' shapes and dtypes,
then launches the best kernel on them and returns its outputs, as in TileLang::

    @tl.autotune(configs=[{"blk_m": 64}, {"blk_m": 128}])
    @tl.jit
    def topk(logits, k, blk_m, threads=128): ...

    gates, indices = topk(logits, 6)           # tuned on random inputs of logits' shape, then run

TileLang's builder form is the same class (``builder.py``)::

    result = AutoTuner.from_kernel(kernel=factory, configs=configs) \\
        .set_compile_args(out_idx=[-1], target="auto").set_profile_args(ref_prog=ref).run(warmup=3, rep=20)

A search: expand the config space; compile every candidate in parallel (``local.py``: a process
pool, or Ray tasks with ``executor="ray"``); strictly one at a time on the device, check each
compiled candidate against ``ref_prog`` on fresh random inputs (or the ``set_autotune_inputs``
ones) and time it (``timing.py``: after the compiles on the cpu backend, overlapped with them on
GPU targets). Failed candidates (compile error, wrong result, timeout) are reported with their
config and skipped; a tqdm bar shows progress and the best so far. The outcome is stored on disk
(``results_cache.py``), so the next process with the same kernel source, arguments, target and
toolchain skips the search. Passing a tuned parameter explicitly (``matmul(M, N, K, block_M=64)``,
by keyword or position) skips tuning, as in TileLang.
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
import threading
import time
import traceback
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Mapping

from ..errors import AutotuneError, ConfigError
from .builder import TileLangBuilder
from .capture import get_autotune_inputs
from .measure import TimingSettings, check_only, time_reference
from .results_cache import ResultsCache, source_hash, tuning_key
from .space import check_config_keys, config_label, expand_configs
from .spec import KernelSpec, error_summary, stand_ins

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
    """The winner (``config``, ``latency`` in ms, ``kernel``) and every candidate's result.

    TileLang's fields are here too: ``ref_latency`` (ms of ``ref_prog`` on the same inputs, None
    without one), ``func`` (the winner's PrimFunc) and ``libcode`` (its source).
    """

    config: dict
    latency: float
    kernel: Any
    candidates: list[CandidateResult]
    key: str
    from_cache: bool = False
    elapsed: float = 0.0
    compile_wall: float = 0.0
    parallel: str = ""
    ref_latency: float | None = None
    func: Any = field(default=None, repr=False)

    @property
    def failed(self) -> list[CandidateResult]:
        return [c for c in self.candidates if not c.ok]

    @property
    def libcode(self) -> str:
        return self.kernel.get_kernel_source()


def _is_jit(obj) -> bool:
    from ..jit.decorator import _JITBase

    return isinstance(obj, _JITBase)


def _as_jit(fn):
    """A ``@jit`` function as it is; a plain factory (TileLang's ``AutoTuner(fn, configs)``) as a
    lazy ``@jit`` with default compile arguments (``set_compile_args`` replaces them)."""
    if _is_jit(fn):
        return fn
    if not callable(fn):
        raise ConfigError(f"AutoTuner needs a kernel factory or a @jit function, got {type(fn).__name__}")
    from ..jit.decorator import LazyJIT

    return LazyJIT(fn, None, "auto", None, None)


class AutoTuner(TileLangBuilder):
    """The object ``@autotune`` returns: callable like the ``@jit`` function it wraps. Made
    directly (``AutoTuner.from_kernel(kernel=factory, configs=...)``) it is TileLang's builder."""

    def __init__(self, fn, configs, *, warmup=25, rep=100, timeout=100, supply_type=None,
                 ref_prog=None, supply_prog=None, rtol=1e-2, atol=1e-2, max_mismatched_ratio=0.01,
                 skip_check=False, manual_check_prog=None, cache_input_tensors=False,
                 do_not_specialize=None, early_stop=False, early_stop_factor=2.0, backend="event",
                 executor="local", compile_workers=None, cache_results=True, progress=True,
                 overlap_timing=None, _decorator=False):
        jit_fn = _as_jit(fn)
        if executor not in EXECUTORS:
            raise ConfigError(f"autotune executor={executor!r} is not one of {', '.join(EXECUTORS)}")
        if executor == "ray" and getattr(jit_fn, "_backend", None) is not None:
            raise ConfigError("autotune(executor='ray') cannot ship a @jit function's private backend "
                              "object to Ray workers; use an installed backend (target=...) or "
                              "executor='local'")
        self.jit = jit_fn
        self.fn = jit_fn.fn
        self.name = getattr(self.fn, "__name__", "kernel")
        self.configs = configs
        self.timeout = timeout
        self.settings = self._timing_settings(
            warmup=warmup, rep=rep, supply_type=supply_type, ref_prog=ref_prog, supply_prog=supply_prog,
            atol=atol, rtol=rtol, max_mismatched_ratio=max_mismatched_ratio, skip_check=skip_check,
            manual_check_prog=manual_check_prog, cache_input_tensors=cache_input_tensors,
            backend=backend, early_stop=early_stop, early_stop_factor=early_stop_factor)
        self.do_not_specialize = tuple(do_not_specialize or ())
        self.executor = executor
        self.compile_workers = compile_workers
        self.overlap_timing = overlap_timing
        self.cache_results = cache_results
        self.progress = progress
        self._decorator = _decorator
        self._results: dict = {}
        self._lock = threading.Lock()
        self.__name__, self.__doc__, self.__wrapped__ = self.name, getattr(self.fn, "__doc__", None), jit_fn

    def _timing_settings(self, *, warmup, rep, early_stop, early_stop_factor, manual_check_prog,
                         ref_prog, **rest) -> TimingSettings:
        if manual_check_prog is not None and ref_prog is None:
            raise ConfigError(f"autotune of '{self.name}': manual_check_prog=f(outputs, ref_outputs) "
                              f"compares against ref_prog's outputs; give ref_prog= too")
        if early_stop and early_stop_factor < 1.0:
            raise ConfigError(f"early_stop_factor must be >= 1.0, got {early_stop_factor}")
        for what, value in (("warmup", warmup), ("rep", rep)):
            if not isinstance(value, (int, float)) or value < 0:
                raise ConfigError(f"autotune {what}={value!r}: a call count >= 0 (0: a time budget)")
        return TimingSettings(warmup=int(warmup), rep=int(rep), ref_prog=ref_prog,
                              manual_check_prog=manual_check_prog,
                              early_stop_factor=early_stop_factor if early_stop else None, **rest)

    @property
    def eager(self) -> bool:
        return getattr(self.jit, "mode", "lazy") == "eager"

    # -- calling ----------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        """The best kernel for these arguments (tuned on first use); on an eager kernel, its
        outputs on these tensors. A builder (``from_kernel``) called with nothing runs the search
        and returns the ``AutotuneResult``, as TileLang's ``AutoTuner()`` does."""
        if not self._decorator and not args and not kwargs:
            return self.run()
        if self.eager:
            result = self.tune(*args, **kwargs)
            return self.jit(*args, **{**kwargs, **result.config})
        return self.tune(*args, **kwargs).kernel

    def compile(self, *args, **kwargs):
        """The best kernel for these arguments, without launching it (TileLang's
        ``AutoTuneImpl.compile``)."""
        return self.tune(*args, **kwargs).kernel

    def tune(self, *args, **kwargs) -> AutotuneResult:
        """Search (or recall) the best config for these call arguments."""
        configs = expand_configs(self.configs, args, kwargs, self.name)
        if self._tuned_given(configs, args, kwargs):  # tuned parameter given: no search
            kernel = self.jit.compile(*args, **kwargs) if self.eager else self.jit(*args, **kwargs)
            return AutotuneResult(config={}, latency=float("nan"), kernel=kernel, candidates=[], key="")
        check_config_keys(configs, self.fn, self.name)
        # an eager kernel's tensors are described by shape and dtype: keys, workers, memo
        args, kwargs = (stand_ins(args), stand_ins(kwargs)) if self.eager else (args, kwargs)
        inputs = get_autotune_inputs()
        if inputs is None:
            inputs = self._frozen_inputs  # captured by set_profile_args inside set_autotune_inputs
        memo = self._memo_key(args, kwargs, inputs)
        call = repr((args, sorted(kwargs.items())))
        with self._lock:
            hit = self._results.get(memo)
        if hit is None:
            hit = (call, self._search(args, kwargs, configs, inputs))
            with self._lock:
                hit = self._results.setdefault(memo, hit)
        tuned_for, result = hit
        if tuned_for != call:
            # a call differing only in do_not_specialize parameters reuses the tuned config,
            # compiled for its own arguments, so the kernel always matches the call
            spec = KernelSpec.from_jit(self.jit, args, kwargs, "auto")
            kernel = self._compile_best(spec, result.config, None)
            kernel.update_tuner_result(result.latency, dict(result.config), result.ref_latency)
            result = dataclasses.replace(result, kernel=kernel)
        return result

    def _tuned_given(self, configs, args, kwargs) -> bool:
        """TileLang's rule: a tuned parameter given by keyword or by position skips the search."""
        tuned = {k for c in configs for k in c}
        try:
            positional = list(inspect.signature(self.fn).parameters)[:len(args)]
        except (TypeError, ValueError):
            positional = []
        return any(k in kwargs for k in tuned) or any(name in tuned for name in positional)

    def _memo_key(self, args, kwargs, inputs) -> str:
        if self.do_not_specialize:
            try:
                bound = inspect.signature(self.fn).bind_partial(*args, **kwargs)
                kept = {k: v for k, v in bound.arguments.items() if k not in self.do_not_specialize}
                args, kwargs = (), kept
            except TypeError:
                pass
        # inputs from set_autotune_inputs decide the result too: another set is another search
        return repr((args, sorted(kwargs.items()), None if inputs is None else id(inputs)))

    # -- the search -------------------------------------------------------------------------------
    def _target_and_backend(self):
        from ..jit.compiler import _resolve

        return _resolve(self.jit.target, self.jit._backend)

    def _key(self, args, kwargs, configs, target, backend) -> str:
        from ..jit.compiler import _versions

        s = self.settings
        return tuning_key({"source": source_hash(self.fn), "args": args, "kwargs": kwargs,
                           "configs": configs, "target": str(target), "out_idx": self.jit.out_idx,
                           "pass_configs": self.jit.pass_configs, "mode": getattr(self.jit, "mode", "lazy"),
                           "toolchain": str(backend.toolchain_version()), **_versions(backend),
                           "checked": bool(s.ref_prog or s.manual_check_prog) and not s.skip_check})

    def _compile_best(self, spec: KernelSpec, config: Mapping, target):
        if self.eager:  # memoized by the eager @jit, so the final call on real tensors reuses it
            return self.jit.compile(*spec.args, **{**spec.kwargs, **config})
        from ..jit.compiler import compile as _compile

        func = self.jit.get_tir(*spec.args, **{**spec.kwargs, **config})
        return _compile(func, out_idx=self.jit.out_idx, target=self.jit.target if target is None else target,
                        pass_configs=self.jit.pass_configs, _backend=self.jit._backend)

    def _winner(self, spec: KernelSpec, config: Mapping, target):
        """The winner's kernel (a cache hit: every candidate was compiled) and PrimFunc."""
        kernel = self._compile_best(spec, config, target)
        try:
            func = self.jit.get_tir(*spec.args, **{**spec.kwargs, **config})
        except Exception:  # noqa: BLE001 - the PrimFunc is a convenience; the kernel is the result
            func = None
        return kernel, func

    def _search(self, args, kwargs, configs, inputs=None) -> AutotuneResult:
        target, backend = self._target_and_backend()
        key = self._key(args, kwargs, configs, target, backend)
        settings = self.settings
        if inputs is not None:  # set_autotune_inputs: the search checks and times on these
            frozen = list(inputs)
            settings = dataclasses.replace(settings, supply_prog=lambda params: frozen)
        # a result found on given inputs is not stored: the disk key does not hold the inputs
        cache = ResultsCache.from_config() if self.cache_results and inputs is None else None
        spec = KernelSpec.from_jit(self.jit, args, kwargs, target)
        if self.executor == "ray" and spec.importable():  # a closure: Ray's cloudpickle ships it
            spec.factory = self.fn
        record = cache.load(key) if cache is not None else None
        if record is not None:
            best = dict(record["config"])
            kernel, func = self._winner(spec, best, target)
            # the record does not know which reference checked it (a callback has no stable
            # identity): the winner must pass this search's check, or the search runs again
            why = check_only(kernel, settings)
            if why is None:
                kernel.update_tuner_result(record["latency"], dict(best), record.get("ref_latency"))
                return AutotuneResult(config=best, latency=record["latency"], kernel=kernel,
                                      candidates=[CandidateResult(**c) for c in record["candidates"]],
                                      key=key, from_cache=True, ref_latency=record.get("ref_latency"),
                                      func=func)
            self._note(f"autotune of '{self.name}': the stored result {{{config_label(best)}}} fails "
                       f"this reference check ({why}); searching again")
        start = time.perf_counter()
        if self.executor == "ray":
            from .ray_executor import RayTuner

            candidates, compile_wall, how = RayTuner(self, settings).run(spec, configs, backend)
        else:
            candidates, compile_wall, how = self._run_local(spec, configs, target, backend, settings)
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
        kernel, func = self._winner(spec, best.config, target)
        ref_latency = time_reference(kernel, settings) if self.executor == "local" else None
        kernel.update_tuner_result(latency=best.latency, config=dict(best.config), ref_latency=ref_latency)
        result = AutotuneResult(config=best.config, latency=best.latency, kernel=kernel,
                                candidates=candidates, key=key, elapsed=time.perf_counter() - start,
                                compile_wall=compile_wall, parallel=how, ref_latency=ref_latency,
                                func=func)
        if cache is not None:
            cache.store(key, {"kernel": self.name, "target": str(target), "config": best.config,
                              "latency": best.latency, "ref_latency": ref_latency, "created": time.time(),
                              "candidates": [{k: v for k, v in asdict(c).items() if k != "detail"}
                                             for c in candidates]})
        return result

    def _run_local(self, spec: KernelSpec, configs, target, backend, settings: TimingSettings):
        from .. import config as _config
        from .local import LocalCompiler, unguarded_main_call
        from .timing import SerialTimer

        workers = self.compile_workers if self.compile_workers is not None else _config.autotune_workers()
        why = spec.importable() or unguarded_main_call()
        if self.jit._backend is not None:
            why = "the @jit function uses a private backend object"
        elif getattr(self.jit, "_program_factory", None) is not None:
            why = "the @jit function uses a custom eager program factory"
        elif _config.cache_disabled():
            why = "the disk cache is off (TILELANG_DISABLE_CACHE), and workers hand kernels back through it"
        elif _cache_readonly():
            why = "the disk cache folder cannot be written, and workers hand kernels back through it"
        if why and workers:
            self._note(f"autotune of '{self.name}': compiling in this process ({why})")
            workers = 0
        how = f"{workers} worker processes" if workers else "in-process"
        candidates = [CandidateResult(config=dict(c)) for c in configs]
        bar = self._bar(len(configs), "compile")
        overlap = self.overlap_timing
        if overlap is None:
            overlap = getattr(backend, "device_type", None) not in (None, "cpu")
        timer = SerialTimer(self, spec, target, len(configs), overlap, settings)
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

        if workers:
            LocalCompiler(workers).compile(spec, configs, self.timeout, on_result)
        else:  # through the @jit function itself: closures, private backends, eager programs
            for i, cfg in enumerate(configs):
                on_result(i, self._compile_here(spec, cfg, target))
        compile_wall = time.perf_counter() - t0
        bar.close()
        timer.finish()
        return candidates, compile_wall, how + (", timing overlapped" if overlap else "")

    def _compile_here(self, spec, cfg, target) -> dict:
        t0 = time.perf_counter()
        try:
            self._compile_best(spec, cfg, target)
        except Exception as exc:  # noqa: BLE001
            return {"ok": False, "seconds": time.perf_counter() - t0, "error": error_summary(exc),
                    "detail": traceback.format_exc()}
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


def autotune(func: Callable | None = None, *, configs: Any = None, warmup: int = 25,
             rep: int = 100, timeout: float | None = 100, supply_type=None,
             ref_prog: Callable | None = None, supply_prog: Callable | None = None,
             rtol: float = 1e-2, atol: float = 1e-2, max_mismatched_ratio: float = 0.01,
             skip_check: bool = False, manual_check_prog: Callable | None = None,
             cache_input_tensors: bool = False, do_not_specialize=None, early_stop: bool = False,
             early_stop_factor: float = 2.0, executor: str = "local",
             compile_workers: int | None = None, cache_results: bool = True, progress: bool = True,
             overlap_timing: bool | None = None):
    """Decorate a ``@jit`` function so that calling it uses its fastest correct config.

    TileLang's arguments: ``configs`` (a list of dicts or a function of the call's arguments),
    ``warmup``/``rep`` (call counts for timing each candidate), ``timeout`` (seconds per candidate
    and phase), ``ref_prog`` (gets the inputs, returns the expected outputs), ``atol``/``rtol``/
    ``max_mismatched_ratio``, ``skip_check``, ``supply_type``, ``supply_prog`` (gets the input
    parameters, returns input tensors), ``manual_check_prog`` (gets the kernel's and ref_prog's
    outputs, raises when wrong), ``cache_input_tensors`` (one input set for every candidate),
    ``do_not_specialize`` (parameters whose value does not start a new search: the tuned config
    is compiled for each call's value), ``early_stop``/``early_stop_factor`` (a candidate whose
    first estimate is past ``factor`` times the best so far is not measured further). Ours too:
    ``configs`` as a dict of lists (the cartesian product), ``executor="ray"`` (candidates as Ray
    tasks), ``compile_workers`` (processes; 0 compiles in this process, where a compile cannot
    be timed out; default ``TILELANG_AUTOTUNE_WORKERS``), ``cache_results`` and ``progress``;
    ``overlap_timing`` measures each candidate as soon as it compiles (default: on GPU targets,
    whose device idles during compiles; never on cpu, whose cores compile). Timing past ``timeout``
    cannot stop a running kernel: the candidate is reported as timed out and the search moves on
    (TileLang does the same). A candidate's latency is the median of its timed calls, in ms.

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
                   manual_check_prog=manual_check_prog, cache_input_tensors=cache_input_tensors,
                   do_not_specialize=do_not_specialize, early_stop=early_stop,
                   early_stop_factor=early_stop_factor, executor=executor,
                   compile_workers=compile_workers, cache_results=cache_results, progress=progress,
                   overlap_timing=overlap_timing)

    def wrap(jit_fn):
        if not _is_jit(jit_fn):
            raise ConfigError("@autotune goes on top of a @jit function: write @autotune(...) above "
                              "@tl.jit(...) (or use AutoTuner.from_kernel(kernel=factory, "
                              "configs=...) for a plain factory)")
        return AutoTuner(jit_fn, _decorator=True, **options)

    return wrap(func) if func is not None else wrap


def _cache_readonly() -> bool:
    from ..jit.cache import DiskCache

    cache = DiskCache.from_config()
    return cache is not None and cache.readonly

