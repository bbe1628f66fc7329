"""cuda-only passes over the lowered module (the shared ones live in tilelang_core.simt.transform).

fast_exp2    T.exp2 on float32 -> one ex2.approx.ftz (codegen stage)
fast_divide  float32 / in kernels -> div.full.f32 (codegen stage)
"""

from .fast_divide import fast_divide
from .fast_exp2 import fast_exp2

__all__ = ["fast_divide", "fast_exp2"]
