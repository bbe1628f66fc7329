"""Target-independent passes over tile-level TIRX, one pass per file.

Each module exposes a pure function on a PrimFunc (easy to test) and a ``prim_func_pass`` factory
named like the pass (``LowerTileOps``) for use in pipelines.
"""

from .lower_tile_ops import LowerTileOps, lower_tile_ops
from .verify_no_tile_ops import VerifyNoTileOps, find_tile_ops, verify_no_tile_ops

__all__ = ["LowerTileOps", "VerifyNoTileOps", "find_tile_ops", "lower_tile_ops", "verify_no_tile_ops"]
