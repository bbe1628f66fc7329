"""Integer helpers kernel factories use to size tiles (``tilelang.cdiv``, ``tilelang.next_power_of_2``).

Plain Python on ints: they run while a kernel is being written, not inside it (use ``T.ceildiv``
there).
"""

from __future__ import annotations


def cdiv(a: int, b: int) -> int:
    """Ceiling division of positive ints: ``cdiv(1000, 128) == 8``."""
    return -(-a // b)


def next_power_of_2(n: int) -> int:
    """The smallest power of two >= n (1 for n <= 1): ``next_power_of_2(300) == 512``."""
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()


def prev_power_of_2(n: int) -> int:
    """The largest power of two <= n (n >= 1): ``prev_power_of_2(300) == 256``."""
    if n < 1:
        raise ValueError(f"prev_power_of_2 needs n >= 1, got {n}")
    return 1 << (int(n).bit_length() - 1)
