"""Target-independent passes over tile-level TIRX, one pass per file.

Each module exposes a pure function on a PrimFunc (easy to test) and a ``prim_func_pass`` factory
named like the pass (``LowerTileOps``) for use in pipelines.
"""

from ..language.negative_indices import legalize_negative_indices
from ..pass_configs import PassConfigKey  # TileLang's `from tilelang.transform import PassConfigKey`
from .func_pass import func_pass
from .lower_tile_ops import LowerTileOps, lower_tile_ops
from .positive_floor_dividends import PositiveFloorDividends, positive_floor_dividends
from .safe_global_access import LegalizeSafeMemoryAccess
from .verify_no_tile_ops import VerifyNoTileOps, find_tile_ops, verify_no_tile_ops


def LegalizeNegativeIndex():  # noqa: N802  (TileLang's pass name; the parser runs the rule on every kernel)
    """Pass form of language/negative_indices.legalize_negative_indices."""
    return func_pass(legalize_negative_indices, "tl.LegalizeNegativeIndex")


__all__ = ["LegalizeNegativeIndex", "LegalizeSafeMemoryAccess", "LowerTileOps", "PassConfigKey", "PositiveFloorDividends",
           "VerifyNoTileOps", "find_tile_ops", "lower_tile_ops", "positive_floor_dividends", "verify_no_tile_ops"]
