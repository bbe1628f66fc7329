"""The 8x8 register tile of one ldmatrix/stmatrix matrix, under TileLang's names.

``make_gemm_fragment_8x8()``: 32 lanes, lane ``4 * i + j // 2`` holds elements ``(i, j)`` and
``(i, j ^ 1)`` as its registers ``j % 2``: the accumulator/operand tile of ``mma.m16n8k*`` and
what one ``ldmatrix`` matrix lands as. ``make_gemm_fragment_8x8_transposed()`` is the same tile
read down the columns (lane ``4 * j + i // 2``, register ``i % 2``).

Example::

    >>> f = make_gemm_fragment_8x8()
    >>> f.thread_of(2, 5), f.local_of(2, 5)
    (10, 1)
"""

from __future__ import annotations

from .fragment import LOCAL, THREAD, Digit, Fragment


def make_gemm_fragment_8x8() -> Fragment:
    return Fragment((8, 8), ((Digit(8, THREAD, 4),), (Digit(4, THREAD, 1), Digit(2, LOCAL, 1))),
                    name="gemm_fragment_8x8")


def make_gemm_fragment_8x8_transposed() -> Fragment:
    return Fragment((8, 8), ((Digit(4, THREAD, 1), Digit(2, LOCAL, 1)), (Digit(8, THREAD, 4),)),
                    name="gemm_fragment_8x8_transposed")


__all__ = ["make_gemm_fragment_8x8", "make_gemm_fragment_8x8_transposed"]
