"""How the warps of a block split a gemm's accumulator tile (T.GemmWarpPolicy), for any backend
whose matrix instruction computes ``tile_m x tile_n`` per warp (mma.sync 16x8, MFMA 16x16 or
32x32, WMMA 16x16).

Example::

    >>> warp_partition(128, 128, 4, "square", tile_m=16, tile_n=8)
    (2, 2)
"""

from __future__ import annotations

from tilelang_core.errors import LayoutError


def warp_partition(m: int, n: int, num_warps: int, policy: str = "square", *, tile_m: int,
                   tile_n: int) -> tuple[int, int]:
    """(m_warp, n_warp) for a gemm with an ``m x n`` accumulator on ``num_warps`` warps.

    ``full_row``: as many warps along M as the tile allows (all of them when M has room, TileLang's
    rule: a 64-row tile on 8 warps of 16 rows is 4 x 2); ``full_col``: as many along N;
    ``square``: the split whose per-warp tile is closest to square (fewer operand loads per
    instruction), preferring more warps along M on ties. Each warp's tile must be a multiple of
    the instruction's ``tile_m x tile_n``.
    """
    options = [(w, num_warps // w) for w in range(1, num_warps + 1) if num_warps % w == 0]
    fits = [(a, b) for a, b in options if m % (a * tile_m) == 0 and n % (b * tile_n) == 0]
    if not fits:
        raise LayoutError(
            f"gemm accumulator {m}x{n} cannot be split over {num_warps} warps with policy "
            f"'{policy}': each warp needs a multiple of {tile_m} rows and {tile_n} columns. Use a "
            f"tile whose M is a multiple of {tile_m} and N a multiple of {tile_n} that the warps "
            "can share, or change threads=")
    if policy == "full_row":
        return max(fits)
    if policy == "full_col":
        return min(fits)
    return min(fits, key=lambda ab: (abs(m / ab[0] - n / ab[1]), -ab[0]))
