"""JITKernel: a compiled kernel you call on tensors.

Everything a call needs is prepared in the constructor (parameter specs, the generated launch
function, dtype objects), so ``kernel(a, b)`` costs a few type and alignment tests plus the tvm-ffi
call. See ``launcher.py`` for the fast path and ``args.py`` for the checks and messages.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..errors import CacheError, LaunchError, NoDeviceError, NoToolchainError
from .args import ArgBinder
from .launcher import make_launcher
from .params import KernelParam, check_outputs_allocatable


class StageTexts(dict):
    """``kernel.asm``: the text of every stage of a compiled kernel (tirx, lowered, source), and
    the backend's on-demand stages (ptx and sass on CUDA), computed on first access and kept, as
    Triton's ``kernel.asm`` does::

        kernel.asm["sass"]        # cuobjdump of the cubin, computed now
        kernel.asm.stages         # every stage this kernel can show
    """

    def __init__(self, texts: Mapping[str, str], on_demand: Sequence[str] = (), produce=None):
        super().__init__(texts)
        self.on_demand = tuple(s for s in on_demand if s not in texts)
        self._produce = produce

    @property
    def stages(self) -> tuple[str, ...]:
        return (*self, *(s for s in self.on_demand if s not in self))

    def __missing__(self, stage: str) -> str:
        if stage in self.on_demand and self._produce is not None:
            text = self[stage] = self._produce(stage)
            return text
        raise KeyError(f"no stage {stage!r} for this kernel; it has {', '.join(self.stages)}")


class JITKernel:
    """A compiled kernel: call it on torch tensors, numpy arrays or tvm-ffi tensors.

    Arguments are checked before launch (device, dtype, shape with symbolic extents bound
    consistently, contiguity, alignment); problems raise ``LaunchError`` naming the parameter.
    Outputs listed in ``out_idx`` are allocated like the first tensor argument (torch -> torch on
    the same device, numpy -> numpy) and returned: one tensor, a list for several, None for none.

    Example::

        kernel = tilelang_core.compile(add_func, out_idx=[-1])
        c = kernel(a, b)                      # C allocated and returned
        print(kernel.get_kernel_source())     # the text handed to the toolchain
        kernel.asm["lowered"]                 # every stage's text: tirx, lowered, source (ptx, sass on cuda)
        kernel.params                         # (KernelParam(name='A', ...), ...)
        kernel.export_library("add.so")       # loadable with tvm_ffi.load_module alone
    """

    def __init__(self, *, name: str, params: Sequence[KernelParam], function, artifact_path: Path,
                 asm: Mapping[str, str], target: Any = None, key: str = "", entry: str | None = None,
                 device_type: str | None = None, from_cache: bool = False, keepalive: Any = None,
                 timings: Mapping[str, float] | None = None, entry_checks: bool = False,
                 entry_aligns: bool = False, on_demand_stages: Sequence[str] = (), produce_stage=None,
                 assumes: Sequence = ()):
        self.name = name
        self.params: tuple[KernelParam, ...] = tuple(params)
        self.asm = StageTexts(asm, on_demand_stages, produce_stage)
        self.target = target
        self.key = key
        self.entry = entry
        #: None when the kernel was compiled where its toolchain is missing (NoToolchainError)
        self.artifact_path = Path(artifact_path) if artifact_path is not None else None
        self.from_cache = from_cache
        self.timings = dict(timings or {})
        self.function = function
        #: torch device type the kernel runs on (the backend's ``device_type``; None: unknown)
        self.device_type = device_type
        # a temporary folder holding the artifact when the disk cache is off: lives as we do
        self._keepalive = keepalive
        #: set by the autotuner on the kernel it picked (TileLang's ``update_tuner_result``)
        self.latency: float | None = None
        self.config: dict | None = None
        self.ref_latency: float | None = None
        check_outputs_allocatable(self.params, name)
        if isinstance(function, (NoDeviceError, NoToolchainError)):
            # compiled for a target this machine cannot run (cross-compiling, inspecting): every
            # stage it could make is here; the first call says why it cannot run
            self.function, self._cannot_run = None, function
            self._binder, self._launch = None, self._refuse_launch
            return
        self._cannot_run = None
        # parameters left out of the compiled function (never touched) take no argument there
        used = [dataclasses.replace(p, index=i) for i, p in enumerate(p for p in self.params if not p.unused)]
        self._binder = ArgBinder(name, used, function, device_type, assumes)
        self._launch = make_launcher(self._binder, device_type, entry_checks, entry_aligns)
        if len(used) != len(self.params):
            self._launch = self._without_unused(self._launch)

    def _without_unused(self, launch):
        inputs = [p for p in self.params if not p.is_output]
        keep = [i for i, p in enumerate(inputs) if not p.unused]

        def launch_used(args):
            if len(args) != len(inputs):
                names = ", ".join(p.name + (" (unused: None allowed)" if p.unused else "") for p in inputs)
                raise LaunchError(f"kernel '{self.name}' takes {len(inputs)} arguments ({names}), "
                                  f"got {len(args)}")
            return launch(tuple(args[i] for i in keep))

        return launch_used

    def _refuse_launch(self, args):
        cls = type(self._cannot_run)
        raise cls(f"kernel '{self.name}' compiled for {self.target}, but cannot run on this "
                  f"machine: {self._cannot_run}") from None

    @property
    def out_idx(self) -> list[int]:
        return [p.index for p in self.params if p.is_output]

    def __call__(self, *args):
        try:
            return self._launch(args)
        except LaunchError as err:  # the user's call is where it went wrong, not our checks
            raise err.with_traceback(None) from err.__cause__

    def get_kernel_source(self, kernel_only: bool = True) -> str:
        """The device code handed to the toolchain (CUDA C++, MSL, LLVM IR, ...), as TileLang's
        default; ``kernel_only=False``: the whole text, with the host wrapper the SIMT backends'
        source ends with (``get_host_source``)."""
        source = self.asm.get("source", "")
        at = self._host_at(source)
        return source[:at] if kernel_only and at > 0 else source

    def get_host_source(self) -> str:
        """The host wrapper that checks the arguments and launches the kernels (TileLang's
        ``get_host_source``); empty where the backend has none in its source (cpu: one module)."""
        source = self.asm.get("source", "")
        at = self._host_at(source)
        return source[at:] if at > 0 else ""

    @staticmethod
    def _host_at(source: str) -> int:
        from ..simt.c_source import HOST_MARKER

        return source.find(HOST_MARKER)

    def get_profiler(self, tensor_supply_type=None, dynamic_shapes=None):
        """A ``Profiler`` for this kernel: ``do_bench``, ``assert_allclose``, ``run_once``.
        ``tensor_supply_type`` (first, as in TileLang) defaults to ``TensorSupplyType.Auto``.

            profiler = kernel.get_profiler(TensorSupplyType.Integer)
            profiler.assert_allclose(lambda a, b: a @ b, atol=1e-2, rtol=1e-2)
            ms = profiler.do_bench(warmup=25, rep=100)
        """
        from ..profiler import Profiler, TensorSupplyType

        supply = TensorSupplyType.Auto if tensor_supply_type is None else tensor_supply_type
        return Profiler(self, supply, dynamic_shapes)

    def run_once(self, func=None):
        """Run the kernel (or ``func``) once on fresh profiler inputs and return the result."""
        return self.get_profiler().run_once(func)

    def update_tuner_result(self, latency: float, config: dict, ref_latency: float | None) -> "JITKernel":
        """Record what the autotuner measured for this kernel (``kernel.latency``, ``.config``,
        ``.ref_latency``: ms and the winning config); returns the kernel."""
        self.latency, self.config, self.ref_latency = latency, config, ref_latency
        return self

    def get_tuner_result(self) -> dict:
        """``{"latency", "config", "ref_latency"}`` as the autotuner recorded them (None: untuned)."""
        return {"latency": self.latency, "config": self.config, "ref_latency": self.ref_latency}

    def export_library(self, path: str | Path) -> Path:
        """Copy the loadable artifact to ``path``; load it with ``tvm_ffi.load_module(path)``."""
        path = Path(path)
        if self.artifact_path is None:
            raise CacheError(f"kernel '{self.name}' has no binary to export: {self._cannot_run}")
        if not self.artifact_path.is_file():
            raise CacheError(f"artifact of kernel '{self.name}' at {self.artifact_path} is gone "
                             f"(evicted from the cache?); compile the kernel again to export it")
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(self.artifact_path, path)
        return path

    def __repr__(self) -> str:
        sig = ", ".join(f"{p.name}: {p.dtype}{list(p.shape) if p.is_tensor else ''}"
                        + (" -> out" if p.is_output else "") for p in self.params)
        return f"<JITKernel {self.name}({sig}) target={self.target}>"
