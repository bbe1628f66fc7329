"""Data types: ``T.float16`` etc. are dtype strings that can also build constants and variables.

``T.float16 == "float16"``, so either spelling works wherever a dtype is expected::

    acc = T.alloc_fragment((64, 64), T.float32)
    x = T.float16(1.5)            # a float16 constant
    def k(n: T.int32, ...): ...   # a scalar kernel parameter
"""

from __future__ import annotations

import tvm

from ..errors import FrontendError


class DType(tvm.DataType):
    """A dtype name that is also a constructor of constants (and of parameters when bare).

    A ``tvm.DataType`` (itself a ``str``), as TileLang's dtypes are: ``.bits``, ``.lanes`` and
    comparison with plain strings come with it.
    """

    __slots__ = ()

    def __new__(cls, content):
        # TileLang's C-style names are the canonical dtype: T.dtype("uint") == T.uint32; a torch
        # or numpy dtype is its name (T.dtype(x.dtype), as TileKernels writes)
        text = content if isinstance(content, str) else canonical_dtype(content, "T.dtype")
        return super().__new__(cls, _ALIASES.get(text, text))

    def __call__(self, value=None, *more, name: str = ""):
        if more:  # T.bfloat16x2(a, b): the lanes packed into one vector (TileLang's Shuffle)
            return _pack(self, (value, *more))
        if value is None:
            # Bare annotation ``n: T.int32``: a fresh scalar variable for the parameter.
            return tvm.tirx.Var(name, str(self))
        if isinstance(value, (bool, int, float)):
            return tvm.tirx.const(value, str(self))
        if isinstance(value, tvm.ir.Expr):
            return value if str(value.ty) == str(self) else tvm.tirx.Cast(str(self), value)
        raise FrontendError(f"T.{self}() takes a number or an expression, got {value!r}")

    def __repr__(self) -> str:
        return f"T.{str(self)}"

    @property
    def bytes(self) -> int:
        """Bytes of one element (TileLang's ``dtype.bytes``: ``T.float16.bytes == 2``)."""
        return self.itemsize

    def as_torch(self):
        """The torch dtype of the same name: ``T.float16.as_torch() is torch.float16``; the
        4-bit floats (``float4_e2m1fn`` and its pairs) are torch's packed ``float4_e2m1fn_x2``."""
        import torch

        name = _TORCH_PACKED.get(str(self), str(self))
        found = getattr(torch, name, None)
        if not isinstance(found, torch.dtype):
            raise FrontendError(f"T.{self} has no torch dtype" + (
                f" in torch {torch.__version__} (it has no {name})" if name != str(self) else ""))
        return found


#: dtypes torch holds as packed pairs, by the torch dtype's name
_TORCH_PACKED = {"float4_e2m1fn": "float4_e2m1fn_x2", "float4_e2m1fnx2": "float4_e2m1fn_x2"}


def resolve_torch_storage_dtype(dtype) -> DType:
    """The dtype a torch tensor of ``dtype`` elements is stored as (TileLang's helper): ``dtype``
    itself where torch has it; float4_e2m1fn as its packed pairs (float4_e2m1fnx2) where torch has
    ``float4_e2m1fn_x2``, else int8 bytes; the other sub-byte types as int8 bytes."""
    import torch

    dtype = DType(canonical_dtype(dtype, "resolve_torch_storage_dtype"))
    if str(dtype) in _TORCH_PACKED:
        return DType("float4_e2m1fnx2") if hasattr(torch, "float4_e2m1fn_x2") else DType("int8")
    if dtype.bits < 8:  # (torch names int1..int7, but holds no tensors of them)
        return DType("int8")
    if isinstance(getattr(torch, str(dtype), None), torch.dtype):
        return dtype
    raise FrontendError(f"resolve_torch_storage_dtype: torch has no storage for {dtype}")


def _pack(dtype: DType, values) -> tvm.ir.Expr:
    lanes, element = dtype.lanes, str(dtype).split("x")[0]
    if len(values) != lanes:
        raise FrontendError(f"T.{dtype}(...) packs {lanes} lanes, got {len(values)} values")
    lanes_in = [tvm.tirx.const(v, element) if isinstance(v, (bool, int, float))
                else v if str(v.ty) == element else tvm.tirx.Cast(element, v) for v in values]
    return tvm.tirx.Shuffle(lanes_in, list(range(lanes)))


