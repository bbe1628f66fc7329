"""Scalar expressions (TIRX PrimExprs over block indices, loop variables and lets): evaluation
for the simulator and C text for the codegen. Dispatch is by node class name, which is stable
across the tvm.tirx / tvm.ir.prim module moves."""

from __future__ import annotations

import math

from tilelang_core.errors import LoweringError

_BIN = {
    "Add": lambda a, b: a + b, "Sub": lambda a, b: a - b, "Mul": lambda a, b: a * b,
    "FloorDiv": lambda a, b: a // b, "FloorMod": lambda a, b: a % b,
    "Min": min, "Max": max,
    "LT": lambda a, b: a < b, "LE": lambda a, b: a <= b, "GT": lambda a, b: a > b,
    "GE": lambda a, b: a >= b, "EQ": lambda a, b: a == b, "NE": lambda a, b: a != b,
    "And": lambda a, b: bool(a) and bool(b), "Or": lambda a, b: bool(a) or bool(b),
    "BitwiseAnd": lambda a, b: a & b, "BitwiseOr": lambda a, b: a | b,
}
_C_BIN = {"Add": "+", "Sub": "-", "Mul": "*", "LT": "<", "LE": "<=", "GT": ">", "GE": ">=",
          "EQ": "==", "NE": "!=", "And": "&&", "Or": "||", "BitwiseAnd": "&", "BitwiseOr": "|"}
_MATH = {"tirx.exp": math.exp, "tirx.exp2": lambda x: 2.0 ** x, "tirx.log": math.log,
         "tirx.sqrt": math.sqrt, "tirx.rsqrt": lambda x: 1 / math.sqrt(x), "tirx.fabs": abs}


def _div(a, b):
    if isinstance(a, int) and isinstance(b, int):
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q  # truncating, like C
    return a / b


def _mod(a, b):
    return a - _div(a, b) * b if isinstance(a, int) and isinstance(b, int) else math.fmod(a, b)


def evaluate(expr, env: dict):
    """Value of ``expr`` with variables looked up in ``env`` (keyed by the Var object)."""
    if isinstance(expr, (bool, int, float)):
        return expr
    kind = type(expr).__name__
    if kind in ("IntImm",):
        return bool(expr.value) if str(expr.ty.dtype) == "bool" else int(expr.value)
    if kind == "FloatImm":
        return float(expr.value)
    if kind == "Var":
        try:
            return env[expr]
        except KeyError:
            raise LoweringError(f"scalar variable '{expr}' is not bound (the Ascend program "
                                f"refers to a value it never defines)") from None
    if kind in _BIN:
        return _BIN[kind](evaluate(expr.a, env), evaluate(expr.b, env))
    if kind == "Div":
        return _div(evaluate(expr.a, env), evaluate(expr.b, env))
    if kind == "Mod":
        return _mod(evaluate(expr.a, env), evaluate(expr.b, env))
    if kind == "Not":
        return not evaluate(expr.a, env)
    if kind == "Select":
        return evaluate(expr.true_value if evaluate(expr.condition, env) else expr.false_value, env)
    if kind == "Cast":
        value = evaluate(expr.value, env)
        dtype = str(expr.ty.dtype)
        return int(value) if dtype.startswith(("int", "uint")) else (
            bool(value) if dtype == "bool" else float(value))
    if kind == "Call":
        name = str(expr.op.name)
        if name == "prim.if_then_else":
            c, t, f = expr.args
            return evaluate(t if evaluate(c, env) else f, env)
        if name in _MATH:
            return _MATH[name](*[evaluate(a, env) for a in expr.args])
    raise LoweringError(f"the Ascend backend cannot evaluate the scalar expression {expr} "
                        f"({kind}); keep scalar expressions to integer/float arithmetic")


def to_c(expr) -> str:
    """C text of a scalar expression (Ascend C scalar code)."""
    if isinstance(expr, bool):
        return "true" if expr else "false"
    if isinstance(expr, (int, float)):
        return repr(expr)
    kind = type(expr).__name__
    if kind == "IntImm":
        return str(int(expr.value))
    if kind == "FloatImm":
        v = float(expr.value)
        if math.isinf(v):
            return "(-INFINITY)" if v < 0 else "INFINITY"
        return f"{v!r}f"
    if kind == "Var":
        return str(expr)
    if kind in _C_BIN:
        return f"({to_c(expr.a)} {_C_BIN[kind]} {to_c(expr.b)})"
    if kind in ("FloorDiv", "Div"):
        return f"({to_c(expr.a)} / {to_c(expr.b)})"
    if kind in ("FloorMod", "Mod"):
        return f"({to_c(expr.a)} % {to_c(expr.b)})"
    if kind in ("Min", "Max"):
        return f"{kind.lower()}({to_c(expr.a)}, {to_c(expr.b)})"
    if kind == "Not":
        return f"(!{to_c(expr.a)})"
    if kind == "Select":
        return f"({to_c(expr.condition)} ? {to_c(expr.true_value)} : {to_c(expr.false_value)})"
    if kind == "Cast":
        return f"(({_c_type(str(expr.ty.dtype))}){to_c(expr.value)})"
    if kind == "Call" and str(expr.op.name) == "prim.if_then_else":
        c, t, f = expr.args
        return f"({to_c(c)} ? {to_c(t)} : {to_c(f)})"
    if kind == "Call":
        return f"{str(expr.op.name).split('.')[-1]}({', '.join(to_c(a) for a in expr.args)})"
    return str(expr)


def _c_type(dtype: str) -> str:
    return C_TYPES.get(dtype, dtype)


C_TYPES = {"float16": "half", "bfloat16": "bfloat16_t", "float32": "float", "int32": "int32_t",
           "int16": "int16_t", "int8": "int8_t", "uint8": "uint8_t", "bool": "uint8_t",
           "int64": "int64_t"}
