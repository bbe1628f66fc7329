"""``tilelang.tileop``: where TileLang keeps its tile-op classes; here only the public enums."""

from . import base

__all__ = ["base"]
