"""Scalar intrinsics and low-level statements TileLang re-exports from TVM's script builder.

Bit manipulation (``T.reinterpret``, ``T.shift_left``, ``T.bitwise_and``, ...), extra math
(``T.fmod``, ``T.log1p``, ...), external calls (``T.call_extern``), and the statement forms
``T.evaluate``, ``T.attr``, ``T.sync_threads``, ``T.assume``. They build plain TIRX, which every
backend's code generator prints; a backend that cannot lower one says so at compile time.

Example::

    bits = T.reinterpret(x, T.uint32)          # the float's bit pattern
    sign = T.shift_right(bits, 31)
    T.sync_threads()                           # __syncthreads(): a block-wide barrier
"""

from __future__ import annotations

import math

import tvm
from tvm import tirx
from tvm.script.ir_builder import tirx as B

from ..errors import FrontendError
from ..ir import intrinsics as I
from .dtypes import canonical_dtype
from .expr import _expr, _unary
from .kernel import current_kernel
from .thread_allreduce import ReduceScope, is_reduce_scope, tvm_thread_allreduce  # noqa: F401 - T. name


def reinterpret(value, dtype):
    """The bits of ``value`` read as ``dtype`` (same width): ``T.reinterpret(x, T.uint32)``.

    TileLang also accepts ``T.reinterpret(dtype, value)``; both orders work.
    """
    if isinstance(value, str) and not isinstance(dtype, str):
        value, dtype = dtype, value
    return tirx.reinterpret(canonical_dtype(dtype, "T.reinterpret"), _expr(value, "T.reinterpret"))


def _binary(name: str, fn):
    def op(a, b):
        return fn(_expr(a, f"T.{name}"), _expr(b, f"T.{name}"))
    op.__name__ = name
    op.__doc__ = f"``{name}`` of two scalar expressions."
    return op


shift_left = _binary("shift_left", tirx.shift_left)
shift_right = _binary("shift_right", tirx.shift_right)
bitwise_and = _binary("bitwise_and", tirx.bitwise_and)
bitwise_or = _binary("bitwise_or", tirx.bitwise_or)
bitwise_xor = _binary("bitwise_xor", tirx.bitwise_xor)
fmod = _binary("fmod", tirx.fmod)
copysign = _binary("copysign", tirx.copysign)
nextafter = _binary("nextafter", tirx.nextafter)
hypot = _binary("hypot", tirx.hypot)
ldexp = _binary("ldexp", tirx.ldexp)


def bitwise_not(x):
    """``~x`` of an integer expression."""
    return tirx.bitwise_not(_expr(x, "T.bitwise_not"))


popcount = _unary("popcount", tirx.popcount)
clz = _unary("clz", tirx.clz)
nearbyint = _unary("nearbyint", tirx.nearbyint)
log1p = _unary("log1p", tirx.log1p)
tan = _unary("tan", tirx.tan)
atan = _unary("atan", tirx.atan)
cosh = _unary("cosh", tirx.cosh)
sinh = _unary("sinh", tirx.sinh)
isfinite = _unary("isfinite", tirx.isfinite)


def _fast(name: str, fn):
    def op(x):
        x = _expr(x, f"T.{name}")
        dtype = str(x.ty)
        if not dtype.startswith(("float", "bfloat")) or dtype.startswith(("float8_", "float6_", "float4_")):
            raise TypeError(f"T.{name} only supports floating-point inputs, but got {dtype}")
        return fn(x)
    op.__name__ = name
    op.__doc__ = (f"TileLang's fast-math ``{name}``: here the precise function, which every backend "
                  "has (a fast approximation is the backend's choice, never a different result "
                  "beyond the function's own rounding).")
    return op


# TileLang's fast-math intrinsics (CUDA's __expf family); floating-point inputs only
__exp = _fast("__exp", tirx.exp)
__exp10 = _fast("__exp10", tirx.exp10)
__log = _fast("__log", tirx.log)
__log2 = _fast("__log2", tirx.log2)
__log10 = _fast("__log10", tirx.log10)
__tan = _fast("__tan", tirx.tan)
__cos = _fast("__cos", tirx.cos)
__sin = _fast("__sin", tirx.sin)


def likely(cond):
    """A branch hint: ``cond``, expected true."""
    return tirx.likely(_expr(cond, "T.likely"))


