"""``tilelang.cuda.intrinsics.sparse_layout``: the 2:4 sparsity metadata contract T.gemm_sp reads
(language/sparse_gemm.py has the format)."""

from __future__ import annotations

from ...language.dtypes import dtype
from ...language.sparse_gemm import GROUPS, e_factor
from .. import unavailable

#: element type -> (kept, group) of its 2:4 (float32: 1:2) sparsity
GROUP_CONFIG = {dtype(name): pair for name, pair in GROUPS.items()}


def get_e_factor(a_dtype, meta_dtype) -> int:
    """How many elements of a row of A one ``meta_dtype`` metadata element indexes."""
    return e_factor(str(a_dtype), str(meta_dtype))


def get_e_replicate_factor(a_dtype) -> int:
    """How many consecutive threads share one metadata value in TileLang's mma.sp fragments (1 for
    8-bit types, else 2); T.gemm_sp here reads the metadata per element and needs no such share."""
    return 1 if dtype(str(a_dtype)).bits <= 8 else 2


__getattr__ = unavailable(__name__)

__all__ = ["GROUP_CONFIG", "get_e_factor", "get_e_replicate_factor"]