_NAMES = [
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64",
    "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu",
    "float4_e2m1fn",
]
_NARROW = ("int4", "float8_e3m4", "float8_e4m3b11fnuz", "float6_e2m3fn", "float6_e3m2fn")
_VECTOR_BASES = ("bfloat16", "float16", "float32", "float64", "int8", "int16", "int32", "int64",
                 "uint8", "uint16", "uint32", "uint64", "float8_e3m4", "float8_e4m3fn",
                 "float8_e4m3fnuz", "float8_e4m3b11fnuz", "float8_e5m2", "float8_e5m2fnuz",
                 "float8_e8m0fnu", "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn")
# TileLang's short aliases
_ALIASES = {"half": "float16", "float": "float32", "double": "float64", "int": "int32",
            "long": "int64", "short": "int16", "uint": "uint32",
            # TileLang's tf32 operand type: stored as float32; gemms on float32 operands already
            # run on the TF32 tensor-core path where the target has one (tl.disable_tf32 off)
            "tfloat32": "float32",
            "float8_e4m3": "float8_e4m3fn", "fp8_e4m3": "float8_e4m3fn", "fp8_e5m2": "float8_e5m2"}

DTYPES: dict[str, DType] = {n: DType(n) for n in _NAMES}

_TORCH_NAMES = {"half": "float16", "float": "float32", "double": "float64", "long": "int64",
                "int": "int32", "short": "int16", "bool": "bool"}


def canonical_dtype(dtype, what: str = "dtype") -> str:
    """The dtype string for a TileLang / numpy / torch dtype or a dtype name."""
    if isinstance(dtype, str):
        name = _ALIASES.get(str(dtype), str(dtype))
        try:
            tvm.DataType(name)
        except Exception:  # noqa: BLE001 - TVM raises its own error type for unknown names
            raise FrontendError(f"{what}: unknown dtype {dtype!r}") from None
        return name
    text = str(dtype)
    if text.startswith("torch."):
        name = text[len("torch."):]
        return _TORCH_NAMES.get(name, name)
    name = getattr(dtype, "name", None)  # numpy dtypes and scalar types
    if isinstance(name, str):
        return canonical_dtype(name, what)
    if isinstance(dtype, type):
        try:
            import numpy as np
            return canonical_dtype(np.dtype(dtype).name, what)
        except TypeError:
            pass
    raise FrontendError(f"{what}: cannot interpret {dtype!r} as a dtype")


# Names exported as ``T.<name>`` (set on the package by language/__init__.py; not on this module,
# where ``int``/``bool`` would shadow the builtins).
EXPORTED: dict[str, DType] = {**DTYPES, "half": DTYPES["float16"],
                              "float8_e4m3": DTYPES["float8_e4m3fn"],
                              # TileLang's C-style names; T.float is float32, as in TileLang
                              **{alias: DTYPES[name] for alias, name in (
                                  ("float", "float32"), ("double", "float64"), ("int", "int32"),
                                  ("long", "int64"), ("short", "int16"), ("uint", "uint32"),
                                  ("tfloat32", "float32"))},
                              # narrow types TileLang names besides the ones above
                              **{n: DType(n) for n in _NARROW},
                              # vector types (TileLang's T.float32x2, T.float16x2, ..., x64)
                              **{f"{n}x{k}": DType(f"{n}x{k}") for n in _VECTOR_BASES
                                 for k in (2, 4, 8, 16, 32, 64)},
                              **{f"{alias}x{k}": DType(f"{name}x{k}") for alias, name in (
                                  ("float8_e4m3", "float8_e4m3fn"), ("tfloat32", "float32"))
                                 for k in (2, 4, 8, 16, 32, 64)}}

#: every dtype name ``T.`` exports (TileLang's ``tilelang.language.dtypes._all_dtypes``)
_all_dtypes: list[str] = list(EXPORTED)

#: TileLang's name for the dtype type: ``dtype("float16")`` is ``T.float16``
dtype = DType


def __getattr__(name: str):
    # torch -> dtype name, built on first use so that importing this module needs no torch
    if name == "_TORCH_DTYPE_TO_STR":
        import torch

        table = {v: str(k) for k, v in ((n, getattr(torch, n, None)) for n in _NAMES)
                 if isinstance(v, torch.dtype)}
        globals()[name] = table
        return table
    # ``tilelang.language.dtypes.float16`` (and ``tilelang.dtypes.float16``) is ``T.float16``, as
    # there; looked up here, not put in the module's globals, where ``bool``/``int``/``float``
    # would shadow the builtins this module uses
    if name in EXPORTED:
        return EXPORTED[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["DTYPES", "EXPORTED", "DType", "_all_dtypes", "canonical_dtype", "dtype"]
