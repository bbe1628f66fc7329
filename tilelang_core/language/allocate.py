"""On-chip buffer allocation: shared memory, register fragments, per-thread locals, scalars.

Scopes follow docs/tile-ir.md: shared -> ``shared.dyn``, fragment -> ``local.fragment``,
local -> ``local``, var -> ``local.var`` (a 1-element buffer used as a mutable scalar).

Example::

    A_s = T.alloc_shared((128, 32), T.float16)
    C_f = T.alloc_fragment((128, 128), T.float32)
    i = T.alloc_var(T.int32, init=0)
    i = i + 1                     # stores into the variable
"""

from __future__ import annotations

import tvm
from tvm.script.ir_builder import tirx as B

from ..errors import FrontendError
from .dtypes import canonical_dtype
from .kernel import current_kernel


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
    return B.alloc_buffer(dims, canonical_dtype(dtype, what), scope=scope)


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


def alloc_var(dtype, *args, init=None, scope: str = "local.var"):
    """A mutable per-thread scalar: read it as ``x``, assign with ``x = ...``.

    TileLang also accepts the initial value as second positional argument.
    """
    if args:
        if len(args) > 1 or init is not None:
            raise FrontendError("T.alloc_var takes (dtype, init) or (dtype, init=...)")
        init = args[0]
    buf = _alloc((1,), dtype, scope, "T.alloc_var")
    if init is not None:
        B.buffer_store(buf, init, [0])
    # The wrapper makes ``x = T.alloc_var(...)`` bind ``x`` to the element ``buf[0]``.
    return B.scalar_wrapper(buf[0])


def alloc_buffer(shape, dtype, scope: str = "shared.dyn"):
    """A buffer in an explicit scope (TileLang's generic allocator)."""
    return _alloc(shape, dtype, scope, "T.alloc_buffer")
