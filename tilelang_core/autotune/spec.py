"""What a compile worker needs to build one candidate, and the worker function itself.

A ``@jit`` object holds a lock and a memo of compiled kernels, so it cannot travel to another
process. ``KernelSpec`` names the kernel factory instead: by module and qualified name for the local
process pool (the worker imports the module, from its file when it is a script), or by value for
Ray (``factory``, serialized with Ray's cloudpickle, so a remote node needs no copy of the file).
An eager ``@jit`` kernel (written on tensors) travels the same way; its tensor arguments travel as
``TensorSpec`` stand-ins (shape and dtype: all a specialization reads), never as data.

    spec = KernelSpec.from_jit(jit_fn, args, kwargs, target)
    outcome = compile_candidate(spec, {"block_M": 64}, config.snapshot())   # in a worker
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from .. import config as _config
from ..errors import ConfigError


@dataclass
class KernelSpec:
    """A picklable recipe: ``factory(*args, **kwargs, **config)`` -> PrimFunc, compiled for
    ``target`` with ``out_idx`` and ``pass_configs``."""

    name: str
    module: str | None
    qualname: str | None
    file: str | None
    args: tuple
    kwargs: dict
    target: str
    out_idx: Any = None
    pass_configs: dict | None = None
    factory: Callable | None = None
    sys_path: list = field(default_factory=list)
    #: the factory is an eager kernel: specialize it on ``args`` (stand-ins) instead of calling it
    eager: bool = False

    @classmethod
    def from_jit(cls, jit_fn, args, kwargs, target, *, by_value: bool = False) -> "KernelSpec":
        fn = jit_fn.fn
        module = sys.modules.get(fn.__module__)
        return cls(name=fn.__name__, module=fn.__module__, qualname=fn.__qualname__,
                   file=getattr(module, "__file__", None), args=tuple(args), kwargs=dict(kwargs),
                   target=str(target), out_idx=jit_fn.out_idx, pass_configs=jit_fn.pass_configs,
                   factory=fn if by_value else None, sys_path=list(sys.path),
                   eager=getattr(jit_fn, "mode", "lazy") == "eager")

    def importable(self) -> str | None:
        """None when a fresh process can find the factory by name; else why not."""
        if self.factory is not None:
            return None
        if not self.qualname or "<locals>" in self.qualname:
            return (f"'{self.name}' is defined inside a function; define the @jit function at "
                    f"module level to compile candidates in parallel")
        if self.module == "__main__" and not self.file:
            return f"'{self.name}' lives in an interactive __main__ with no file"
        return None

    def resolve(self) -> Callable:
        """The raw factory function, in this process."""
        if self.factory is not None:
            return self.factory
        for entry in reversed(self.sys_path):
            if entry not in sys.path:
                sys.path.insert(0, entry)
        obj = _import_module(self.module, self.file)
        for part in self.qualname.split("."):
            obj = getattr(obj, part)
        # unwrap @autotune and @jit down to the factory
        while not _is_plain_function(obj):
            inner = getattr(obj, "jit", None) or getattr(obj, "fn", None)
            if inner is None:
                raise ConfigError(f"cannot find the kernel factory behind {self.module}."
                                  f"{self.qualname} ({type(obj).__name__})")
            obj = inner
        return obj

    def build(self, config: Mapping):
        """``(PrimFunc, out_idx)`` of one candidate."""
        import tvm

        merged = {**self.kwargs, **config}
        if self.eager:
            program = _eager_program(self.resolve())
            args, kwargs = program.tensors_from_consts(self.args, merged)
            spec = program.specialize(args, kwargs)
            return spec.func, (self.out_idx if self.out_idx is not None else spec.out_idx)
        func = self.resolve()(*self.args, **merged)
        if not isinstance(func, tvm.tirx.PrimFunc):
            raise ConfigError(f"'{self.name}' returned {type(func).__name__}, not a T.prim_func")
        return func, self.out_idx

    def build_func(self, config: Mapping):
        return self.build(config)[0]

    def compile(self, config: Mapping):
        """Compile one candidate in this process (through the disk cache) -> JITKernel."""
        from ..jit.compiler import compile as _compile

        func, out_idx = self.build(config)
        return _compile(func, out_idx=out_idx, target=self.target, pass_configs=self.pass_configs)


_eager_programs: dict = {}


def _eager_program(fn):
    """One EagerProgram per kernel function in this process (it parses the source once)."""
    from ..language.eager import EagerProgram

    program = _eager_programs.get(fn)
    if program is None:
        program = _eager_programs[fn] = EagerProgram(fn)
    return program


def stand_ins(values):
    """``values`` with every tensor-like entry (one with ``shape`` and ``dtype``) replaced by a
    ``TensorSpec``: what an eager specialization reads, without the data."""
    from ..language.eager import TensorSpec

    def one(v):
        if isinstance(v, TensorSpec) or not (hasattr(v, "shape") and hasattr(v, "dtype")):
            return v
        dtype = str(v.dtype)
        return TensorSpec(tuple(int(d) for d in v.shape), dtype[6:] if dtype.startswith("torch.") else dtype)

    if isinstance(values, dict):
        return {k: one(v) for k, v in values.items()}
    return tuple(one(v) for v in values)


def _is_plain_function(obj) -> bool:
    return type(obj).__name__ == "function"


_loaded_by_file: dict[str, Any] = {}


def _import_module(name: str | None, file: str | None):
    if name and name != "__main__":
        try:
            return importlib.import_module(name)
        except ImportError:
            if not file:
                raise
    # a script (the parent's __main__) or a module not on sys.path: load it from its file under
    # another name, so its `if __name__ == "__main__":` block does not run here
    if file not in _loaded_by_file:
        spec = importlib.util.spec_from_file_location(f"_tilelang_autotune_{len(_loaded_by_file)}", file)
        if spec is None or spec.loader is None:
            raise ConfigError(f"cannot load the kernel's module from {file}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        _loaded_by_file[file] = module
    return _loaded_by_file[file]


def error_summary(exc: BaseException) -> str:
    """One line: the exception type and the first line of its message (full text in ``detail``)."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


