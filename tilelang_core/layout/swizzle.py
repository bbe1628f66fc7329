"""TileLang's named shared-memory swizzles (``tilelang.layout.swizzle``): the 128-, 64- and
32-byte "bank" swizzles that TMA boxes and wgmma descriptors read, the linear layout, and
``SwizzleMode``.

A bank swizzle of width W bytes lays a ``rows x cols`` tile out in atoms of 8 rows x W bytes, the
atoms along the columns outermost (the K-major canonical layout of Hopper's TMA and wgmma), and in
each atom XORs the 16-byte chunk index with the row: all of the row's 3 bits for 128 bytes,
``row // 2`` over 4 chunks for 64 bytes, ``row // 4`` over 2 chunks for 32 bytes. Rows come in
multiples of 8 (or exactly 4, TMA's gather rows); the columns must fill whole atoms. Leading
dimensions stack whole tiles. ``make_swizzled_layout`` (layout.py) is the other kind: a request for
a bank-conflict-free layout that leaves the choice to the compiler.

Example::

    A_shared = T.alloc_shared((64, 128), T.float16)
    T.annotate_layout({A_shared: make_full_bank_swizzled_layout(A_shared)})
"""

from __future__ import annotations

import enum

from ..errors import LayoutError
from .layout import Layout, _xor, tile_of

#: make_swizzled_layout's kinds: any swizzle the backend prefers may replace them
HINT_KINDS = frozenset(f"swizzle{period}x16B" for period in (2, 4, 8))
#: the bank swizzles: kind -> width in bytes
BANK_KINDS = {"bank_sw128": 128, "bank_sw64": 64, "bank_sw32": 32}
#: kinds T.annotate_layout records with the map, for backends to read
SWIZZLE_TAGS = HINT_KINDS | frozenset(BANK_KINDS)


class SwizzleMode(enum.Enum):
    """A swizzle width, with the fields the hardware descriptors encode it as (TileLang's names)."""

    NONE = 0
    SWIZZLE_32B = 32
    SWIZZLE_64B = 64
    SWIZZLE_128B = 128

    def is_none(self) -> bool:
        return self is SwizzleMode.NONE

    def is_swizzle_32b(self) -> bool:
        return self is SwizzleMode.SWIZZLE_32B

    def is_swizzle_64b(self) -> bool:
        return self is SwizzleMode.SWIZZLE_64B

    def is_swizzle_128b(self) -> bool:
        return self is SwizzleMode.SWIZZLE_128B

    def wgmma_layout_type(self) -> int:
        """The wgmma shared-memory descriptor's layout field (PTX ISA: none 0, 128B 1, 64B 2, 32B 3)."""
        return {0: 0, 128: 1, 64: 2, 32: 3}[self.value]

    def tcgen05_layout_type(self) -> int:
        """The tcgen05 descriptor's swizzle field (none 0, 128B 2, 64B 4, 32B 6)."""
        return {0: 0, 128: 2, 64: 4, 32: 6}[self.value]

    def swizzle_byte_size(self) -> int:
        """Bytes one swizzle period spans (1 for none)."""
        return self.value or 1

    def swizzle_atom_size(self) -> int:
        """16-byte chunks the XOR permutes (1 for none)."""
        return self.value // 16 if self.value else 1

    def smem_alignment(self) -> int:
        """Alignment the tile's base needs in shared memory: 8 rows of the swizzle (128 for none)."""
        return self.value * 8 if self.value else 128

    @staticmethod
    def from_ordinal(ordinal: int) -> SwizzleMode:
        return list(SwizzleMode)[int(ordinal)]

    @staticmethod
    def of_layout(layout: Layout) -> SwizzleMode:
        """The bank swizzle ``layout`` is, NONE for a linear one; LayoutError for anything else."""
        if layout.kind in BANK_KINDS:
            return SwizzleMode(BANK_KINDS[layout.kind])
        if layout.kind in ("row_major", "linear"):
            return SwizzleMode.NONE
        raise LayoutError(f"{layout!r} is not one of the bank swizzles or a linear layout")


def _stacked(dims: tuple[int, ...], tile: Layout, kind: str, align: int) -> Layout:
    """``tile`` over the last two dims, whole tiles stacked along the leading ones."""
    if len(dims) == 2:
        return tile
    size = tile.size

    def fn(*idx):
        lead = 0
        for i, s in zip(idx[:-2], dims[:-2]):
            lead = lead * s + i
        return lead * size + tile.offset(idx[-2], idx[-1])

    return Layout(dims, fn, kind, align)


def bank_swizzled_layout(buffer, width: int) -> Layout:
    """The ``width``-byte bank swizzle of ``buffer`` (module docstring)."""
    what = {128: "make_full_bank_swizzled_layout", 64: "make_half_bank_swizzled_layout",
            32: "make_quarter_bank_swizzled_layout"}[width]
    dims, bits = tile_of(buffer, what)
    if len(dims) < 2:
        raise LayoutError(f"{what}: {buffer.name} has rank {len(dims)}; a swizzle lays out rows, rank 2 or more")
    rows, cols = dims[-2:]
    vec = 128 // bits  # elements per 16-byte chunk
    chunks = width // 16  # chunks per atom row
    atom = vec * chunks  # elements per atom row
    if not (rows == 4 or rows % 8 == 0):
        raise LayoutError(f"{what}: {buffer.name} has {rows} rows; the swizzle repeats every 8 rows "
                          "(a multiple of 8, or 4)")
    if cols % atom:
        raise LayoutError(f"{what}: {buffer.name} has {cols} columns of {bits}-bit elements; the "
                          f"{width}-byte swizzle needs a multiple of {atom}")
    shift = 8 // chunks  # rows that share one XOR value

    def fn(i, j):
        chunk = (j // vec) % chunks
        return (j // atom) * (rows * atom) + i * atom + _xor(chunk, (i % 8) // shift) * vec + j % vec

    kind = f"bank_sw{width}"
    return _stacked(dims, Layout((rows, cols), fn, kind, width * 8), kind, width * 8)


def make_full_bank_swizzled_layout(buffer) -> Layout:
    """The 128-byte swizzle (module docstring)."""
    return bank_swizzled_layout(buffer, 128)


def make_half_bank_swizzled_layout(buffer) -> Layout:
    """The 64-byte swizzle (module docstring)."""
    return bank_swizzled_layout(buffer, 64)


def make_quarter_bank_swizzled_layout(buffer) -> Layout:
    """The 32-byte swizzle (module docstring)."""
    return bank_swizzled_layout(buffer, 32)


def make_linear_layout(buffer) -> Layout:
    """Row-major over every dimension of ``buffer`` (TileLang's name)."""
    dims, _ = tile_of(buffer, "make_linear_layout")
    layout = Layout.row_major(dims)
    return Layout(layout.shape, layout.fn, "linear")


__all__ = ["BANK_KINDS", "HINT_KINDS", "SWIZZLE_TAGS", "SwizzleMode", "bank_swizzled_layout",
           "make_full_bank_swizzled_layout", "make_half_bank_swizzled_layout", "make_linear_layout",
           "make_quarter_bank_swizzled_layout"]
