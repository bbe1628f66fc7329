"""BlockSwizzle: ``T.use_swizzle(panel, order)`` -> blocks visit the grid panel by panel (L2 reuse).

Blocks run roughly in linear order ``blockIdx.y * gridDim.x + blockIdx.x``. With a row panel of
``P`` rows, consecutive blocks walk down the columns of a band of P rows instead of along a whole
row, so the A rows and B columns they share stay in L2::

    L = by * GX + bx;  band = L // (P * GX);  rows = min(P, GY - band * P)
    off = L - band * P * GX;  bx' = off // rows;  by' = band * P + off % rows

Within a band of ``rows x GX`` blocks, ``off -> (off // rows, off % rows)`` is a bijection, so every
tile is still computed exactly once. ``order="col"`` swaps the roles of x and y.

``pairs=True`` walks the grid of row pairs ``(bx, by // 2)`` in panels instead and keeps
``by % 2``: blocks (x, 2i) and (x, 2i + 1), which a backend may launch as one thread-block
cluster sharing their column's tiles, stay in the same column on consecutive rows.
"""

from __future__ import annotations

import tvm_ffi
from tvm import tirx

from .state import substitute

SWIZZLE_KEY = "tl.swizzle"


def block_launches(body):
    """(blockIdx.x var, extent), (blockIdx.y var, extent) of the kernel, if both exist."""
    found = {}

    def on_attr(attr):
        if attr.attr_key == "thread_extent" and isinstance(attr.node, tirx.IterVar):
            found[str(attr.node.thread_tag)] = (attr.node.var, attr.value)

    tvm_ffi.structural_walk(body, [(tirx.AttrStmt, on_attr)])
    return found.get("blockIdx.x"), found.get("blockIdx.y")


def has_swizzle(body) -> bool:
    """Whether the kernel orders its blocks itself (``T.use_swizzle``)."""
    hits = []
    tvm_ffi.structural_walk(body, [(tirx.AttrStmt, lambda a: hits.append(1) if a.attr_key == SWIZZLE_KEY else None)])
    return bool(hits)


def has_cluster(body) -> bool:
    """Whether the kernel is a T.ClusterKernel of more than one block a cluster (language/cluster.py):
    its clusters are neighbouring blocks of the launch, so no pass may reorder its blocks."""
    from tilelang_core.ir import intrinsics as I

    return any(I.intrinsic_of(c).name == "cluster_dims" and any(int(a) > 1 for a in c.args) for c in I.calls_in(body))


def block_swizzle(body):
    bx, by = block_launches(body)

    def visit(node):
        if isinstance(node, tirx.SeqStmt):
            return tirx.SeqStmt([visit(s) for s in node.seq])
        if isinstance(node, tirx.AttrStmt):
            if node.attr_key == SWIZZLE_KEY:
                inner = visit(node.body)
                if bx is None or by is None:
                    return inner  # a 1-D grid has nothing to reorder
                return _swizzled(inner, str(node.node.value), int(node.value.value), bx, by)
            return tirx.AttrStmt(node.node, node.attr_key, node.value, visit(node.body))
        return node

    return visit(body)


def rasterize(body, panel: int, order: str = "row", pairs: bool = False):
    """The body with its 2-D grid walked in panels (what ``T.use_swizzle(panel, order)`` asks
    for), for a backend that picks a rasterization itself; unchanged for a 1-D grid. ``pairs``:
    panels of row pairs (module docstring; blockIdx.y's extent must be even)."""
    bx, by = block_launches(body)
    if bx is None or by is None:
        return body

    def reorder(node):
        if pairs:
            (x, gx), (y, gy) = bx, by
            new_x, new_half = _panels(x, gx, tirx.floordiv(y, 2), gy // 2, panel)
            return substitute(node, {x: new_x, y: new_half * 2 + tirx.floormod(y, 2)})
        return _swizzled(node, order, panel, bx, by)

    return below_launch(body, reorder)


def below_launch(body, rewrite):
    """``rewrite`` applied to what the kernel's launch attributes enclose, not to their IterVars
    (a block index substituted there would no longer be the launch's own variable)."""
    if isinstance(body, tirx.AttrStmt) and body.attr_key == "thread_extent":
        return tirx.AttrStmt(body.node, body.attr_key, body.value, below_launch(body.body, rewrite))
    if isinstance(body, tirx.SeqStmt):
        return tirx.SeqStmt([below_launch(s, rewrite) for s in body.seq])
    return rewrite(body)


def _swizzled(body, order: str, panel: int, bx, by):
    (x, gx), (y, gy) = (bx, by) if order == "row" else (by, bx)
    new_x, new_y = _panels(x, gx, y, gy, panel)
    return substitute(body, {x: new_x, y: new_y})


def _panels(x, gx, y, gy, panel: int):
    """(bx', by') of block (x, y) walking a gx x gy grid in panels of ``panel`` rows.

    The walk is a bijection on the grid, so ``bx' < gx`` and ``by' < gy`` always; the ``min``
    around each says so in a form interval analysis reads (it cannot see through ``rows``, the
    last band's height). Without it every global access indexed by a swizzled block index kept
    a bounds guard, and the guards stopped nvcc from merging repeated loads: TileLang's
    deepgemm example read its scales 64 times a k-tile instead of twice."""
    linear = y * gx + x
    band = tirx.floordiv(linear, panel * gx)
    rows = tirx.Min(tirx.const(panel, "int32"), gy - band * panel)
    off = tirx.floormod(linear, panel * gx)  # (= linear - band * panel * gx, visibly >= 0)
    return (tirx.Min(tirx.floordiv(off, rows), gx - 1),
            tirx.Min(band * panel + tirx.floormod(off, rows), gy - 1))