def call_extern(*args, dtype=None):
    """A call of a device function returning ``dtype`` (``"handle"`` for void): TVM's
    ``T.call_extern(dtype, "f", *args)`` or TileLang's ``T.call_extern("f", *args, dtype=dtype)``.
    The function must exist in the generated source (a backend's headers)."""
    if dtype is None:
        if len(args) < 2:
            raise FrontendError("T.call_extern takes (dtype, func_name, *args) or (func_name, *args, dtype=...)")
        dtype, args = args[0], args[1:]
    if not args or not isinstance(args[0], str):
        raise FrontendError(f"T.call_extern: the function name must be a string, got {args[0] if args else None!r}")
    func_name, rest = args[0], args[1:]
    return tirx.call_extern(canonical_dtype(dtype, "T.call_extern") if dtype != "handle" else "handle",
                            func_name, *rest)


def call_intrin(dtype, op_name: str, *args):
    """A call of the TVM intrinsic ``op_name`` (``"tirx.popcount"``, ...)."""
    return tirx.call_intrin(dtype, op_name, *args)


def evaluate(value):
    """A statement that evaluates ``value`` (a call made for its effect)."""
    return B.evaluate(value)


def attr(node, attr_key: str, value):
    """``with T.attr(node, key, value):`` a TVM attribute around the body (TileLang's low-level
    form). ``reduce_scope`` around a ``T.tvm_thread_allreduce`` names its reducer
    (language/thread_allreduce.py) and adds no attribute."""
    if is_reduce_scope(node, attr_key):
        return ReduceScope(node)
    return B.attr(node, attr_key, value)


def func_attr(attrs: dict):
    """``T.func_attr({"tir.noalias": True})``: attributes of the PrimFunc (TVMScript's form, which
    TileLang kernels carry); our passes read only the ``tl.*`` ones they document."""
    if not isinstance(attrs, dict):
        raise FrontendError(f"T.func_attr takes a dict of attributes, got {attrs!r}")
    B.func_attr(attrs)


def sync_threads(barrier_id=None, arrive_count=None):
    """A barrier for every thread of the block (``__syncthreads()`` on CUDA).

    ``T.sync_threads(barrier_id, arrive_count)`` is TileLang's named barrier: a barrier among the
    ``arrive_count`` threads that reach barrier ``barrier_id`` (``bar.sync id, count``), used inside
    a branch that selects those threads (``if tx < 256: ... T.sync_threads(3, 256)``). The count
    must be the number of threads the enclosing ``if`` conditions select (the whole block outside
    any), in whole warps; anything else would hang and is refused at the line. ``barrier_id``
    alone is that barrier over the whole block, as in TileLang.
    """
    kernel = current_kernel("T.sync_threads")
    if barrier_id is None and arrive_count is None:
        B.evaluate(tirx.call_intrin("int32", "tirx.tvm_storage_sync", "shared"))
        return
    if barrier_id is None:
        raise FrontendError("T.sync_threads(arrive_count=...) needs the barrier_id too (a named barrier over "
                            "arrive_count threads), or neither (the whole block)")
    if arrive_count is None:  # TileLang's named barrier over the whole block
        arrive_count = math.prod(kernel.threads)
    values = []
    for what, value in (("barrier_id", barrier_id), ("arrive_count", arrive_count)):
        value = _through_lets(value)  # (``barrier_id = T.int32(1)``: a name bound to a constant)
        value = value.value if isinstance(value, tirx.IntImm) else value
        if isinstance(value, bool) or not isinstance(value, int):
            raise FrontendError(f"T.sync_threads: {what} must be a compile-time integer, got {value!r}")
        values.append(value)
    if not 1 <= values[0] <= 15:
        raise FrontendError(f"T.sync_threads: barrier_id must be 1 to 15 (barrier 0 is the block's "
                            f"T.sync_threads()), got {values[0]}")
    if values[1] < 1:
        raise FrontendError(f"T.sync_threads: arrive_count must be positive, got {values[1]}")
    B.evaluate(I.call("named_barrier", "void", tirx.const(values[0], "int32"), tirx.const(values[1], "int32")))


def _through_lets(value):
    """``value`` with the names the kernel bound (``i = T.int32(1)``) replaced by their values."""
    from .parser import current_parser, through_lets  # (the parser imports this module)

    parser = current_parser.get()
    if parser is None or not isinstance(value, tvm.ir.Var):
        return value
    return through_lets(parser, value)


def let(var, value, body=None):
    """``T.let(v, value)``: bind the variable ``v`` (made with ``T.int32()`` and the like) to
    ``value`` for the statements after it; with ``body``, the expression ``body`` with ``v`` bound
    (TileLang's ``T.let``)."""
    if not isinstance(var, tvm.ir.Var):
        raise FrontendError(f"T.let binds a variable (v = T.int32(); T.let(v, value)), got {var!r}")
    value = _expr(value, "T.let")
    if str(value.ty.dtype) != str(var.ty.dtype):
        value = tirx.Cast(str(var.ty.dtype), value)
    if body is not None:
        return tirx.Let(var, value, _expr(body, "T.let"))
    current_kernel("T.let")
    B.Bind(value, var=var)
    return None


