"""TileLang's ``tilelang.utils``: the tensor helpers examples import from it.

    from tilelang_core.utils import TensorSupplyType, torch_assert_close
    from tilelang_core.utils.tensor import get_tensor_supply

Light to import: torch loads inside the functions.
"""

from .tensor import TensorSupplyType, get_tensor_supply, is_float8_dtype, torch_assert_close

__all__ = ["TensorSupplyType", "get_tensor_supply", "is_float8_dtype", "torch_assert_close"]
