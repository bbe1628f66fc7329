"""Target-independent passes over tile-level TIRX, one pass per file.

Each module exposes a pure function on a PrimFunc (easy to test) and a ``prim_func_pass`` factory
named like the pass (``LowerTileOps``) for use in pipelines.
"""

from ..language.negative_indices import LegalizeNegativeIndex  # TileLang's pass names, ours parse-time
from ..pass_configs import PassConfigKey  # TileLang's `from tilelang.transform import PassConfigKey`
from .lower_tile_ops import LowerTileOps, lower_tile_ops
from .positive_floor_dividends import PositiveFloorDividends, positive_floor_dividends
from .safe_global_access import LegalizeSafeMemoryAccess
from .verify_no_tile_ops import VerifyNoTileOps, find_tile_ops, verify_no_tile_ops

__all__ = ["LegalizeNegativeIndex", "LegalizeSafeMemoryAccess", "LowerTileOps", "PassConfigKey", "PositiveFloorDividends",
           "VerifyNoTileOps", "find_tile_ops", "lower_tile_ops", "positive_floor_dividends", "verify_no_tile_ops"]