def assume(cond):
    """A fact about the arguments (``T.assume(n % 16 == 0)``). The kernel is compiled as if it
    were unknown (always correct); one over the parameters alone is checked at each call, as in
    TileLang ("Assume: n % 16 == 0"; language/assumes.py)."""
    from .assumes import assume_marker

    if isinstance(cond, bool):
        cond = tirx.const(cond, "bool")
    cond = _expr(cond, "T.assume")
    if isinstance(cond, tirx.IntImm):
        if not int(cond.value):
            raise FrontendError(f"T.assume({cond}) is false")
        return None
    return assume_marker(cond)


def disable_warp_group_reg_alloc():
    """TileLang's switch that stops warp specialization from moving registers between warpgroups
    (``setmaxnreg``). A performance hint here, accepted inside a kernel: the cuda backend chooses
    the register split itself, and a kernel computes the same values either way."""
    current_kernel("T.disable_warp_group_reg_alloc")


def Serial(start, stop=None, step=None, annotations=None):  # noqa: N802 - TileLang's name
    """TileLang's spelling of ``T.serial``."""
    from .loops import serial

    return serial(start, stop, step, annotations)


comm_reducer = B.comm_reducer


def device_assert(condition, message: str = "", *, msg: str | None = None, no_stack_info: bool = False):
    """TileLang's ``T.device_assert(cond, "msg")``: a check that runs in the kernel. Where the
    condition is false the kernel stops: CUDA prints the message and traps, HIP traps (the launch
    fails, and the device context with it, as a CUDA ``assert`` does), on cpu the call
    fails with a LaunchError carrying the message; Metal refuses the kernel (it has no trap). A
    condition known when the kernel is compiled is checked then. ``msg=`` is TileLang's keyword
    for the message; ``no_stack_info`` changes nothing here."""
    if msg is not None:
        message = msg
    if not isinstance(message, str):
        raise FrontendError(f"T.device_assert's message must be a string, got {message!r}")
    if isinstance(condition, (bool, int)) or isinstance(condition, tirx.IntImm):
        if not bool(getattr(condition, "value", condition)):
            raise FrontendError(f"T.device_assert is always false: {message or 'no message'}")
        return tirx.const(0, "int32")  # (a statement of no effect)
    if not isinstance(condition, tvm.ir.Expr) or not tvm.ir.is_prim_expr(condition):
        raise FrontendError(f"T.device_assert takes a condition, got {condition!r}")
    if str(condition.ty) != "bool":
        condition = condition != tirx.const(0, str(condition.ty))
    return I.call("device_assert", "void", condition, tvm.ir.StringImm(message))


def extract_lane(vector, lane):
    """One lane of a vector value, ``T.extract_lane(v, 1)`` of a ``bfloat16x2`` (TileLang's): a
    ``Shuffle`` of the vector at a lane known when the kernel is compiled."""
    import numbers

    if not isinstance(vector, tvm.ir.Expr) or not tvm.ir.is_prim_expr(vector):
        raise TypeError(f"T.extract_lane expects a PrimExpr vector, but got {type(vector).__name__}")
    lanes = tvm.DataType(str(vector.ty)).lanes
    if lanes <= 1:
        raise ValueError(f"T.extract_lane expects a vector expression, but got dtype {vector.ty}")
    if isinstance(lane, tirx.IntImm):
        lane = int(lane.value)
    elif isinstance(lane, bool) or not isinstance(lane, numbers.Integral):
        raise TypeError(f"T.extract_lane expects a compile-time integer lane, but got {type(lane).__name__}")
    if not 0 <= int(lane) < lanes:
        raise IndexError(f"lane {lane} is out of bounds for dtype {vector.ty} with {lanes} lanes")
    return tirx.Shuffle([vector], [int(lane)])


Ramp = B.Ramp
Broadcast = B.Broadcast
Shuffle = B.Shuffle
address_of = B.address_of
handle = B.handle

__all__ = ["Broadcast", "Ramp", "Serial", "Shuffle", "address_of", "assume", "atan", "attr", "bitwise_and",
           "device_assert", "disable_warp_group_reg_alloc", "extract_lane",
           "bitwise_not", "bitwise_or", "bitwise_xor", "call_extern", "call_intrin", "clz", "comm_reducer",
           "copysign", "cosh", "evaluate", "fmod", "hypot", "ldexp", "nextafter", "handle", "isfinite", "likely", "log1p", "nearbyint", "popcount",
           "reinterpret", "shift_left", "shift_right", "sinh", "sync_threads", "tan", "tvm_thread_allreduce"]
