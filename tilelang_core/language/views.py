"""Views of a buffer with another shape or dtype: ``T.reshape`` and ``T.view`` (TileLang's).

A view shares its source's memory (the same data variable, no copy): writing through one is
reading through the other. Its total size in bits must equal the source's, as TileLang asserts.
Views of global tensors, shared tiles and fragments work; a fragment's view takes the source's
register layout re-indexed (``Fragment.reshape``), so a gemm accumulator ``s`` of (N, Q*H) read as
``T.reshape(s, (N, Q, H))`` stays in the registers the gemm wrote.

Example::

    s = T.alloc_fragment((block_N, block_Q * heads), T.float32)
    s3 = T.reshape(s, (block_N, block_Q, heads))
    T.reduce_sum(s3, logits, dim=-1)
    B8 = T.view(B_shared, (64, 128), dtype=T.int8)       # the same bytes as int8
"""

from __future__ import annotations

import tvm
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as B

from ..errors import FrontendAssertionError, FrontendError
from .pointers import storage_dtype
from .tensor import _dims


def _bits(shape, dtype: str):
    total = tvm.runtime.DataType(dtype).bits * tvm.runtime.DataType(dtype).lanes
    for d in shape:
        total = total * d
    return total


def _same(a, b) -> bool:
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    return bool(tvm.sym.Analyzer().can_prove_equal(a, b))


def view(src, shape=None, dtype=None):
    """``src``'s memory seen with ``shape`` and ``dtype`` (each the source's when None)."""
    what = "T.view"
    if not (tvm.tirx.is_buffer_var(src) or isinstance(src, tvm.tirx.Buffer)):
        raise FrontendError(f"{what} takes a buffer (a tensor parameter, T.alloc_shared or "
                            f"T.alloc_fragment), got {type(src).__name__} {src!r}")
    src_shape = list(src.ty.shape) if hasattr(src, "ty") else list(src.shape)
    src_dtype = str(src.ty.dtype) if hasattr(src, "ty") else str(src.dtype)
    dims = src_shape if shape is None else _dims(shape, what)
    dtype = src_dtype if dtype is None else storage_dtype(dtype, what)
    new_bits, old_bits = _bits(dims, dtype), _bits(src_shape, src_dtype)
    if not _same(new_bits, old_bits):
        raise FrontendAssertionError(
            f"T.reshape/T.view of '{src.name}': the view has {new_bits} bits ({list(dims)} x "
            f"{dtype}), the buffer {old_bits} ({src_shape} x {src_dtype}); a view must cover "
            f"exactly the buffer's memory")
    scope = str(src.ty.storage_scope) if hasattr(src, "ty") else str(src.scope())
    if not IRBuilder.is_in_scope():  # outside a kernel (TileLang's tests call it on decl_buffer)
        return tvm.tirx.decl_buffer(dims, dtype, name=f"{src.name}_view", data=src.data, scope=scope)
    buf = B.decl_buffer(dims, dtype, data=src.data, scope=scope)
    IRBuilder.name(f"{src.name}_view", buf)
    return buf


def reshape(src, shape):
    """``src`` seen with ``shape`` (same dtype, same number of elements)."""
    return view(src, shape)
