"""Scalar expressions: math functions, casts, ``T.ceildiv``, ``T.if_then_else``, ``T.infinity``.

On Python numbers the integer helpers (``ceildiv``, ``max``, ``min``, ``abs``) compute at once, so
tile sizes stay plain ints; on symbolic values they build TIRX expressions::

    n_tiles = T.ceildiv(K, 32)                     # int if K is an int, an expression otherwise
    y = T.exp2(x * scale - T.max(m, 0))
"""

from __future__ import annotations

import builtins
import math

import tvm
import tvm_ffi
from tvm import tirx

from ..errors import FrontendError
from .dtypes import canonical_dtype

_NUMBER = (int, float)


def _is_number(x) -> bool:
    return isinstance(x, _NUMBER) and not isinstance(x, bool)


def _expr(x, what: str):
    if isinstance(x, tvm.tirx.script.builder.scalar_wrapper):
        return x.scalar
    if _is_number(x):
        return tirx.const(x, "float32" if isinstance(x, float) else "int32")
    if isinstance(x, tvm_ffi.core.ObjectConvertible):
        x = x.asobject()  # TVM keeps `a == b` / `a != b` lazy (EqualOp, NotEqualOp)
    if isinstance(x, tvm.ir.Expr):
        return x
    raise FrontendError(f"{what} expects a number or a scalar expression, got {x!r}")


