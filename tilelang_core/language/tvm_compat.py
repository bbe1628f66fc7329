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


# An integer literal beside an integer expression in `&`, `|`, `^` (`x & 0xFFFFFFFF`, TileLang's
# test_tilelang_intimm): TVM 0.27 converts the Python int to a 32-bit constant first, so an int64
# `x & 0x17FFFFFFF` silently became `x & 2147483647` and a uint32 `x & 0xFFFFFFFF` failed ("cannot
# make uint from negative value -1"); arithmetic and comparisons already take the operand's type.
# The literal becomes a constant of the other operand's type: its value where it fits, else its
# bit pattern where the operand's width holds every bit (`int32 & 0xFFFFFFFF` is `& -1`, the same
# bits); a literal with bits beyond that width is refused (those bits would be dropped).
from tvm.ir import _overload_prim_expr as _ov  # noqa: E402


def _bitwise_literal(value, like):
    if isinstance(value, bool) or not isinstance(value, int) or not tvm.ir.is_prim_expr(like):
        return value
    ty = getattr(like, "ty", None)
    if not isinstance(ty, tvm.ir.PrimType) or ty.dtype.lanes != 1 or not str(ty.dtype).startswith(("int", "uint")):
        return value
    bits, signed = ty.dtype.bits, str(ty.dtype).startswith("int")
    low, high = (-(1 << (bits - 1)), 1 << (bits - 1)) if signed else (0, 1 << bits)
    if not low <= value < high:
        if not -(1 << (bits - 1)) <= value < (1 << bits):
            from ..errors import FrontendError

            raise FrontendError(f"the integer literal {value:#x} has bits beyond the {bits}-bit {ty.dtype} operand "
                                f"of a bitwise operation, which would be dropped: cast the operand to a wider type "
                                f"(T.cast(x, 'int64')) or write a literal that fits")
        value &= (1 << bits) - 1
        if signed and value >= 1 << (bits - 1):
            value -= 1 << bits
    return tvm.tirx.const(value, str(ty.dtype))


def _literal_typed(op):
    def typed(self, other):
        return op(self, _bitwise_literal(other, self))
    typed._tilelang_literals = True
    return typed


for _name in ("__and__", "__rand__", "__or__", "__ror__", "__xor__", "__rxor__"):
    if not getattr(getattr(_ov, _name), "_tilelang_literals", False):
        setattr(_ov, _name, _literal_typed(getattr(_ov, _name)))
