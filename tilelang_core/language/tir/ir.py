"""``tilelang.language.tir.ir``: TileLang's TIR-level builders; here every public name of ``T``
(``tilelang_core.language``), TVM's expression classes among them (``Shuffle``, ``Ramp``)."""

import types

from ... import language as _T

__all__ = sorted(name for name, value in vars(_T).items()
                 if not name.startswith("_") and not isinstance(value, types.ModuleType)
                 and name != "annotations")  # (the __future__ feature, not a builder)
globals().update({name: getattr(_T, name) for name in __all__})

# TileLang's test suite imports the set of T.cast rounding modes from here
_VALID_CAST_ROUNDING_MODES = set(_T.expr.CAST_ROUNDING_MODES)
