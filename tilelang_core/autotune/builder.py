"""TileLang's builder form of the tuner: the methods ``AutoTuner`` adds for it.

    result = (AutoTuner.from_kernel(kernel=factory, configs=configs)
              .set_compile_args(out_idx=[-1], target="auto")
              .set_profile_args(supply_type=tl.TensorSupplyType.Auto, ref_prog=ref)
              .run(warmup=3, rep=20, timeout=60))
    result.config, result.latency, result.ref_latency, result.kernel

``factory(**config)`` returns a ``T.prim_func`` (every tuned parameter comes from the config; the
problem sizes are usually closed over). The search is the decorator's (``tuner.py``): the same
parallel compiles, correctness gate, serial timing and results cache.
"""

from __future__ import annotations

import dataclasses

from ..errors import ConfigError


class TileLangBuilder:
    """Mixin of ``AutoTuner``: ``from_kernel``, ``set_compile_args``, ``set_profile_args``,
    ``run``. Every setter returns the tuner, for chaining."""

    _frozen_inputs = None

    @classmethod
    def from_kernel(cls, kernel, configs):
        """A tuner for ``kernel`` (a factory returning a ``T.prim_func``, or a ``@jit`` function)
        over ``configs`` (a list of dicts, a dict of lists, or a function returning one)."""
        return cls(kernel, configs)

    def set_compile_args(self, out_idx=None, target=None, execution_backend=None, target_host=None,
                         verbose=None, pass_configs=None):
        """How candidates compile: ``out_idx`` (outputs the kernel allocates and returns),
        ``target`` (None: ``"auto"``), ``pass_configs``. ``execution_backend`` takes TileLang's
        names (``jit.decorator.EXECUTION_BACKENDS``; one runtime per backend here, so no effect);
        ``verbose`` is accepted (the tuner's output is ``progress=``)."""
        from ..jit.decorator import EagerJIT, LazyJIT, check_tilelang_options

        check_tilelang_options("set_compile_args", execution_backend, target_host)
        old = self.jit
        target = "auto" if target is None else target
        if getattr(old, "mode", "lazy") == "eager":
            if out_idx is not None:
                raise ConfigError(f"autotune of '{self.name}': out_idx is for lazy kernels; an eager "
                                  f"kernel returns the tensors it makes with T.empty")
            self.jit = EagerJIT(self.fn, None, target, pass_configs, old._backend, old._program_factory)
        else:
            self.jit = LazyJIT(self.fn, out_idx, target, pass_configs, old._backend)
        self._results.clear()
        return self

    def set_profile_args(self, warmup: int = 25, rep: int = 100, timeout: int = 30, supply_type=None,
                         ref_prog=None, supply_prog=None, rtol: float = 1e-2, atol: float = 1e-2,
                         max_mismatched_ratio: float = 0.01, skip_check: bool = False,
                         manual_check_prog=None, cache_input_tensors: bool = False,
                         backend: str = "event"):
        """How candidates are checked and timed (the decorator's arguments of the same names;
        ``backend``: the profiler's event, cupti or cudagraph). Inside ``set_autotune_inputs``
        the inputs in effect now are kept for ``run``, as in TileLang."""
        from .capture import get_autotune_inputs

        early = self.settings.early_stop_factor
        self.settings = self._timing_settings(
            warmup=warmup, rep=rep, supply_type=supply_type, ref_prog=ref_prog, supply_prog=supply_prog,
            atol=atol, rtol=rtol, max_mismatched_ratio=max_mismatched_ratio, skip_check=skip_check,
            manual_check_prog=manual_check_prog, cache_input_tensors=cache_input_tensors,
            backend=backend, early_stop=early is not None, early_stop_factor=early or 2.0)
        self.timeout = timeout
        captured = get_autotune_inputs()
        self._frozen_inputs = None if captured is None else list(captured)
        self._results.clear()
        return self

    def run(self, warmup: int = 25, rep: int = 100, timeout: int = 180, use_pipeline: bool = False,
            enable_grouped_compile: bool = False, group_compile_size: int = 2,
            benchmark_devices=None, benchmark_multi_gpu: bool = False, early_stop: bool = False,
            early_stop_factor: float = 2.0):
        """Search and return the ``AutotuneResult`` (``.config``, ``.latency`` in ms,
        ``.ref_latency``, ``.kernel``, ``.func``, ``.libcode``). ``warmup``/``rep`` are call counts
        per candidate and ``timeout`` seconds per candidate, replacing ``set_profile_args``'s.
        ``use_pipeline`` times candidates while others compile. Candidates are timed one at a time
        on one device, so ``benchmark_multi_gpu``/``benchmark_devices`` and TileLang's grouped
        compilation (``enable_grouped_compile``) change how fast the search goes there, not what
        it finds; here they are accepted and the search is the serial one."""
        del enable_grouped_compile, group_compile_size, benchmark_devices, benchmark_multi_gpu
        if early_stop and early_stop_factor < 1.0:
            raise ConfigError(f"early_stop_factor must be >= 1.0, got {early_stop_factor}")
        self.settings = dataclasses.replace(self.settings, warmup=int(warmup), rep=int(rep),
                                            early_stop_factor=early_stop_factor if early_stop else None)
        self.timeout = timeout
        if use_pipeline:
            self.overlap_timing = True
        self._results.clear()
        return self.tune()
