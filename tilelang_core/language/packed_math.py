"""TileLang's packed two-lane arithmetic (``T.add2``, ``T.max2``, ``T.abs2``, ...) on
``float32x2``, ``bfloat16x2`` and ``float16x2`` values, as DeepSeek's quantization kernels use::

    packed = T.bfloat16x2(x[2 * j], x[2 * j + 1])
    amax[j] = T.max2(T.abs2(packed), amax[j])

Each is the scalar operation on each lane (the result assembled from the lanes), so every backend
prints it with the operations it already has; a C compiler turns the pair into the packed
instruction where the target has one (HMNMX2, HFMA2 on sm_80+).
"""

from __future__ import annotations

import tvm
from tvm import tirx

from .expr import _expr

_PACKED = ("float32x2", "bfloat16x2", "float16x2")


def _lanes(name: str, *values):
    values = [_expr(v, f"T.{name}") for v in values]
    dtypes = {str(v.ty) for v in values}
    for v in values:
        if str(v.ty) not in _PACKED:
            raise ValueError(f"T.{name} takes {', '.join(_PACKED)} values, got {v.ty}")
    if len(dtypes) > 1:
        raise ValueError(f"T.{name} takes values of one packed dtype, got {sorted(dtypes)}")
    return values


def _lanewise(name: str, fn, *values):
    values = _lanes(name, *values)
    lanes = [fn(*[tirx.Shuffle([v], [lane]) for v in values]) for lane in range(2)]
    return tirx.Shuffle(lanes, [0, 1])


def add2(x, y):
    """Lane-wise ``x + y`` of two packed pairs."""
    return _lanewise("add2", lambda a, b: a + b, x, y)


def sub2(x, y):
    """Lane-wise ``x - y`` of two packed pairs."""
    return _lanewise("sub2", lambda a, b: a - b, x, y)


def mul2(x, y):
    """Lane-wise ``x * y`` of two packed pairs."""
    return _lanewise("mul2", lambda a, b: a * b, x, y)


def fma2(x, y, z):
    """Lane-wise ``x * y + z`` of three packed pairs."""
    return _lanewise("fma2", lambda a, b, c: a * b + c, x, y, z)


def max2(x, y):
    """Lane-wise maximum of two packed pairs."""
    return _lanewise("max2", tirx.max, x, y)


def min2(x, y):
    """Lane-wise minimum of two packed pairs."""
    return _lanewise("min2", tirx.min, x, y)


def abs2(x):
    """Lane-wise absolute value of a packed pair."""
    return _lanewise("abs2", tvm.tirx.abs, x)


__all__ = ["abs2", "add2", "fma2", "max2", "min2", "mul2", "sub2"]
