"""What each binary TIRX expression node computes, as a numpy function of its two operands.

One table for every place that evaluates kernel expressions on arrays: the SIMT interpreter
(tilelang_core/simt/interpreter.py) and the parse-time bounds check's search for an index that
leaves its buffer (tilelang_core/language/bounds_check.py). Keys are the node class names
(``type(expr).__name__``). ``Div`` is C's division: true division on floats, truncation on
integers; ``Mod`` is C's remainder (``fmod``); ``FloorDiv``/``FloorMod`` round toward -inf.

Example::

    BINARY_UFUNCS[type(expr).__name__](a, b)     # expr = tirx.FloorMod(x, 8): np.mod(a, b)
"""

from __future__ import annotations

import numpy as np


def _c_div(a, b):
    if np.issubdtype(np.asarray(a).dtype, np.floating):
        return np.true_divide(a, b)
    return np.trunc(np.true_divide(a, b)).astype(np.int64)


BINARY_UFUNCS = {
    "Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "FloorDiv": np.floor_divide,
    "FloorMod": np.mod, "Div": _c_div, "Mod": np.fmod,
    "Min": np.minimum, "Max": np.maximum, "EQ": np.equal, "NE": np.not_equal, "LT": np.less,
    "LE": np.less_equal, "GT": np.greater, "GE": np.greater_equal, "And": np.logical_and,
    "Or": np.logical_or, "BitwiseXor": np.bitwise_xor, "BitwiseAnd": np.bitwise_and,
    "BitwiseOr": np.bitwise_or, "LShift": np.left_shift, "RShift": np.right_shift,
}

#: the nodes whose right operand divides (a zero there is undefined behaviour in the kernel)
DIVISIONS = ("Div", "Mod", "FloorDiv", "FloorMod")

__all__ = ["BINARY_UFUNCS", "DIVISIONS"]
