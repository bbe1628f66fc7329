"""Names TileLang kernels use from its own TVM that apache-tvm 0.27 renamed.

Also ``expr.dtype`` on scalar expressions (``T.exp(x).dtype == "float32"``, ``n.dtype`` of a
``T.int32()`` variable): TVM 0.27 moved it to ``expr.ty.dtype`` and keeps ``.dtype`` only on
buffer variables; TileLang's code and tests read it everywhere.

TileLang's examples annotate helpers with ``tirx.PrimExpr`` (``from tvm import tirx``); in TVM 0.27
TIRX's scalar expressions are ``tvm.ir.Expr``. The alias is added to ``tvm.tirx`` once, when the
language loads, only where the name is missing, so TVM's own code is unaffected.
"""

import tvm

if not hasattr(tvm.tirx, "PrimExpr"):
    tvm.tirx.PrimExpr = tvm.ir.Expr
if not hasattr(tvm.tirx, "Call"):  # (tirx.Call: what T.exp(x) and friends return)
    tvm.tirx.Call = tvm.ir.Call


def _scalar_dtype(expr):
    ty = getattr(expr, "ty", None)
    if isinstance(ty, tvm.ir.PrimType):
        return ty.dtype
    raise AttributeError(f"{type(expr).__name__} of type {ty} has no dtype")


if not hasattr(tvm.ir.Expr, "dtype"):
    tvm.ir.Expr.dtype = property(_scalar_dtype)
_buffer_dtype = tvm.ir.Var.__dict__.get("dtype")
if isinstance(_buffer_dtype, property) and not getattr(_buffer_dtype.fget, "_tilelang_scalars", False):
    def _var_dtype(var, _buffer=_buffer_dtype.fget):
        return _buffer(var) if tvm.tirx.is_buffer_var(var) else _scalar_dtype(var)

    _patched = property(_var_dtype)
    _patched.fget._tilelang_scalars = True
    tvm.ir.Var.dtype = _patched


# A Python number beside a bfloat16 / float8 / float4 expression in a comparison (`if x == 0:`,
# `1 < x`): TVM 0.27's operator dispatch turns the number into a constant of the other operand's
# type only for int and float type codes, so these failed with "'int' object has no attribute
# 'expr_ty'" or "Operand should be a Expr". TileLang's TVM makes it a constant of that type (as
# TVM 0.27 already does for float literals and for arithmetic): so do we, before the dispatch.
from tvm.script.parser.core import evaluator as _evaluator  # noqa: E402


def _low_float_dtype(value):
    """The dtype of a scalar bfloat16 / float8 / float6 / float4 expression, else None."""
    if not tvm.ir.is_prim_expr(value) or not isinstance(getattr(value, "ty", None), tvm.ir.PrimType):
        return None
    dtype = str(value.ty.dtype)
    return dtype if dtype.startswith(("bfloat", "float8", "float6", "float4")) and value.ty.dtype.lanes == 1 else None


def _eval_op_low_floats(op, values, _eval_op=_evaluator._eval_op):
    if len(values) == 2:
        for i in (0, 1):
            other = values[1 - i]
            if isinstance(values[i], (int, float)) and not isinstance(values[i], bool) and _low_float_dtype(other):
                values = list(values)
                values[i] = tvm.tirx.FloatImm(_low_float_dtype(other), float(values[i]))
                break
    return _eval_op(op, values)


if not getattr(_evaluator._eval_op, "_tilelang_low_floats", False):
    _eval_op_low_floats._tilelang_low_floats = True
    _evaluator._eval_op = _eval_op_low_floats
