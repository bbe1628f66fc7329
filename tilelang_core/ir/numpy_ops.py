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



class Unsupported(Exception):
    """:func:`evaluate` met a node it does not compute (a load, a call, a variable not in env)."""


def evaluate(expr, env: dict):
    """Integer/boolean ``expr`` over numpy arrays: ``env`` maps each variable's handle
    (``var.__chandle__()``) to its values. Raises Unsupported for anything else, and for a
    division by zero (undefined in the kernel)."""
    from tvm import tirx

    kind = type(expr).__name__
    if isinstance(expr, tirx.IntImm):
        return np.int64(expr.value)
    if isinstance(expr, tirx.Var):
        if expr.__chandle__() not in env:
            raise Unsupported(f"'{expr.name}' has no value here")
        return env[expr.__chandle__()]
    if isinstance(expr, tirx.Cast) and str(expr.ty).startswith(("int", "uint", "bool")):
        return evaluate(expr.value, env)
    if kind == "Not":
        return np.logical_not(evaluate(expr.a, env))
    if kind == "Select":
        return np.where(evaluate(expr.condition, env), evaluate(expr.true_value, env),
                        evaluate(expr.false_value, env))
    if kind in BINARY_UFUNCS:
        a, b = evaluate(expr.a, env), evaluate(expr.b, env)
        if kind in DIVISIONS and np.any(b == 0):
            raise Unsupported("a division by zero")
        return BINARY_UFUNCS[kind](a, b)
    raise Unsupported(f"{kind} is not integer arithmetic")


__all__ = ["BINARY_UFUNCS", "DIVISIONS", "Unsupported", "evaluate"]
