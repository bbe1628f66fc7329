"""``tilelang.cuda.intrinsics.layout``: the swizzles TileLang-X provides (mma_layout.py)."""

from ... import unavailable
from .mma_layout import get_swizzle_layout, make_mma_swizzle_layout

__getattr__ = unavailable(__name__)

__all__ = ["get_swizzle_layout", "make_mma_swizzle_layout"]
