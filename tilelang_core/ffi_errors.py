"""Keep TileLang error types across TVM's C++ boundary.

A pass running inside ``tvm.transform.Sequential`` that raises a LoweringError would reach the
user as a bare RuntimeError: tvm-ffi rebuilds Python exceptions from their registered kind.
Registering our classes (under a ``tilelang.`` prefix, so no TVM kind is shadowed) makes the
round trip give back the same class and message. Imported by the modules that import tvm.
"""

from __future__ import annotations

import tvm_ffi

from . import errors

_CLASSES = (errors.TileLangError, errors.ConfigError, errors.PluginError, errors.TargetError, errors.FrontendError,
            errors.LayoutError, errors.LoweringError, errors.CompileError, errors.LaunchError, errors.CacheError)

for _cls in _CLASSES:
    tvm_ffi.register_error(f"tilelang.{_cls.__name__}", _cls)
