"""TileLang-X: a tile-level kernel language and compiler with pluggable vendor backends.

    import tilelang_core as tilelang
    import tilelang_core.language as T

Importing this package is cheap: it never imports tvm, torch or any backend. The heavy parts
(the language, the JIT, plugin discovery) load on first use through module ``__getattr__``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from .errors import (AutotuneError, CacheError, CompileError, ConfigError, FrontendError, LaunchError, LayoutError,
                     LoweringError, NoDeviceError, NoToolchainError, PluginError, TargetError, TileLangError)
from .intmath import cdiv, next_power_of_2, prev_power_of_2
from .pass_configs import PassConfigKey
from .jit import compile, jit, par_compile  # light: numpy, torch and tvm load with the first compile
# Eager (it is light) so that `tilelang_core.autotune` is the decorator, as in TileLang: a lazy
# name would be shadowed by the subpackage as soon as anything imported tilelang_core.autotune.*
from .autotune import autotune
from .target import Target

__version__ = "0.1.0"

# public name -> "module:attribute", imported on first access
_LAZY = {
    "JITKernel": "tilelang_core.jit:JITKernel",
    "language": "tilelang_core.language:",
    "resolve_target": "tilelang_core.target:resolve_target",
    # TileLang's top-level names: its modules, re-exports of TVM, cache switches
    "tvm": "tvm:",
    "DataType": "tvm:DataType",
    "layout": "tilelang_core.layout:",
    "Layout": "tilelang_core.layout:Layout",
    "Fragment": "tilelang_core.layout:Fragment",
    "math": "tilelang_core.math:",
    "env": "tilelang_core.env:",
    "carver": "tilelang_core.carver:",
    "contrib": "tilelang_core.contrib:",
    "tileop": "tilelang_core.tileop:",
    "transform": "tilelang_core.transform:",
    "profiler": "tilelang_core.profiler:",
    "TensorSupplyType": "tilelang_core.profiler.supply:TensorSupplyType",
    "testing": "tilelang_core.testing:",
    "disable_cache": "tilelang_core.env:disable_cache",
    "enable_cache": "tilelang_core.env:enable_cache",
    "is_cache_enabled": "tilelang_core.env:is_cache_enabled",
    "lower": "tilelang_core.jit.compiler:lower",
    # names `import tilelang` binds as a side effect of its own imports, which TileLang code reads
    # without importing them (`tilelang.autotuner.AutoTuner`, `tilelang.dtypes.float16`)
    "autotuner": "tilelang_core.autotuner:",
    "utils": "tilelang_core.utils:",
    "engine": "tilelang_core.engine:",
    "cuda": "tilelang_core.cuda:",
    "rocm": "tilelang_core.rocm:",
    "dtypes": "tilelang_core.language.dtypes:",
    "Profiler": "tilelang_core.profiler:Profiler",
    "register_cuda_postproc": "tilelang_core.engine.callback:register_cuda_postproc",
    "register_hip_postproc": "tilelang_core.engine.callback:register_hip_postproc",
    "register_c_postproc": "tilelang_core.engine.callback:register_c_postproc",
}

__all__ = [
    "AutotuneError", "CacheError", "CompileError", "ConfigError", "FrontendError", "LaunchError", "LayoutError", "NoDeviceError", "NoToolchainError",
    "LoweringError", "PassConfigKey", "PluginError", "Target", "TargetError", "TileLangError", "__version__", "autotune", "cdiv", "compile", "jit", "next_power_of_2", "par_compile",
    "prev_power_of_2", "set_log_level",
    *_LAZY,
]


def set_log_level(level) -> None:
    """Set the level of the ``tilelang_core`` logger (TileLang's ``tilelang.set_log_level``):
    a ``logging`` level or its name ("INFO", "DEBUG")."""
    import logging

    logging.getLogger("tilelang_core").setLevel(level.upper() if isinstance(level, str) else level)


def __getattr__(name: str):
    spec = _LAZY.get(name)
    if spec is None:
        raise AttributeError(f"module 'tilelang_core' has no attribute {name!r}")
    module_name, _, attr = spec.partition(":")
    module = importlib.import_module(module_name)
    value = getattr(module, attr) if attr else module
    globals()[name] = value
    return value


if TYPE_CHECKING:  # pragma: no cover
    from . import language
    from .jit import JITKernel
    from .target import resolve_target