def ceildiv(a, b):
    """``(a + b - 1) // b``; an int when both are ints."""
    if isinstance(a, int) and isinstance(b, int):
        if b == 0:
            raise FrontendError("T.ceildiv: division by zero")
        return -(-a // b)
    return tirx.ceildiv(_expr(a, "T.ceildiv"), _expr(b, "T.ceildiv"))


def align_up(x, y):
    """``x`` rounded up to a multiple of ``y`` (``T.ceildiv(x, y) * y``)."""
    return ceildiv(x, y) * y


def _fold(python_op, tir_op, what: str, values):
    """Fold two or more values with ``python_op`` when all are numbers (a Python constant), else
    with ``tir_op`` on expressions."""
    if all(_is_number(v) for v in values):
        return python_op(*values)
    out = tir_op(_expr(values[0], what), _expr(values[1], what))
    for v in values[2:]:
        out = tir_op(out, _expr(v, what))
    return out


def max(a, b, *rest):  # noqa: A001 - TileLang's name
    """Maximum of two or more values."""
    return _fold(builtins.max, tirx.max, "T.max", (a, b, *rest))


def min(a, b, *rest):  # noqa: A001 - TileLang's name
    """Minimum of two or more values."""
    return _fold(builtins.min, tirx.min, "T.min", (a, b, *rest))


def abs(x):  # noqa: A001 - TileLang's name
    """Absolute value."""
    return builtins.abs(x) if _is_number(x) else tirx.abs(_expr(x, "T.abs"))


def _unary(name: str, fn):
    def op(x):
        return fn(_expr(x, f"T.{name}"))
    op.__name__ = name
    op.__doc__ = f"Element-wise ``{name}`` of a scalar expression."
    return op


exp = _unary("exp", tirx.exp)
exp2 = _unary("exp2", tirx.exp2)
exp10 = _unary("exp10", tirx.exp10)
log = _unary("log", tirx.log)
log2 = _unary("log2", tirx.log2)
log10 = _unary("log10", tirx.log10)
sqrt = _unary("sqrt", tirx.sqrt)
rsqrt = _unary("rsqrt", tirx.rsqrt)
tanh = _unary("tanh", tirx.tanh)
sigmoid = _unary("sigmoid", tirx.sigmoid)
erf = _unary("erf", tirx.erf)
sin = _unary("sin", tirx.sin)
cos = _unary("cos", tirx.cos)
floor = _unary("floor", tirx.floor)
ceil = _unary("ceil", tirx.ceil)
round = _unary("round", tirx.round)  # noqa: A001
trunc = _unary("trunc", tirx.trunc)
isnan = _unary("isnan", tirx.isnan)
isinf = _unary("isinf", tirx.isinf)


def pow(x, y):  # noqa: A001
    """``x ** y``."""
    return tirx.pow(_expr(x, "T.pow"), _expr(y, "T.pow"))


def floordiv(a, b):
    return a // b if isinstance(a, int) and isinstance(b, int) else \
        tirx.floordiv(_expr(a, "T.floordiv"), _expr(b, "T.floordiv"))


def floormod(a, b):
    return a % b if isinstance(a, int) and isinstance(b, int) else \
        tirx.floormod(_expr(a, "T.floormod"), _expr(b, "T.floormod"))


def truncdiv(a, b):
    return tirx.truncdiv(_expr(a, "T.truncdiv"), _expr(b, "T.truncdiv"))


def truncmod(a, b):
    return tirx.truncmod(_expr(a, "T.truncmod"), _expr(b, "T.truncmod"))


def clamp(dst, min_val, max_val):
    """``dst`` limited to ``[min_val, max_val]`` (TileLang's parameter names)."""
    return max(min(dst, max_val), min_val)


def if_then_else(cond, then_value, else_value):
    """``then_value if cond else else_value``, evaluated lazily on the device."""
    if isinstance(cond, bool):
        return then_value if cond else else_value
    return tirx.if_then_else(_expr(cond, "T.if_then_else"), then_value, else_value)


def Select(cond, then_value, else_value):  # noqa: N802 - TVM's name
    """Both branches evaluated, one selected. A Python ``bool`` condition (``T.Select(True, a, b)``,
    as TileLang's kernels write) selects at compile time."""
    if isinstance(cond, bool):
        return then_value if cond else else_value
    return tirx.Select(_expr(cond, "T.Select"), then_value, else_value)


def infinity(dtype):
    """+inf of a floating dtype (``-T.infinity(T.float32)`` for -inf)."""
    dtype = canonical_dtype(dtype, "T.infinity")
    # TVM's infinity() knows neither of these (float8_e4m3fn has no infinity, and says so), and
    # its CUDA printer spells a constant inf of them "inff": their bits, reinterpreted
    bits = {"bfloat16": (0x7F80, "uint16"), "float8_e5m2": (0x7C, "uint8")}.get(dtype)
    if bits is not None:
        return tirx.reinterpret(dtype, tirx.const(*bits))
    return tirx.infinity(dtype)


def max_value(dtype):
    """Largest finite value of ``dtype``."""
    return tirx.max_value(canonical_dtype(dtype, "T.max_value"))


def min_value(dtype):
    """Smallest finite value of ``dtype``."""
    return tirx.min_value(canonical_dtype(dtype, "T.min_value"))


#: TileLang's rounding modifiers of ``T.cast`` (PTX's names); "" is the target's default conversion
CAST_ROUNDING_MODES = ("", "rn", "rz", "rp", "rm", "rs")


def cast(value, dtype, round: str = "", sat: bool = True, rbits=None):  # noqa: A002 - TileLang's name
    """``value`` converted to ``dtype`` (TileLang's argument order).

    ``round``, ``sat`` and ``rbits`` are TileLang's PTX-style options, checked as TileLang checks
    them (ValueError). Every backend here converts floats by rounding to nearest even, float8
    saturating to its largest finite value, and floats to integers by truncation: options that ask
    for exactly that (``round="rn"`` between floats, ``round="rz"`` to an integer, ``sat=False``
    where nothing saturates) or that cannot change the value (a widening conversion) are accepted;
    the others (directed rounding, stochastic ``"rs"``, which needs sm_100a, unsaturated float8) are
    refused with the reason: TileLang's CUDA code generator leaves rz/rp/rm and unsaturated float8
    unlowered (the default conversion runs instead), which would be a silent difference here.
    """
    if round not in CAST_ROUNDING_MODES:
        raise ValueError(f"Invalid round '{round}'. Must be one of: {sorted(CAST_ROUNDING_MODES)}")
    if not isinstance(sat, bool):
        raise ValueError(f"Invalid sat '{sat}'. Must be a bool (True for satfinite, False for no saturation)")
    if round == "rs" and rbits is None:
        raise ValueError("rbits is required when round='rs' (stochastic rounding)")
    if round != "rs" and rbits is not None:
        raise ValueError("rbits is only valid with round='rs' (stochastic rounding)")
    dtype = canonical_dtype(dtype, "T.cast")
    if _is_number(value) or isinstance(value, bool):
        source = "float64" if isinstance(value, float) else "int64"
        _check_cast_options(source, dtype, round, sat)
        return tirx.const(value, dtype)
    value = _expr(value, "T.cast")
    _check_cast_options(str(value.ty), dtype, round, sat)
    return value if str(value.ty) == dtype else tirx.Cast(dtype, value)


def _format_tag(dtype: str) -> str:
    """FP16, BF16, FP8, FP6, FP4: how TileLang's messages name a conversion's target format."""
    if dtype.startswith("bfloat"):
        return "BF16"
    return next((f"FP{bits}" for bits in ("16", "8", "6", "4") if dtype.startswith(f"float{bits}")), dtype)


def _check_cast_options(source: str, dtype: str, round: str, sat: bool) -> None:  # noqa: A002
    """Refuse the ``T.cast`` options that would convert differently from the default (see cast)."""
    src, dst = tvm.DataType(source), tvm.DataType(dtype)
    src_float, dst_float = source.startswith(("float", "bfloat")), dtype.startswith(("float", "bfloat"))
    narrow_float = dst_float and dtype.startswith(("float8", "float4", "float6"))
    if round == "rs":
        # (TileLang's words, which its tests match, then ours)
        raise FrontendError(f"T.cast(..., {dtype!r}, round='rs'): Stochastic rounding f32-to-{_format_tag(dtype)} "
                            "requires sm_100a (its cvt.rs), which no TileLang-X target has (cuda sm_80..sm_90a, "
                            "hip, metal, cpu); cast without round= (round to nearest even)")
    if not sat and narrow_float:
        raise FrontendError(f"T.cast(..., {dtype!r}, sat=False): conversions to {dtype} saturate to its largest "
                            "finite value on every TileLang-X target (TileLang's CUDA code saturates too); "
                            "drop sat=False")
    # a widening float conversion is exact, so every rounding mode gives its value; integers to
    # integers do not round
    exact = source == dtype or (src_float and dst_float and dst.bits > src.bits and not narrow_float)
    default = "rn" if dst_float else ("rz" if src_float else None)
    if not round or exact or default is None or round == default:
        return
    how = "round to nearest even" if dst_float else "truncate toward zero"
    fix = "" if dst_float else f"; round first (T.{_ROUND_FUNCS[round]}) and cast that"
    raise FrontendError(f"T.cast({source} -> {dtype}, round={round!r}): TileLang-X's conversions to {dtype} "
                        f"{how}, and directed rounding is not lowered (TileLang reserves it and its CUDA code "
                        f"converts the default way){fix}")


_ROUND_FUNCS = {"rn": "nearbyint", "rz": "trunc", "rp": "ceil", "rm": "floor"}


def Cast(dtype, value):  # noqa: N802 - TVM's name and argument order
    """``value`` converted to ``dtype`` (TVM's argument order)."""
    return cast(value, dtype)


pi = math.pi