def compile_candidate(spec: KernelSpec, config: Mapping, env: Mapping[str, str],
                      ship: bool = False) -> dict:
    """Worker entry: compile one candidate into the shared disk cache.

    Returns ``{"ok", "seconds", "error", "detail", "key", "entry"}``; never raises, so that one bad
    config cannot break the pool. ``ship=True`` also returns the cache entry's files (Ray: the
    node that times the kernel may not share this node's cache folder).
    """
    _config.apply_snapshot(env)
    start = time.perf_counter()
    try:
        kernel = spec.compile(config)
    except BaseException as exc:  # noqa: BLE001 - reported per candidate, the sweep goes on
        return {"ok": False, "seconds": time.perf_counter() - start, "error": error_summary(exc),
                "detail": traceback.format_exc(), "key": None, "entry": None}
    entry = read_entry(kernel) if ship else None
    return {"ok": True, "seconds": time.perf_counter() - start, "error": None, "detail": None,
            "key": kernel.key, "entry": entry}


def forget_loaded_kernels() -> None:
    """Worker side, after each task: drop the in-process kernel memo. A worker outlives one search;
    a memo hit would skip writing the current cache folder (the parent would then miss it and
    compile again), and every loaded library would stay mapped for the worker's lifetime."""
    from ..jit.compiler import clear_memory_cache

    clear_memory_cache()


def read_entry(kernel) -> dict:
    """The parts of a compiled kernel's cache entry another node needs to publish it."""
    from pathlib import Path

    return {"key": kernel.key, "artifact": Path(kernel.artifact_path).read_bytes(),
            "suffix": Path(kernel.artifact_path).suffix, "asm": dict(kernel.asm),
            "meta": {"kernel": kernel.name}}


def install_entry(entry: Mapping | None) -> None:
    """Publish a shipped entry into this node's disk cache (no-op when it is already there)."""
    if not entry:
        return
    from ..jit.cache import DiskCache

    cache = DiskCache.from_config()
    if cache is None or cache.readonly or cache.lookup(entry["key"]) is not None:
        return
    with cache.lock(entry["key"]):
        if cache.lookup(entry["key"], evict_corrupt=True) is None:
            cache.publish(entry["key"], artifact=entry["artifact"], suffix=entry["suffix"],
                          asm=entry["asm"], meta=entry["meta"])
