"""``tilelang.cuda.intrinsics.macro``: the emitter TileLang-X provides (mma_macro_generator.py)."""

from ... import unavailable
from .mma_macro_generator import TensorCoreIntrinEmitter, TensorCoreIntrinEmitterWithLadderTransform

__getattr__ = unavailable(__name__)

__all__ = ["TensorCoreIntrinEmitter", "TensorCoreIntrinEmitterWithLadderTransform"]
