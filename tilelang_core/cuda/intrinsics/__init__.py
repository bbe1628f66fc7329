"""``tilelang.cuda.intrinsics``: TileLang's hand-written MMA machinery that TileLang-X provides (the
``TensorCoreIntrinEmitter``, macro/mma_macro_generator.py; the shared swizzles, layout/mma_layout.py).
Any other name of TileLang's module imports and refuses every use (tilelang_core/cuda)."""

from .. import unavailable
from .layout.mma_layout import get_swizzle_layout, make_mma_swizzle_layout
from .macro.mma_macro_generator import (TensorCoreIntrinEmitter, TensorCoreIntrinEmitterWithLadderTransform,
                                        get_mma_micro_size, mma_store_index_map)

__getattr__ = unavailable(__name__)

__all__ = ["TensorCoreIntrinEmitter", "TensorCoreIntrinEmitterWithLadderTransform", "get_mma_micro_size",
           "get_swizzle_layout", "make_mma_swizzle_layout", "mma_store_index_map"]
