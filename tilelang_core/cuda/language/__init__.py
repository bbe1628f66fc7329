"""``tilelang.cuda.language``: the CUDA-only part of TileLang's language, by the path its newer
kernels import from (``tilelang.cuda.language.intrinsics``: the MMA emitters). What TileLang-X
provides of it is the ``TensorCoreIntrinEmitter`` (tilelang_core/cuda/intrinsics); any other name
imports and refuses every use, as in tilelang_core/cuda."""

from .. import unavailable

__getattr__ = unavailable(__name__)
