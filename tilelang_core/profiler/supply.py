"""Fresh random inputs for a compiled kernel, read from its parameters (dtype, shape, device).

TileLang's ``TensorSupplyType`` and its value rules, so that ported code draws the same kind of
data (``tilelang_core.utils.tensor`` re-exports these names under TileLang's module path)::

    from tilelang_core.profiler import TensorSupplyType, make_inputs
    a, b = make_inputs(kernel.params, TensorSupplyType.Randn, device="cpu")

    supply = get_tensor_supply(TensorSupplyType.Integer)   # TileLang's form: param -> tensor
    a = supply(kernel.params[0])

What each type draws (TileLang's table; ranges are half-open like ``torch.randint``):

=========  ==================================================================================
Auto       float16/bfloat16/float32: uniform [-1, 1); unsigned ints: [0, 3); float8: integers
           [-128, 128) cast; bool: random; anything else (signed ints, float64): integers [-2, 3)
Integer    like Auto, except that every float type also gets integers [-2, 3) (exact in any
           accumulator, so sums of products compare bit-exactly)
Uniform    uniform [-1, 1) drawn in float32 and cast (int8: all ones)
Normal     normal with mean -1 and standard deviation 1, in float32 and cast (int8: all ones);
           TileLang's parameters, kept as they are
Randn      standard normal in float32, cast
Zero, One  all zeros / all ones
=========  ==================================================================================
"""

from __future__ import annotations

import enum
from typing import Any, Callable, Mapping, Sequence

from ..errors import ConfigError


class TensorSupplyType(enum.Enum):
    """How ``make_inputs`` fills a tensor (see the module docstring for the values)."""

    Integer = 1
    Uniform = 2
    Normal = 3
    Randn = 4
    Zero = 5
    One = 6
    Auto = 7


def coerce_supply(supply) -> TensorSupplyType:
    """A ``TensorSupplyType`` from the enum itself, its name (any case) or None (Auto)."""
    if supply is None:
        return TensorSupplyType.Auto
    if isinstance(supply, TensorSupplyType):
        return supply
    if isinstance(supply, str):
        for member in TensorSupplyType:
            if member.name.lower() == supply.lower():
                return member
    raise ConfigError(f"tensor_supply_type={supply!r} is not one of "
                      f"{', '.join(m.name for m in TensorSupplyType)}")


def _dtype_name(param) -> str:
    """The dtype of a parameter as a tvm dtype string: our KernelParam holds one; TileLang-style
    objects may hold a torch.dtype or a tvm DataType instead."""
    dtype = param.dtype
    if isinstance(dtype, str):
        return dtype
    text = str(dtype)
    return text[len("torch."):] if text.startswith("torch.") else text


def _shape(param, dynamic_shapes: Mapping[str, int]) -> tuple[int, ...]:
    shape = []
    for extent in param.shape:
        if isinstance(extent, int):
            shape.append(extent)
            continue
        if hasattr(extent, "value"):  # a tvm IntImm from a TileLang-style parameter
            shape.append(int(extent.value))
            continue
        try:  # a symbolic extent ('n', 'n * 2'): evaluate it on the given symbol values
            shape.append(int(eval(str(extent), {"__builtins__": {"min": min, "max": max}},  # noqa: S307
                                  dict(dynamic_shapes))))
        except NameError:
            raise ConfigError(f"parameter '{getattr(param, 'name', '?')}' has symbolic shape "
                              f"{list(param.shape)}; give the symbols' values, e.g. "
                              f"dynamic_shapes={{'n': 1024}}, or pass input_tensors=...") from None
    return tuple(shape)


def default_device() -> str:
    """TileLang's current device: ``cuda`` when torch sees a GPU, else ``cpu``."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def make_tensor(param, supply=TensorSupplyType.Auto, device: str | None = "cpu",
                dynamic_shapes: Mapping[str, int] | None = None):
    """One torch tensor for ``param`` (a ``KernelParam``, or anything with ``dtype`` and
    ``shape``), on ``device`` (None: :func:`default_device`)."""
    import torch

    from ..jit.args import torch_dtype

    supply = coerce_supply(supply)
    name = _dtype_name(param)
    dtype = torch_dtype(name)
    if dtype is None:
        raise ConfigError(f"parameter '{getattr(param, 'name', '?')}' has dtype {name}, which torch "
                          f"cannot hold; pass input_tensors=... to the profiler")
    shape = _shape(param, dynamic_shapes or {})
    device = default_device() if device is None else device
    if supply is TensorSupplyType.Zero:
        return torch.zeros(shape, dtype=dtype, device=device)
    if supply is TensorSupplyType.One:
        return torch.ones(shape, dtype=dtype, device=device)
    if supply in (TensorSupplyType.Auto, TensorSupplyType.Integer):
        return _small_values(shape, dtype, name, device, supply is TensorSupplyType.Auto)
    if dtype == torch.int8 and supply in (TensorSupplyType.Uniform, TensorSupplyType.Normal):
        return torch.ones(shape, dtype=dtype, device=device)
    draw = torch.empty(shape, dtype=torch.float32, device=device)
    if supply is TensorSupplyType.Uniform:
        draw.uniform_(-1.0, 1.0)
    elif supply is TensorSupplyType.Normal:
        draw.normal_(-1.0, 1.0)
    else:  # Randn; drawn in float32 then cast, since fp8 has no randn
        draw.normal_(0.0, 1.0)
    return draw.to(dtype)


def _small_values(shape, dtype, name: str, device, floats_uniform: bool):
    import torch

    if name.startswith("uint"):
        return torch.randint(0, 3, shape, device=device).to(dtype)
    if name.startswith("float8"):
        return torch.randint(-128, 128, shape, dtype=torch.int8, device=device).to(dtype)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, device=device).to(dtype)
    if floats_uniform and dtype in (torch.float16, torch.bfloat16, torch.float32):
        return torch.empty(shape, dtype=dtype, device=device).uniform_(-1.0, 1.0)
    return torch.randint(-2, 3, shape, device=device).to(dtype)


def get_tensor_supply(supply_type=TensorSupplyType.Integer, device: str | None = None
                      ) -> Callable[[Any], Any]:
    """TileLang's supply: a function ``param -> tensor`` drawing per ``supply_type``.

    ``device`` defaults to TileLang's current device (``cuda`` when torch sees one, else
    ``cpu``); a profiler passes its kernel's device instead.

        supply = get_tensor_supply(TensorSupplyType.Auto)
        inputs = [supply(p) for p in kernel.params if not p.is_output]
    """
    supply = coerce_supply(supply_type)

    def get_tensor(param):
        return make_tensor(param, supply, device)

    return get_tensor


def make_inputs(params: Sequence, supply=TensorSupplyType.Auto, device: str = "cpu",
                dynamic_shapes: Mapping[str, int] | None = None, with_output: bool = False) -> list:
    """Fresh tensors for every input (non-output) parameter of a kernel, in order; with
    ``with_output`` for the outputs too.

    Scalar parameters have no sensible random value; a kernel with scalars needs
    ``input_tensors`` (the error says so).
    """
    inputs = []
    for p in params:
        if p.is_output and not with_output:
            continue
        if not p.is_tensor:
            raise ConfigError(f"parameter '{p.name}' is a {p.dtype} scalar, which the profiler "
                              f"cannot invent; pass input_tensors=[...] with its value")
        inputs.append(make_tensor(p, supply, device, dynamic_shapes))
    return inputs
