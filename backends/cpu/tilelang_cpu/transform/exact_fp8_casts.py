"""ExactFp8Casts: conversions to and from float8 (e4m3fn, e5m2) as exact integer arithmetic.

TVM 0.27's LLVM lowering of float8 casts treats every exponent field as normal: code 0 decodes to
0.0078125 instead of 0 in e4m3fn, subnormals are off by a binade, e5m2's inf and NaN decode as
finite values, and encoding flushes the subnormal range (measured against torch on all 256 codes
and 65536 random values). The cpu backend is the reference every other backend is checked against,
so it converts through the bit patterns itself:

- decode: sign, exponent and mantissa fields to a float32 (subnormals ``m * 2^(1 - bias - mbits)``,
  e5m2's inf / NaN, e4m3fn's NaN at 0x7f);
- encode: round to nearest even (the carry of the mantissa rounding runs into the exponent field,
  as the bit layout allows), subnormals by rounding ``|x| * 2^(bias - 1 + mbits)``, NaN kept, and
  finite overflow saturated to the largest finite value (CUDA's ``satfinite``, the conversion the
  cuda backend's code uses; torch agrees for e4m3fn, and gives inf for e5m2 past 57344).

Sources and destinations of other floating types go through float32, which holds every float8,
float16 and bfloat16 value exactly. Comparisons of float8 values (``x == 0``) and float8
arithmetic decode their operands the same way (TVM's lowering would decode them with the faults
above: ``x == 0`` was false for x = 0), arithmetic encoding its float32 result once; float8
constants are rounded from the literal they were written with.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from tilelang_core.transform.safe_values import is_if_then_else

#: name -> (exponent bits, mantissa bits, bias, has inf, largest finite code)
FORMATS = {"float8_e4m3fn": (4, 3, 7, False, 0x7E), "float8_e5m2": (5, 2, 15, True, 0x7B)}


def _u32(x):
    return tirx.const(x, "uint32")


def _bits(value):
    """The uint8 code of a float8 ``value``, with no float8-typed reinterpretation or select left
    around it (TVM's lowering would promote those to float32 before the bitcast)."""
    if isinstance(value, tvm.ir.Call) and str(getattr(value.op, "name", "")) == "tirx.reinterpret" and \
            str(value.args[0].ty) == "uint8":
        return value.args[0]
    if isinstance(value, tirx.Select):
        return tirx.Select(value.condition, _bits(value.true_value), _bits(value.false_value))
    if is_if_then_else(value):
        return tirx.if_then_else(value.args[0], _bits(value.args[1]), _bits(value.args[2]))
    return tirx.reinterpret("uint8", value)


def _decode(value, fmt: str):
    ebits, mbits, bias, has_inf, _ = FORMATS[fmt]
    u = tirx.Cast("uint32", _bits(value))
    sign = tirx.shift_left(tirx.shift_right(u, _u32(7)), _u32(31))
    exp = tirx.bitwise_and(tirx.shift_right(u, _u32(mbits)), _u32((1 << ebits) - 1))
    man = tirx.bitwise_and(u, _u32((1 << mbits) - 1))
    normal_bits = tirx.bitwise_or(sign, tirx.bitwise_or(
        tirx.shift_left(exp + _u32(127 - bias), _u32(23)), tirx.shift_left(man, _u32(23 - mbits))))
    normal = tirx.reinterpret("float32", normal_bits)
    tiny = tirx.Cast("float32", man) * tirx.const(2.0 ** (1 - bias - mbits), "float32")
    subnormal = tirx.Select(sign != _u32(0), -tiny, tiny)
    nan = tirx.reinterpret("float32", tirx.bitwise_or(sign, _u32(0x7FC00000)))
    top = _u32((1 << ebits) - 1)
    if has_inf:  # e5m2: all-ones exponent is inf (mantissa 0) or NaN
        inf = tirx.reinterpret("float32", tirx.bitwise_or(sign, _u32(0x7F800000)))
        special = tirx.Select(man == _u32(0), inf, nan)
        is_special = exp == top
    else:  # e4m3fn: only S.1111.111 is NaN
        special = nan
        is_special = tirx.And(exp == top, man == _u32((1 << mbits) - 1))
    return tirx.Select(is_special, special, tirx.Select(exp == _u32(0), subnormal, normal))


def _encode(value, fmt: str):
    ebits, mbits, bias, _, max_code = FORMATS[fmt]
    bits = tirx.reinterpret("uint32", value)
    sign = tirx.shift_left(tirx.shift_right(bits, _u32(31)), _u32(7))
    mag = tirx.bitwise_and(bits, _u32(0x7FFFFFFF))
    exp32 = tirx.Cast("int32", tirx.shift_right(mag, _u32(23))) - tirx.const(127, "int32")
    drop = 23 - mbits
    kept = tirx.shift_right(mag, _u32(drop))  # exponent and top mantissa bits, adjacent
    rem = tirx.bitwise_and(mag, _u32((1 << drop) - 1))
    half = _u32(1 << (drop - 1))
    up = tirx.Or(rem > half, tirx.And(rem == half, tirx.bitwise_and(kept, _u32(1)) == _u32(1)))
    rebias = _u32((127 - bias) << mbits)
    normal = tirx.bitwise_and(kept, _u32((1 << (8 + mbits)) - 1)) - rebias + tirx.Cast("uint32", up)
    normal = tirx.Select(normal > _u32(max_code), _u32(max_code), normal)
    scaled = tirx.reinterpret("float32", mag) * tirx.const(2.0 ** (bias - 1 + mbits), "float32")
    subnormal = tirx.Cast("uint32", tirx.nearbyint(scaled))  # round half to even
    code = tirx.Select(exp32 >= tirx.const(1 - bias, "int32"), normal, subnormal)
    nan_code = _u32((1 << 7) - 1 if fmt == "float8_e4m3fn" else 0x7E)
    code = tirx.Select(mag > _u32(0x7F800000), nan_code, code)
    code = tirx.Select(mag == _u32(0x7F800000), _u32(max_code), code)  # inf saturates too
    return tirx.reinterpret(fmt, tirx.Cast("uint8", tirx.bitwise_or(code, sign)))


def _is_float(dtype: str) -> bool:
    return dtype.startswith(("float", "bfloat"))


def _byte_storage(body):
    """(body, stores): allocated float8 tiles (T.alloc_shared / T.alloc_fragment / ...) become
    uint8 buffers of their codes, their loads reinterpretations of those; ``stores`` rewrites the
    stores into them, once the values are in their final form. TVM's LLVM lowering would give such
    a buffer float32 storage, converting every store with the faults above (and a float8 GEMM's
    tiles failed LLVM's verifier: a float32 bitcast to i8)."""
    remap = {}

    def on_alloc(alloc):
        buf = alloc.buffer
        if str(buf.ty.dtype) not in FORMATS:
            return alloc
        new = tirx.decl_buffer(list(buf.ty.shape), "uint8", name=str(buf.name), scope=str(buf.ty.storage_scope))
        remap[buf.__chandle__()] = (new, str(buf.ty.dtype))
        return tirx.AllocBuffer(new)

    def on_load(load):
        target = remap.get(load.source.__chandle__())
        return load if target is None else tirx.reinterpret(target[1], tirx.BufferLoad(target[0], list(load.indices)))

    def on_store(store):
        target = remap.get(store.buffer.__chandle__())
        return store if target is None else tirx.BufferStore(target[0], _bits(store.value), list(store.indices))

    def stores(b):
        return tvm_ffi.structural_map(b, [(tirx.BufferStore, on_store)]) if remap else b

    body = tvm_ffi.structural_map(body, [(tirx.AllocBuffer, on_alloc)])
    return (tvm_ffi.structural_map(body, [(tvm.ir.TensorLoad, on_load)]) if remap else body), stores


def exact_fp8_casts(func: tirx.PrimFunc) -> tirx.PrimFunc:
    def on_cast(cast):
        dst, src = str(cast.ty), str(cast.value.ty)
        if dst == src or (dst not in FORMATS and src not in FORMATS):
            return cast
        if "x" in dst.split("_")[-1] or "x" in src.split("_")[-1]:  # pragma: no cover - vector casts come later
            return cast
        value = cast.value
        if src in FORMATS:
            value = _decode(value, src)
            src = "float32"
        if dst in FORMATS:
            if src != "float32":
                value = tirx.Cast("float32", value)
            return _encode(value, dst)
        return value if dst == "float32" else tirx.Cast(dst, value)

    def on_imm(imm):
        # a constant in a float8 type keeps the literal it was written with (`x == 0.1`): round it
        # as a conversion would, so that comparisons and arithmetic see the float8 value
        dtype = str(imm.ty)
        return _encode(tirx.FloatImm("float32", imm.value), dtype) if dtype in FORMATS else imm

    def on_compare(cmp):
        dtype = str(cmp.a.ty)
        if dtype not in FORMATS:
            return cmp
        return type(cmp)(_decode(cmp.a, dtype), _decode(cmp.b, dtype))

    def on_arith(op):
        dtype = str(op.ty)
        if dtype not in FORMATS:
            return op
        # float32 holds every float8 value and the exact sum, product or quotient's first 24 bits:
        # one rounding to float8 after it is the float8 operation's result
        return _encode(type(op)(_decode(op.a, dtype), _decode(op.b, dtype)), dtype)

    body, byte_stores = _byte_storage(func.body)
    body = tvm_ffi.structural_map(
        body, [(tirx.Cast, on_cast), (tirx.FloatImm, on_imm)]
        + [(kind, on_compare) for kind in (tirx.EQ, tirx.NE, tirx.LT, tirx.LE, tirx.GT, tirx.GE)]
        + [(kind, on_arith) for kind in (tirx.Add, tirx.Sub, tirx.Mul, tirx.Div, tirx.Min, tirx.Max)], order="post")
    return func.with_body(byte_stores(body))


__all__ = ["FORMATS", "exact_fp8_casts"]
