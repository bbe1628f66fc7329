"""Fresh random inputs for a compiled kernel, read from its parameters (dtype, shape, device).

TileLang's ``TensorSupplyType`` names are kept so that ported code runs unchanged::

    from tilelang_core.profiler import TensorSupplyType, make_inputs
    a, b = make_inputs(kernel.params, TensorSupplyType.Randn, device="cpu")

Integers get small ranges (``Auto``: [-2, 2], unsigned [0, 4]) so that sums of products stay exact
in any accumulator and comparisons against a float reference are meaningful.
"""

from __future__ import annotations

import enum
from typing import Mapping, Sequence

from ..errors import ConfigError


class TensorSupplyType(enum.Enum):
    """How ``make_inputs`` fills a tensor. ``Auto``: normal floats, small integers, random bools."""

    Integer = 1
    Uniform = 2
    Normal = 3
    Randn = 4
    Zero = 5
    One = 6
    Auto = 7


def _coerce(supply) -> TensorSupplyType:
    if isinstance(supply, TensorSupplyType):
        return supply
    if isinstance(supply, str):
        for member in TensorSupplyType:
            if member.name.lower() == supply.lower():
                return member
    raise ConfigError(f"tensor_supply_type={supply!r} is not one of "
                      f"{', '.join(m.name for m in TensorSupplyType)}")


def _shape(param, dynamic_shapes: Mapping[str, int]) -> tuple[int, ...]:
    shape = []
    for extent in param.shape:
        if isinstance(extent, int):
            shape.append(extent)
            continue
        try:  # a symbolic extent ('n', 'n * 2'): evaluate it on the given symbol values
            shape.append(int(eval(extent, {"__builtins__": {"min": min, "max": max}},  # noqa: S307
                                  dict(dynamic_shapes))))
        except NameError:
            raise ConfigError(f"parameter '{param.name}' has symbolic shape {list(param.shape)}; "
                              f"give the symbols' values, e.g. dynamic_shapes={{'n': 1024}}, or "
                              f"pass input_tensors=...") from None
    return tuple(shape)


def make_tensor(param, supply=TensorSupplyType.Auto, device: str = "cpu",
                dynamic_shapes: Mapping[str, int] | None = None):
    """One torch tensor for ``param`` (a ``KernelParam``), on ``device``."""
    import torch

    from ..jit.args import torch_dtype

    supply = _coerce(supply)
    dtype = torch_dtype(param.dtype)
    if dtype is None:
        raise ConfigError(f"parameter '{param.name}' has dtype {param.dtype}, which torch cannot "
                          f"hold; pass input_tensors=... to the profiler")
    shape = _shape(param, dynamic_shapes or {})
    if supply is TensorSupplyType.Zero:
        return torch.zeros(shape, dtype=dtype, device=device)
    if supply is TensorSupplyType.One:
        return torch.ones(shape, dtype=dtype, device=device)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, device=device).bool()
    if not dtype.is_floating_point:
        low, high = (0, 5) if dtype == torch.uint8 or param.dtype.startswith("uint") else (-2, 3)
        return torch.randint(low, high, shape, dtype=dtype, device=device)
    if supply is TensorSupplyType.Integer:  # exact in every float type
        return torch.randint(-2, 3, shape, device=device).to(dtype)
    if supply is TensorSupplyType.Uniform:
        return torch.rand(shape, device=device).to(dtype)
    # Normal, Randn, Auto; generated in float32 then cast, since fp8 has no randn
    return torch.randn(shape, device=device).to(dtype)


def make_inputs(params: Sequence, supply=TensorSupplyType.Auto, device: str = "cpu",
                dynamic_shapes: Mapping[str, int] | None = None) -> list:
    """Fresh tensors for every input (non-output) parameter of a kernel, in order.

    Scalar parameters have no sensible random value; a kernel with scalars needs
    ``input_tensors`` (the error says so).
    """
    inputs = []
    for p in params:
        if p.is_output:
            continue
        if not p.is_tensor:
            raise ConfigError(f"parameter '{p.name}' is a {p.dtype} scalar, which the profiler "
                              f"cannot invent; pass input_tensors=[...] with its value")
        inputs.append(make_tensor(p, supply, device, dynamic_shapes))
    return inputs
