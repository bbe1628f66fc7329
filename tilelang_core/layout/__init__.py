"""Layouts of tiles: ``Layout`` (index -> memory offset, swizzles) and ``Fragment`` (index ->
thread and register). Target-independent; backends build their instruction layouts from these.

Example::

    from tilelang_core.layout import Fragment, make_swizzled_layout
    frag = Fragment.spread((64, 64), num_threads=128, vector=4)
    frag.thread_of(0, 5), frag.local_of(0, 5)      # (1, 1)
"""

from .fragment import LOCAL, THREAD, Digit, Fragment
from .layout import Layout, make_swizzled_layout, swizzle_period
from .mma_fragments import make_gemm_fragment_8x8, make_gemm_fragment_8x8_transposed
from .swizzle import (SwizzleMode, make_full_bank_swizzled_layout, make_half_bank_swizzled_layout,
                      make_linear_layout, make_quarter_bank_swizzled_layout)

__all__ = ["LOCAL", "THREAD", "Digit", "Fragment", "Layout", "SwizzleMode", "make_full_bank_swizzled_layout",
           "make_gemm_fragment_8x8", "make_gemm_fragment_8x8_transposed", "make_half_bank_swizzled_layout",
           "make_linear_layout", "make_quarter_bank_swizzled_layout", "make_swizzled_layout", "swizzle_period"]
