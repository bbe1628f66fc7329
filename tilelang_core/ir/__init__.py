"""Tile-op definitions: one class per ``tl.tile.<name>`` op, and the op registry.

Build an op and emit it::

    from tilelang_core.ir import Copy
    stmt = Copy(src_region, dst_region).to_stmt()     # a tvm.tirx.TilePrimitiveCall

Read one back in a pass::

    from tilelang_core.ir import TileOp, is_tile_op
    if is_tile_op(stmt):
        op = TileOp.from_stmt(stmt)                   # a Copy / Gemm / Reduce ... instance
"""

from .. import ffi_errors  # noqa: F401 - TileLang error types survive TVM passes
from .ops import Atomic, Copy, Cumsum, Fill, Gemm, GemmWarpPolicy, Reduce, TileOp
from .tma_copy import TmaCopy
from .registry import OP_PREFIX, get_op, get_op_class, is_tile_op, registered_ops

__all__ = [
    "OP_PREFIX", "Atomic", "Copy", "Cumsum", "Fill", "Gemm", "GemmWarpPolicy", "Reduce", "TileOp", "TmaCopy",
    "get_op", "get_op_class", "is_tile_op", "registered_ops",
]
