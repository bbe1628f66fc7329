"""TileLang's shared-memory swizzle for tiles that ldmatrix reads (``tilelang.cuda.intrinsics.
layout.mma_layout``): rows are cut into 16-byte vectors, and the vectors of a row swap places by an
XOR with the row index, so that the 8 rows an ldmatrix (or a column of T.Parallel stores) touches
fall in different banks. A row of 128 bytes or more permutes its vectors in groups of 8 (128-byte
swizzle), a 64-byte row in groups of 4, a 32-byte row in pairs; rows of other widths are not
swizzled. 16 bytes stay side by side, so vector accesses and ldmatrix rows keep working.

Example::

    T.annotate_layout({A_shared: make_mma_swizzle_layout(A_shared)})
"""

from __future__ import annotations

import tvm

from ....errors import FrontendError
from ... import unavailable


def _bits(dtype) -> int:
    return tvm.runtime.DataType(str(dtype)).bits


def get_swizzle_layout(row_idx, col_idx, row_size, dtype, swizzle_bytes=None):
    """(vector group, row, swizzled column) of element (row_idx, col_idx) of a row of ``row_size``
    elements of ``dtype``: TileLang's three-dimensional swizzled placement (module docstring)."""
    bits = _bits(dtype)
    row_bytes = bits * int(row_size) // 8
    if row_bytes % 32:
        raise FrontendError(f"get_swizzle_layout swizzles rows of a multiple of 32 bytes; a row of {row_size} "
                            f"{dtype} is {row_bytes}")
    swizzle_bytes = min(128, row_bytes) if swizzle_bytes is None else int(swizzle_bytes)
    if swizzle_bytes not in (32, 64, 128):
        raise FrontendError(f"get_swizzle_layout swizzle_bytes must be 32, 64 or 128, got {swizzle_bytes}")
    per_vector = 128 // bits  # elements in 16 bytes
    vectors = swizzle_bytes // 16  # vectors that permute among themselves
    vector, within = col_idx // per_vector, col_idx % per_vector
    # rows 0..7 XOR the vector index with 0..vectors-1, each value held by 8 // vectors rows
    xor = (row_idx % 8) // (8 // vectors)
    return vector // vectors, row_idx, ((vector % vectors) ^ xor) * per_vector + within


def make_mma_swizzle_layout(shared_buf, is_smooth: bool = False):
    """The swizzled T.Layout of ``shared_buf``'s last two dimensions where a row is a multiple of
    64 bytes, else (or with ``is_smooth``) the identity layout."""
    from ....language import Layout

    dtype, shape = shared_buf.ty.dtype, list(shared_buf.ty.shape)
    if is_smooth or (int(shape[-1]) * _bits(dtype)) % 512:
        return Layout(shape, lambda *idx: list(idx))

    def forward(*idx):
        return [*idx[:-2], *get_swizzle_layout(idx[-2], idx[-1], shape[-1], dtype)]

    return Layout(shape, forward)


__all__ = ["get_swizzle_layout", "make_mma_swizzle_layout"]

__getattr__ = unavailable(__name__)
