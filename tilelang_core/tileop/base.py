"""``tilelang.tileop.base.GemmWarpPolicy`` (also ``T.GemmWarpPolicy``)."""

from ..ir import GemmWarpPolicy

__all__ = ["GemmWarpPolicy"]
