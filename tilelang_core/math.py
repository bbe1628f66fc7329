"""``tilelang.math``: the integer helpers kernel factories size tiles with (TileLang's module)."""

from .intmath import cdiv, next_power_of_2, prev_power_of_2

__all__ = ["cdiv", "next_power_of_2", "prev_power_of_2"]
