"""``tilelang.utils.language``: TileLang's IR helpers for its hand-written sm_100 (TCGEN05) kernels.
TileLang-X has none of them; the names import (so a test file that also holds portable kernels
loads) and refuse every use (tilelang_core/cuda)."""

from ..cuda import unavailable

__getattr__ = unavailable(__name__)
