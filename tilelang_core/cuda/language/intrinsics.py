"""``tilelang.cuda.language.intrinsics``: TileLang's MMA emitters under their newer import path.
The ``TensorCoreIntrinEmitter`` (ldmatrix / mma.sync) is tilelang_core/cuda/intrinsics' own; the
WGMMA and TCGEN05 emitters are not provided here and refuse every use (tilelang_core/cuda)."""

from .. import unavailable
from ..intrinsics import (TensorCoreIntrinEmitter, TensorCoreIntrinEmitterWithLadderTransform, get_mma_micro_size,
                          mma_store_index_map)

__getattr__ = unavailable(__name__)

__all__ = ["TensorCoreIntrinEmitter", "TensorCoreIntrinEmitterWithLadderTransform", "get_mma_micro_size",
           "mma_store_index_map"]
