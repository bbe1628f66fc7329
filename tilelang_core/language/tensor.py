"""Kernel parameter types: ``T.Tensor(shape, dtype)`` and symbolic sizes (``T.dynamic``).

Example::

    m = T.dynamic("m")

    @T.prim_func
    def add(A: T.Tensor((m, 128), T.float16), B: T.Tensor[(m, 128), "float16"]): ...
"""

from __future__ import annotations

import contextlib
import contextvars

import tvm
from tvm.script.ir_builder import tirx as B

from ..errors import FrontendError
from .dtypes import canonical_dtype
from .pointers import storage_dtype


def _dims(shape, what: str) -> list:
    dims = list(shape) if isinstance(shape, (list, tuple, tvm.ir.Array)) else [shape]
    out = []
    for d in dims:
        if isinstance(d, tvm.tirx.IntImm):
            d = int(d.value)
        if isinstance(d, bool) or not isinstance(d, (int, tvm.ir.Expr)):
            raise FrontendError(f"{what}: shape entries must be ints or T.dynamic sizes, "
                                f"got {d!r}")
        if isinstance(d, int) and d < 0:
            raise FrontendError(f"{what}: negative dimension {d}")
        out.append(d)
    return out


class TensorType:
    """The type of a global-memory tensor parameter; ``T.Tensor`` is its constructor.

    Calling it (as the parser does for an annotation) yields the buffer of the parameter.
    """

    __slots__ = ("shape", "dtype", "strides", "scope")

    def __init__(self, shape, dtype="float32", strides=None, scope: str = "global"):
        self.shape = _dims(shape, "T.Tensor")
        self.dtype = storage_dtype(dtype, "T.Tensor")  # T.ptr: a pointer table of int64
        self.strides = None if strides is None else _dims(strides, "T.Tensor strides")
        if self.strides is not None and len(self.strides) != len(self.shape):
            raise FrontendError(f"T.Tensor: {len(self.shape)} dimensions but {len(self.strides)} "
                                f"strides ({self.strides})")
        self.scope = scope

    def __call__(self):
        return B.buffer(self.shape, self.dtype, strides=self.strides, scope=self.scope)

    def __repr__(self) -> str:
        if self.strides is not None:
            return f"T.StridedTensor({tuple(self.shape)}, {tuple(self.strides)}, {self.dtype!r})"
        return f"T.Tensor({tuple(self.shape)}, {self.dtype!r})"


class _TensorConstructor:
    """``T.Tensor(shape, dtype)`` and ``T.Tensor[shape, dtype]``."""

    def __call__(self, shape, dtype="float32", strides=None, scope: str = "global") -> TensorType:
        return TensorType(shape, dtype, strides, scope)

    def __getitem__(self, key) -> TensorType:
        if not isinstance(key, tuple) or len(key) != 2:
            raise FrontendError("write T.Tensor[shape, dtype], e.g. T.Tensor[(M, K), 'float16']")
        return TensorType(key[0], key[1])

    def __repr__(self) -> str:
        return "T.Tensor"


Tensor = _TensorConstructor()


class _StridedTensorConstructor:
    """``T.StridedTensor(shape, strides, dtype)`` and ``T.StridedTensor[shape, strides, dtype]``:
    a tensor parameter with explicit strides in elements (ints or ``T.dynamic`` sizes, bound from
    the argument's strides at the call), e.g. a column slice of a wider tensor::

        def k(A: T.StridedTensor((M, N), (ld, 1), T.float32)): ...
        kernel(x[:, :N])               # x of shape (M, ld): strides (ld, 1)
    """

    def __call__(self, shape, strides, dtype="float32", scope: str = "global") -> TensorType:
        return _strided(shape, strides, dtype, scope)

    def __getitem__(self, key) -> TensorType:
        if not isinstance(key, tuple) or len(key) != 3:
            raise FrontendError("write T.StridedTensor[shape, strides, dtype], e.g. "
                                "T.StridedTensor[(M, N), (ld, 1), 'float32']")
        return _strided(*key)

    def __repr__(self) -> str:
        return "T.StridedTensor"


def _strided(shape, strides, dtype="float32", scope: str = "global") -> TensorType:
    if strides is None:
        raise FrontendError("T.StridedTensor needs the strides; use T.Tensor for a compact tensor")
    return TensorType(shape, dtype, strides, scope)


StridedTensor = _StridedTensorConstructor()
Buffer = Tensor  # TileLang accepts T.Buffer for parameters too


class _ScopedBufferAnnotation:
    """Annotation of a ``T.macro`` parameter that receives an on-chip buffer (TileLang's
    ``T.SharedBuffer``, ``T.FragmentBuffer``, ``T.LocalBuffer``), written ``T.LocalBuffer((8,),
    T.float32)`` or ``T.LocalBuffer[(8,), T.float32]``. Macro parameters take whatever buffer the
    call passes; the annotation documents the intent."""

    def __init__(self, name: str, scope: str):
        self._name, self._scope = name, scope

    def __call__(self, shape, dtype="float32") -> TensorType:
        return TensorType(shape, dtype, scope=self._scope)

    def __getitem__(self, key) -> TensorType:
        if not isinstance(key, tuple) or len(key) != 2:
            raise FrontendError(f"write T.{self._name}[shape, dtype], e.g. T.{self._name}[(8,), T.float32]")
        return self(*key)

    def __repr__(self) -> str:
        return f"T.{self._name}"


SharedBuffer = _ScopedBufferAnnotation("SharedBuffer", "shared.dyn")
FragmentBuffer = _ScopedBufferAnnotation("FragmentBuffer", "local.fragment")
LocalBuffer = _ScopedBufferAnnotation("LocalBuffer", "local")


# While an eager program is specialized, its header runs more than once (to type the tensors,
# then inside the parser): one name must give one variable, or the kernel's sizes come apart.
_dynamic_memo: contextvars.ContextVar[dict | None] = contextvars.ContextVar("tl_dynamic", default=None)


@contextlib.contextmanager
def one_variable_per_name():
    """Within the block, ``T.dynamic(name)`` returns the same variable for the same name."""
    token = _dynamic_memo.set({})
    try:
        yield
    finally:
        _dynamic_memo.reset(token)


def dynamic(name: str, dtype: str = "int32"):
    """A size known only at call time, usable in ``T.Tensor`` shapes and kernel expressions.

    Several at once, as TileLang allows: ``batch, seq = T.dynamic("batch, seq")``.
    """
    if isinstance(name, str) and "," in name:
        return tuple(dynamic(part.strip(), dtype) for part in name.split(",") if part.strip())
    if not isinstance(name, str) or not name.isidentifier():
        raise FrontendError(f"T.dynamic takes a variable name, got {name!r}")
    dtype = canonical_dtype(dtype, "T.dynamic")
    memo = _dynamic_memo.get()
    if memo is None:
        return tvm.tirx.Var(name, dtype)
    var = memo.setdefault(name, tvm.tirx.Var(name, dtype))
    if str(var.ty) != dtype:
        raise FrontendError(f"T.dynamic({name!r}) is declared as {var.ty} and as {dtype}")
    return var


symbolic = dynamic
