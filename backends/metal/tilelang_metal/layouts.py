"""Metal fragment layouts: the 8x8 simdgroup_matrix accumulator and the gemm simdgroup split.

Each of the 32 lanes of a simdgroup holds two elements of an 8x8 ``simdgroup_matrix``
(``thread_elements()``), at row ``fm`` and columns ``fn``, ``fn + 1`` with (lane bits b4..b0)

    fm = 4*b4 + 2*b2 + b1        fn = 4*b3 + 2*b0

Apple does not document this mapping; it is the one MLX (steel ``BaseMMAFrag::get_coord``) and
metal-flash-attention build on. A block's accumulator tiles it over simdgroups (``m_sg x n_sg``,
simdgroup id = wm * n_sg + wn) and over each simdgroup's 8x8 tiles (``MI x NI``; register index
(mi * NI + ni) * 2 + r), so the registers of tile (mi, ni) are exactly the thread_elements of one
simdgroup_matrix.

Example::

    >>> c = simdgroup_accumulator_layout(64, 64, m_sg=2, n_sg=2)
    >>> c.num_threads, c.local_size
    (128, 32)
"""

from __future__ import annotations

from tilelang_core.errors import LayoutError
from tilelang_core.layout import LOCAL, THREAD, Digit, Fragment
from tilelang_core.simt.warp_split import warp_partition

TILE = 8
SIMDGROUP = 32


def simdgroup_accumulator_layout(m: int, n: int, m_sg: int = 1, n_sg: int = 1, name: str = "") -> Fragment:
    """Layout of an ``m x n`` accumulator computed by ``m_sg x n_sg`` simdgroups of 8x8 tiles."""
    if m % (m_sg * TILE) or n % (n_sg * TILE):
        raise LayoutError(f"accumulator {name} {m}x{n} does not tile over {m_sg}x{n_sg} simdgroups "
                          f"of {TILE}x{TILE} simdgroup matrices")
    mi, ni = m // m_sg // TILE, n // n_sg // TILE
    rows = (Digit(m_sg, THREAD, n_sg * SIMDGROUP), Digit(mi, LOCAL, ni * 2),
            Digit(2, THREAD, 16), Digit(2, THREAD, 4), Digit(2, THREAD, 2))
    cols = (Digit(n_sg, THREAD, SIMDGROUP), Digit(ni, LOCAL, 2),
            Digit(2, THREAD, 8), Digit(2, THREAD, 1), Digit(2, LOCAL, 1))
    return Fragment((m, n), (rows, cols), name=name)


def simdgroup_partition(m: int, n: int, num_simdgroups: int, policy: str = "square") -> tuple[int, int] | None:
    """(m_sg, n_sg) splitting an ``m x n`` accumulator over ``num_simdgroups`` by the gemm's
    policy (the kit's warp_partition with 8x8 tiles), or None when no split gives every
    simdgroup whole 8x8 tiles (the gemm then takes the FMA path)."""
    try:
        return warp_partition(m, n, num_simdgroups, policy, tile_m=TILE, tile_n=TILE)
    except LayoutError:
        return None
