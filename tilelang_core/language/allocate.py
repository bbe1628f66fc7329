"""On-chip buffer allocation: shared memory, register fragments, per-thread locals, scalars.

Scopes follow docs/tile-ir.md: shared -> ``shared.dyn``, fragment -> ``local.fragment``,
local -> ``local``, var -> ``local.var`` (a 1-element buffer used as a mutable scalar), and
``T.alloc_global``: a ``global`` workspace of the whole program (not on-chip: see there).

Example::

    A_s = T.alloc_shared((128, 32), T.float16)
    C_f = T.alloc_fragment((128, 128), T.float32)
    i = T.alloc_var(T.int32, init=0)
    i = i + 1                     # stores into the variable
"""

from __future__ import annotations

import math

import tvm
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as B

from ..errors import FrontendError, FrontendValueError
from .kernel import current_kernel
from .pointers import storage_dtype


def _shape(shape, what: str, must_be_const: bool) -> list:
    dims = list(shape) if isinstance(shape, (list, tuple, tvm.ir.Array)) else [shape]
    if not dims:
        raise FrontendError(f"{what}: the shape must have at least one dimension")
    out = []
    for d in dims:
        if isinstance(d, tvm.tirx.IntImm):
            d = int(d.value)
        if isinstance(d, bool) or not isinstance(d, (int, tvm.ir.Expr)):
            raise FrontendError(f"{what}: shape entries must be integers, got {d!r}")
        if isinstance(d, int):
            if d <= 0:
                raise FrontendError(f"{what}: shape entries must be positive, got {d}")
        elif must_be_const:
            raise FrontendError(f"{what}: the shape must be compile-time constants, got {d} "
                                f"(on-chip buffers have a fixed size; allocate the largest "
                                f"tile and mask)")
        out.append(d)
    return out


def _alloc(shape, dtype, scope: str, what: str):
    current_kernel(what)
    dims = _shape(shape, what, must_be_const=True)
    return B.alloc_buffer(dims, storage_dtype(dtype, what), scope=scope)


def alloc_shared(shape, dtype, scope: str = "shared.dyn"):
    """A shared-memory tile visible to all threads of the block."""
    if not str(scope).startswith("shared"):
        raise FrontendError(f"T.alloc_shared: scope must be shared memory, got {scope!r}")
    return _alloc(shape, dtype, scope, "T.alloc_shared")


def alloc_fragment(shape, dtype, scope: str = "local.fragment"):
    """A register tile distributed over the block's threads (layout chosen by the compiler)."""
    return _alloc(shape, dtype, scope, "T.alloc_fragment")


def alloc_local(shape, dtype, scope: str = "local"):
    """A per-thread array: every thread holds the whole ``shape``."""
    return _alloc(shape, dtype, scope, "T.alloc_local")


def _initial_value(value, dtype: str):
    """``value`` as a ``dtype`` constant; a finite float the dtype cannot hold is refused (TileLang's
    ValueError), not left to TVM's internal check."""
    if isinstance(value, float) and math.isfinite(value) and dtype.startswith(("float", "bfloat")):
        largest = float(tvm.tirx.max_value(dtype).value)
        if abs(value) > largest:
            raise FrontendValueError(f"T.alloc_var: initial value {value!r} exceeds maximum of {dtype} "
                                     f"({largest:g}); use a wider dtype or a smaller value")
    return tvm.tirx.const(value, dtype)


def alloc_var(dtype, *args, init=None, scope: str = "local.var"):
    """A mutable per-thread scalar: read it as ``x``, assign with ``x = ...``.

    As in TileLang: without ``init`` a ``local.var`` starts at 0; positional arguments are
    ``(init)``, ``(scope)`` when a string, or ``(init, scope)``.
    """
    if len(args) > 2:
        raise FrontendError(f"T.alloc_var takes at most (dtype, init, scope), got {len(args) + 1} "
                            "positional arguments")
    if len(args) == 1 and isinstance(args[0], str) and init is None:
        scope = args[0]
    elif args:
        if init is not None:
            raise FrontendError("T.alloc_var: the initial value is given twice (positionally and as init=)")
        init = args[0]
        if len(args) == 2:
            if not isinstance(args[1], str):
                raise FrontendError(f"T.alloc_var(dtype, init, scope): scope must be a string, got {args[1]!r}")
            scope = args[1]
    buf = _alloc((1,), dtype, scope, "T.alloc_var")
    if init is None and str(scope) == "local.var":
        init = 0  # TileLang's variables start at zero (its codegen declares them '= 0')
    if init is not None:
        if isinstance(init, (bool, int, float)):  # a vector variable's lanes all start at it
            dt = tvm.DataType(str(buf.ty.dtype))
            element = _initial_value(init, str(buf.ty.dtype).split("x")[0])
            init = element if dt.lanes == 1 else tvm.tirx.Broadcast(element, dt.lanes)
        B.buffer_store(buf, init, [0])
    # The wrapper makes ``x = T.alloc_var(...)`` bind ``x`` to the element ``buf[0]``.
    return B.scalar_wrapper(buf[0])


def alloc_global(shape, dtype, scope: str = "global"):
    """A global-memory workspace of the program (TileLang's ``T.alloc_global``): allocated on the
    kernel's device when the program is called, before its first kernel, and freed after its last,
    so every ``T.Kernel`` of the program sees the same memory, in program order. Not initialized.
    The shape may use ``T.dynamic`` sizes bound by the arguments.

    Example (a split kernel writing partial results, then a combine kernel reading them)::

        part = T.alloc_global((splits, N), T.float32)
        with T.Kernel(splits, threads=128) as s: ...     # writes part[s, :]
        with T.Kernel(1, threads=128) as _: ...          # reads part
    """
    if not IRBuilder.is_in_scope():
        raise FrontendError("T.alloc_global can only be used inside a T.prim_func kernel")
    if str(scope) != "global":
        raise FrontendError(f"T.alloc_global: scope must be 'global', got {scope!r}; use "
                            "T.alloc_shared / T.alloc_fragment / T.alloc_buffer for on-chip memory")
    dims = _shape(shape, "T.alloc_global", must_be_const=False)
    return B.alloc_buffer(dims, storage_dtype(dtype, "T.alloc_global"), scope="global")


def alloc_buffer(shape, dtype, scope: str = "global"):
    """A buffer in an explicit scope (TileLang's generic allocator). Its default scope is TileLang's
    (TVM's), global memory: a program workspace, as ``T.alloc_global`` (TileLang's split-K
    dequantized GEMM allocates its partial sums this way, before its first ``T.Kernel``)."""
    if str(scope) == "global":
        return alloc_global(shape, dtype)
    return _alloc(shape, dtype, scope, "T.alloc_buffer")
