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

    def __post_init__(self):
        # TileLang's T.Layout(buffer.shape, forward) passes TVM integers
        try:
            shape = tuple(int(s) for s in self.shape)
        except (TypeError, ValueError):
            raise LayoutError(f"a layout needs a constant shape, got {list(self.shape)}") from None
        object.__setattr__(self, "shape", shape)

    @property
    def output_shape(self) -> tuple[int, ...]:
        """The extent of each index ``fn`` returns (TileLang's layouts map an index to a
        multi-dimensional one); ``(size,)`` for a flat-offset layout."""
        cached = self.__dict__.get("_output_shape")
        if cached is None:
            cached = self.__dict__["_output_shape"] = _output_shape(self)
        return cached

    def forward(self, *indices) -> list:
        """The index ``fn`` maps ``indices`` to, as a list (one entry for a flat-offset layout)."""
        out = self.fn(*indices)
        return list(out) if isinstance(out, (list, tuple)) else [out]

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
        """The flat offset of ``indices``: ``fn``'s value, or for a multi-dimensional forward
        index (TileLang's ``T.Layout(shape, lambda i, j: [i // 8, j, i % 8])``) its row-major
        offset in :attr:`output_shape`."""
        if len(indices) != len(self.shape):
            raise LayoutError(f"layout of shape {list(self.shape)} indexed with {len(indices)} indices")
        out = self.fn(*indices)
        if not isinstance(out, (list, tuple)):
            return out
        off = 0
        for i, s in zip(out, self.output_shape):
            off = off * s + i
        return off

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


def tile_of(buffer, what: str, takes: str = "a buffer") -> tuple[tuple[int, ...], int]:
    """(shape, element bits) of the buffer a layout maker (``what``) is given; LayoutError for
    anything else (``takes``: what it accepts) or a symbolic shape."""
    shape = getattr(getattr(buffer, "ty", None), "shape", None)
    if shape is None:
        raise LayoutError(f"{what} takes {takes}, got {buffer!r}")
    try:
        dims = tuple(int(d) for d in shape)
    except (TypeError, ValueError):
        raise LayoutError(f"{what}: {buffer.name} has a symbolic shape {list(shape)}") from None
    import tvm

    return dims, tvm.DataType(str(buffer.ty.dtype)).bits


def _swizzled_like(buffer) -> Layout:
    """``make_swizzled_layout`` for a buffer of any rank: leading dimensions stack rows."""
    takes = "a buffer or (rows, cols, dtype_bits)"
    dims, bits = tile_of(buffer, "make_swizzled_layout", takes)
    if not dims:
        raise LayoutError(f"make_swizzled_layout takes {takes}, got {buffer!r}")
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


def _bounded_xors(analyzer, expr):
    """``expr`` with each ``a ^ b`` of non-negative operands replaced by a variable the analyzer
    bounds to [0, 2**bits - 1] (bits of the larger operand's bound): TVM's analyzer does not bound
    XOR, which swizzles are made of."""
    import tvm
    import tvm_ffi

    def on_xor(node):
        bounds = [analyzer.const_int_bound(a) for a in (node.a, node.b)]
        if any(b.min_value < 0 for b in bounds):
            return node
        bits = max(int(b.max_value) for b in bounds).bit_length()
        var = tvm.tirx.Var("xor", str(node.ty))
        analyzer.bind(var, tvm.ir.Range.from_min_extent(0, 1 << bits))
        return var

    return tvm_ffi.structural_map(expr, [(tvm.tirx.BitwiseXor, on_xor)])


def _output_shape(layout: Layout) -> tuple[int, ...]:
    """Each forward index's largest value + 1, over the whole input shape (TileLang's rule)."""
    import tvm

    probe = layout.fn(*[0] * len(layout.shape)) if layout.shape else layout.fn()
    if not isinstance(probe, (list, tuple)):
        return (layout.size,)
    analyzer = tvm.sym.Analyzer()
    idx = [tvm.tirx.Var(f"i{d}", "int32") for d in range(len(layout.shape))]
    for v, extent in zip(idx, layout.shape):
        analyzer.bind(v, tvm.ir.Range.from_min_extent(0, extent))
    dims = []
    for expr in layout.fn(*idx):
        if isinstance(expr, int):
            dims.append(expr + 1)
            continue
        bound = analyzer.const_int_bound(_bounded_xors(analyzer, analyzer.simplify(expr)))
        if bound.min_value < 0:
            raise LayoutError(f"layout {layout.kind}: forward index {expr} can be negative")
        dims.append(int(bound.max_value) + 1)
    return tuple(dims)
