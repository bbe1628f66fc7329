"""LongestFirst: a grid whose blocks run more loop iterations the larger their blockIdx.x is
launched in reverse x order, so that the longest blocks start first.

Causal attention is the case: row block ``bx`` runs ``bx + 1`` key blocks. Blocks are dispatched
roughly in linear order with x fastest, so each (head, batch) slice starts its longest rows last,
and the last wave of the grid is made of long blocks while SMs that got short ones sit idle.
Walking x backwards (``bx -> GX - 1 - bx``) is a bijection of the grid, so every tile is still
computed exactly once; only the order changes.

The pass looks at the kernel's first loop whose extent depends on blockIdx.x and evaluates that
extent for every block of a static grid (it must simplify to a constant for each): it applies
only when the extents never decrease along x and differ between the first and the last block.
Kernels that order their blocks themselves (``T.use_swizzle``) keep their order.

Opt-in per backend (``lower_simt(longest_first_blocks=True)``; CUDA: ``tl.enable_longest_first``).
Measured on the H200, causal attention S4096 D128 with mma.sync (4096 row blocks, 2 per SM):
310 vs 308 TFLOP/s, within run-to-run noise, so the last wave was not where that kernel lost.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from .block_swizzle import below_launch, block_launches, has_cluster, has_swizzle
from .state import bound_values, substitute, uses_var

#: grids larger than this along x are left alone (the check evaluates every block's extent)
MAX_BLOCKS_CHECKED = 4096


def trip_counts(body, bx, gx: int) -> list[int] | None:
    """The extent of the first loop that depends on ``bx``, for bx = 0 .. gx - 1; None when there
    is no such loop or an extent is not a constant once bx is."""
    bound = bound_values(body)
    extents = []

    def on_for(loop):
        extent = substitute(loop.extent, bound)
        if not extents and uses_var(extent, bx):
            extents.append(extent)

    tvm_ffi.structural_walk(body, [(tirx.For, on_for)])
    return extents_along_x(extents[0], bx, gx) if extents else None


def extents_along_x(extent, bx, gx: int) -> list[int] | None:
    """``extent`` for bx = 0 .. gx - 1; None when one is not a constant once bx is."""
    analyzer = tvm.sym.Analyzer()
    counts = []
    for x in range(gx):
        value = analyzer.simplify(substitute(extent, {bx: tirx.const(x, bx.ty.dtype)}))
        if not isinstance(value, tirx.IntImm):
            return None
        counts.append(int(value))
    return counts


def longest_first(body):
    """``body`` with blockIdx.x walked backwards when its blocks' trip counts grow along x (module
    docstring); unchanged otherwise."""
    launch = block_launches(body)[0]
    if launch is None or not isinstance(launch[1], tirx.IntImm) or has_swizzle(body) or has_cluster(body):
        return body
    bx, gx = launch[0], int(launch[1])
    if gx < 2 or gx > MAX_BLOCKS_CHECKED:
        return body
    counts = trip_counts(body, bx, gx)
    if counts is None or counts[-1] <= counts[0] or any(b < a for a, b in zip(counts, counts[1:])):
        return body
    return below_launch(body, lambda node: substitute(node, {bx: tirx.const(gx - 1, bx.ty.dtype) - bx}))


__all__ = ["extents_along_x", "longest_first", "trip_counts"]
