"""``T.print``: TileLang's debug print from kernel code (a value, a message, or a buffer's elements).

Each printed line says where it came from, as TileLang's do::

    msg='expr<(bx + by)>' BlockIdx=(1, 0, 0), ThreadIdx=(0, 0, 0): dtype=int32 value=1
    msg='buffer<acc, float32>' BlockIdx=(0, 0, 0), ThreadIdx=(0, 0, 0): buffer=acc, index=3, dtype=float32 value=2.5

Who prints (TileLang's rules): a value or a message, every thread that reaches the call; a shared
tile or a fragment, one thread (``warp_group_id * 128 + warp_id * 32``), every element in row-major
order (a fragment goes through a shared copy first, since no thread holds all of it); a
``T.alloc_local`` array or a global tensor, every thread that reaches the call. CUDA prints with
the device's ``printf`` (lines reach stdout when the host synchronizes); the cpu backend and the
SIMT interpreters print from the host (``print_line``, the same lines); HIP (built without the
device libraries) and Metal have no printf and refuse it.

The call is the ``print`` intrinsic (ir/intrinsics.py) with arguments ``(msg, bx, by, bz, tx, ty,
tz[, value[, buffer name, index]])``: the block and thread indices travel as arguments, so every
backend prints TileLang's 3-D indices of a kernel launched with one flat thread index.
"""

from __future__ import annotations

import math

import tvm
from tvm import tirx
from tvm.script.ir_builder import tirx as B
from tvm.tirx import is_buffer_var

from ..errors import FrontendError
from ..ir import intrinsics as I
from .kernel import current_kernel

#: TileLang's lane arithmetic for the thread that prints a shared tile or a fragment
_WARP_GROUP, _WARP = 128, 32


def print(obj=None, msg: str = "", warp_group_id: int = 0, warp_id: int = 0) -> None:  # noqa: A001 - T.print
    """Print ``obj`` (a value, or a buffer's elements) or ``msg`` alone from kernel code.

    ``T.print(bx + by)``, ``T.print(acc, msg="after the loop")``, ``T.print(msg="here")``. A tile
    or fragment is printed by the thread ``warp_group_id * 128 + warp_id * 32``."""
    kernel = current_kernel("T.print")
    if isinstance(obj, str) and not msg:  # T.print("here"): the message (TileLang prints nothing)
        obj, msg = None, obj
    if not isinstance(msg, str):
        raise FrontendError(f"T.print: msg must be a string, got {msg!r}")
    where = _where(kernel)
    if obj is None:
        if not msg:
            raise FrontendError("T.print() has nothing to print: give a value, a buffer, or msg='...'")
        B.evaluate(I.call("print", "void", tvm.ir.StringImm(msg), *where))
        return
    if isinstance(obj, tvm.tirx.script.builder.scalar_wrapper):
        obj = obj.scalar
    if is_buffer_var(obj):
        _print_buffer(kernel, obj, msg, where, warp_group_id, warp_id)
        return
    if isinstance(obj, (bool, int, float)):
        obj = tirx.const(obj)
    if not (isinstance(obj, tvm.ir.Expr) and tvm.ir.is_prim_expr(obj)):
        raise FrontendError(f"T.print prints a value or a buffer, got {type(obj).__name__}: {obj!r}")
    _check_scalar(obj.ty, "T.print")
    B.evaluate(I.call("print", "void", tvm.ir.StringImm(msg or f"expr<{obj}>"), *where, obj))


def _where(kernel) -> list:
    """(bx, by, bz, tx, ty, tz) as int32, missing dimensions 0."""
    out = []
    for indices in (kernel.block_vars, kernel.thread_vars):
        values = [tirx.Cast("int32", v) if str(v.ty) != "int32" else v for v in indices]
        out += values + [tirx.const(0, "int32")] * (3 - len(values))
    return out


def _check_scalar(dtype, what: str) -> None:
    if tvm.DataType(str(dtype)).lanes != 1:
        raise FrontendError(f"{what}: a vector value ({dtype}) prints one lane at a time: T.print(T.extract_lane(v, 0))")


def _print_buffer(kernel, buffer, msg: str, where: list, warp_group_id: int, warp_id: int) -> None:
    from .allocate import alloc_shared
    from .global_layouts import unravel
    from .tile_ops import copy

    name, dtype = str(buffer.name), str(buffer.ty.dtype)
    _check_scalar(dtype, f"T.print({name})")
    shape = []
    for extent in buffer.ty.shape:
        if not isinstance(extent, tirx.IntImm):
            raise FrontendError(f"T.print({name}): the buffer's shape must be known when the kernel is "
                                f"compiled, got {list(buffer.ty.shape)}")
        shape.append(int(extent.value))
    scope = str(buffer.ty.storage_scope)
    label = tvm.ir.StringImm(msg or f"buffer<{name}, {dtype}>")
    if scope == "local.fragment":  # no thread holds all of it: through shared memory
        staged = alloc_shared(shape, dtype)
        copy(buffer, staged)
        source, one_thread = staged, True
    elif scope.startswith("shared"):
        source, one_thread = buffer, True
    elif scope in ("local", "local.var", "global", ""):
        source, one_thread = buffer, False
    else:
        raise FrontendError(f"T.print({name}): cannot print a buffer in scope {scope!r}")
    lane = warp_group_id * _WARP_GROUP + warp_id * _WARP

    def body():
        with B.serial(0, math.prod(shape)) as i:
            B.evaluate(I.call("print", "void", label, *where, source[tuple(unravel(i, shape))],
                              tvm.ir.StringImm(name), i))

    if one_thread:
        with B.If(kernel.thread_id == lane):
            with B.Then():
                body()
    else:
        body()


def print_line(msg: str, where, dtype: str | None = None, value=None, buf: str = "", index: int = -1) -> str:
    """One printed line, as the CUDA helpers' printf writes it (tilelang_cuda/warp_intrinsics.py),
    for the printers on the host (the cpu backend's callback, the SIMT interpreter): ``where`` is
    (bx, by, bz, tx, ty, tz); a value with its ``dtype`` (a buffer's element where ``buf`` names it)."""
    block, thread = (", ".join(str(int(w)) for w in where[i:i + 3]) for i in (0, 3))
    line = f"msg='{msg}' BlockIdx=({block}), ThreadIdx=({thread})"
    if dtype is None:
        return line
    if dtype == "bool":
        text = "true" if value else "false"
    elif dtype.startswith(("float", "bfloat")):
        text = f"{float(value):.9g}"
    else:
        text = str(int(value))
    return line + f": {f'buffer={buf}, index={int(index)}, ' if buf else ''}dtype={dtype} value={text}"


__all__ = ["print", "print_line"]
