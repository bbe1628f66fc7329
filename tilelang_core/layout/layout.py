"""Layout: an index map from a tile's logical indices to a flat offset in memory (shared buffers).

The map is a Python function over indices that works for ints and for TVM PrimExprs alike, so the
same object rewrites IR (``offset(i, j)`` on loop variables) and answers tests (``offset(3, 5)``).
Swizzles permute 16-byte chunks within a row so that ldmatrix and 16-byte stores from 8 rows in a
row hit 8 different bank groups.

Example::

    >>> lay = Layout.row_major((4, 8))
    >>> lay.offset(1, 2)
    10
    >>> sw = make_swizzled_layout(8, 64, 16)      # fp16 rows of 128 bytes: XOR by row % 8
    >>> sw.offset(1, 0), sw.offset(1, 8)
    (72, 64)
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

from ..errors import LayoutError


def _xor(a, b):
    """a ^ b for ints and PrimExprs."""
    if isinstance(a, int) and isinstance(b, int):
        return a ^ b
    import tvm

    a = a if not isinstance(a, int) else tvm.tirx.const(a, "int32")
    b = b if not isinstance(b, int) else tvm.tirx.const(b, "int32")
    return tvm.tirx.bitwise_xor(a, b)


@dataclass(frozen=True)
class Layout:
    """``shape`` indices -> flat offset in [0, prod(shape)). ``kind`` names it for printing."""

    shape: tuple[int, ...]
    fn: Callable = field(compare=False)
    kind: str = "custom"
    #: alignment the tile's base needs in memory (1024 for the wgmma/TMA 128-byte swizzle period)
    align_bytes: int = field(default=16, compare=False)

    @staticmethod
    def row_major(shape: Sequence[int]) -> Layout:
        shape = tuple(int(s) for s in shape)

        def fn(*idx):
            off = 0
            for i, s in zip(idx, shape):
                off = off * s + i
            return off

        return Layout(shape, fn, "row_major")

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def offset(self, *indices):
        if len(indices) != len(self.shape):
            raise LayoutError(f"layout of shape {list(self.shape)} indexed with {len(indices)} indices")
        return self.fn(*indices)

    def is_bijective(self) -> bool:
        """Every offset in [0, size) used exactly once (enumerates: for tiles, not for tensors)."""
        seen = set()
        for idx in itertools.product(*(range(s) for s in self.shape)):
            off = self.offset(*idx)
            if not 0 <= off < self.size or off in seen:
                return False
            seen.add(off)
        return len(seen) == self.size

    def __repr__(self) -> str:
        return f"Layout({self.kind}, shape={list(self.shape)})"


def swizzle_period(row_bytes: int) -> int:
    """How many 16-byte chunks of a row the XOR permutes (8 chunks = 128 bytes = every bank): the
    largest power of two up to 8 dividing the row's chunk count, so XOR stays inside the row."""
    chunks = max(1, row_bytes // 16)
    period = 8
    while period > 1 and chunks % period:
        period //= 2
    return period


def make_swizzled_layout(rows, cols: int | None = None, dtype_bits: int | None = None,
                         k_major: bool = True, allow_pad: bool = True) -> Layout:
    """Row-major ``rows x cols`` tile whose 16-byte chunks are XOR-swizzled by row.

    Rows of 128 bytes or more: chunk ^= row % 8. Rows of 64 bytes: two rows share a 128-byte line,
    so chunk ^= (row // 2) % 4; rows of 32 bytes: chunk ^= (row // 4) % 2. Rows narrower than 32
    bytes, or not a whole number of 16-byte chunks, stay row-major.

    TileLang's form ``make_swizzled_layout(A_shared)`` takes the shared buffer itself: its last
    dimension is the row, the others are stacked rows. (``k_major``/``allow_pad`` are TileLang's
    knobs for its own swizzle family; the swizzle chosen here depends on the row width only.)
    """
    if cols is None:
        return _swizzled_like(rows)
    row_bytes = cols * dtype_bits // 8
    if row_bytes < 32 or row_bytes % 16 or (rows * row_bytes) % 128 or swizzle_period(row_bytes) == 1:
        return Layout.row_major((rows, cols))
    vec = 128 // dtype_bits  # elements per 16-byte chunk
    period = swizzle_period(row_bytes)  # chunks permuted together
    rows_per_line = 8 // period  # rows sharing one 128-byte line

    def fn(i, j):
        chunk = j // vec
        group = chunk // period * period  # chunks beyond the first 8 keep their 8-chunk block
        swizzled = group + _xor(chunk % period, (i // rows_per_line) % period)
        return i * cols + swizzled * vec + j % vec

    return Layout((rows, cols), fn, f"swizzle{period}x16B")


def _swizzled_like(buffer) -> Layout:
    """``make_swizzled_layout`` for a buffer of any rank: leading dimensions stack rows."""
    shape = getattr(getattr(buffer, "ty", None), "shape", None)
    if shape is None or not len(shape):
        raise LayoutError(f"make_swizzled_layout takes a buffer or (rows, cols, dtype_bits), got {buffer!r}")
    try:
        dims = tuple(int(d) for d in shape)
    except (TypeError, ValueError):
        raise LayoutError(f"make_swizzled_layout: {buffer.name} has a symbolic shape {list(shape)}") from None
    import tvm

    bits = tvm.DataType(str(buffer.ty.dtype)).bits
    if len(dims) == 1:
        return Layout.row_major(dims)
    rows = math.prod(dims[:-1])
    tile = make_swizzled_layout(rows, dims[-1], bits)
    if len(dims) == 2:
        return tile

    def fn(*idx):
        row = 0
        for i, s in zip(idx[:-1], dims[:-1]):
            row = row * s + i
        return tile.offset(row, idx[-1])

    return Layout(dims, fn, tile.kind, tile.align_bytes)
