"""Pointers and tensors made from them: ``T.ptr`` and ``T.make_tensor`` (TileLang's semantics).

Two forms, as in TileLang:

* a pointer parameter made a tensor before the first kernel::

      @T.prim_func
      def main(a_ptr: T.ptr, m: T.int32):
          A = T.make_tensor(a_ptr, (m, 64), T.float16)
          with T.Kernel(...): ...

  The parameter becomes a tensor parameter of that shape and dtype (TileLang's ``match_buffer``):
  the call passes a tensor, checked like any other, or (TileLang's cython convention) an integer
  data pointer, taken on trust as a tensor of the declared shape on the kernel's device.

* a pointer table: ``ptrs: T.Tensor([G], T.ptr)`` is an int64 tensor of addresses (built by the
  caller as ``torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64, device=...)``), and
  ``T.make_tensor(ptrs[g], (N,), T.float16)`` inside a kernel views the memory at one of them.
  Nothing can check such a view at launch: the caller guarantees that each address holds the
  declared shape and dtype on the kernel's device, 16-byte aligned (every torch allocation is),
  since copies may use vector accesses.
"""

from __future__ import annotations

import tvm
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as B
from tvm.tirx import is_buffer_var

from ..errors import FrontendError
from .dtypes import canonical_dtype

#: PrimFunc attribute prefix: ``tl.pointer_param.<i>`` marks parameter ``i`` as declared ``T.ptr``
#: and made a tensor (``make_tensor``): it accepts an integer data pointer besides a tensor
#: (jit/params.py). One key per parameter: TVM refuses to redefine a function attribute.
POINTER_PARAM = "tl.pointer_param."


def pointer_param_indices(func) -> set[int]:
    """Indices of ``func``'s parameters declared ``T.ptr`` and made tensors."""
    attrs = getattr(func, "attrs", None)
    if attrs is None:
        return set()
    return {int(str(k)[len(POINTER_PARAM):]) for k in attrs.keys() if str(k).startswith(POINTER_PARAM)}

# handle parameters made tensors in the kernel being parsed: id -> parameter name (reset with the
# kernel stack at the end of every parse, kernel.reset_kernel_stack)
_MADE: dict[int, str] = {}


def ptr(dtype=None, storage_scope: str = "global"):
    """A pointer: the annotation of a pointer parameter (``a_ptr: T.ptr``), the dtype of a pointer
    table (``T.Tensor([G], T.ptr)``, int64 addresses), or ``T.ptr()``/``T.ptr(T.float16)`` for a
    handle variable."""
    return B.handle(None if dtype is None else canonical_dtype(dtype, "T.ptr"), storage_scope)


def storage_dtype(dtype, what: str) -> str:
    """``dtype`` as a buffer dtype: ``T.ptr`` stands for its int64 storage (TileLang's ABI)."""
    if dtype is ptr:
        return "int64"
    return canonical_dtype(dtype, what)


def _is_handle(value) -> bool:
    return isinstance(value, tvm.ir.Expr) and isinstance(getattr(value, "ty", None), tvm.ir.PointerType)


def make_tensor(pointer, shape, dtype="float32", strides=None):
    """A tensor of ``shape`` and ``dtype`` at ``pointer`` (module docstring): a ``T.ptr``
    parameter (before the first ``T.Kernel``) or a 64-bit address, such as an element of a
    pointer table (anywhere). ``strides`` in elements; compact row-major when None.

    Example::

        A = T.make_tensor(a_ptr, (M, K), T.float16)
        with T.Kernel(G, threads=128) as g:
            X = T.make_tensor(x_ptrs[g], (N,), T.float32)
    """
    from .kernel import _ACTIVE
    from .tensor import _dims

    if not IRBuilder.is_in_scope():
        raise FrontendError("T.make_tensor can only be used inside a T.prim_func kernel")
    dims = _dims(shape, "T.make_tensor")
    dtype = storage_dtype(dtype, "T.make_tensor")
    if strides is not None:
        strides = _dims(strides, "T.make_tensor strides")
        if len(strides) != len(dims):
            raise FrontendError(f"T.make_tensor: {len(dims)} dimensions but {len(strides)} strides")
    if is_buffer_var(pointer):
        raise FrontendError(f"T.make_tensor: '{pointer.name}' is already a tensor; pass a T.ptr "
                            "parameter or a 64-bit address (an element of a T.Tensor(..., T.ptr))")
    if isinstance(pointer, tvm.tirx.Var) and _is_handle(pointer):
        return _parameter_tensor(pointer, dims, dtype, strides, inside_kernel=bool(_ACTIVE))
    if isinstance(pointer, tvm.ir.Expr) and tvm.ir.is_prim_expr(pointer):
        kind = str(pointer.ty)
        if kind not in ("int64", "uint64") and not _is_handle(pointer):
            raise FrontendError(f"T.make_tensor: the address {pointer} is {kind}; addresses are "
                                "64-bit (T.Tensor([...], T.ptr) holds int64)")
        value = pointer if _is_handle(pointer) else tvm.tirx.reinterpret("handle", pointer)
        data = B.Bind(value)
        IRBuilder.name("ptr", data)
        return B.decl_buffer(dims, dtype, data=data, strides=strides, scope="global")
    raise FrontendError(f"T.make_tensor takes a T.ptr parameter or a 64-bit address, got "
                        f"{type(pointer).__name__} {pointer!r}")


def match_buffer(param, shape, dtype="float32", data=None, strides=None, elem_offset=None,
                 scope="global", align=-1, offset_factor=0, buffer_type="default", axis_separators=None):
    """TVMScript's form of a tensor parameter, which TileLang kernels use: a ``T.handle``
    parameter made a tensor of ``shape`` and ``dtype`` before the first kernel::

        @T.prim_func
        def main(A_ptr: T.handle):
            A = T.match_buffer(A_ptr, (16, 16), dtype=T.float32, align=16)

    The call passes a tensor, checked like a ``T.Tensor`` parameter. ``align`` and
    ``offset_factor`` are kept on the buffer; a custom ``data``, ``elem_offset``, ``scope``,
    ``buffer_type`` or ``axis_separators`` is refused.
    """
    from .kernel import _ACTIVE
    from .tensor import _dims

    if not IRBuilder.is_in_scope():
        raise FrontendError("T.match_buffer can only be used inside a T.prim_func kernel")
    unsupported = {"data": data, "elem_offset": elem_offset, "axis_separators": axis_separators}
    given = [k for k, v in unsupported.items() if v is not None]
    given += ["scope"] if scope != "global" else []
    given += ["buffer_type"] if buffer_type != "default" else []
    if given:
        raise FrontendError(f"T.match_buffer: {', '.join(given)} is not supported; a handle parameter "
                            "becomes a compact (or strided) global tensor")
    if is_buffer_var(param) or not (isinstance(param, tvm.tirx.Var) and _is_handle(param)):
        raise FrontendError(f"T.match_buffer takes a T.handle parameter of the kernel, got {param!r}")
    dims = _dims(shape, "T.match_buffer")
    if strides is not None:
        strides = _dims(strides, "T.match_buffer strides")
    return _parameter_tensor(param, dims, canonical_dtype(dtype, "T.match_buffer"), strides,
                             inside_kernel=bool(_ACTIVE), what="T.match_buffer", takes_address=False,
                             align=align, offset_factor=offset_factor)


def _parameter_tensor(param, dims, dtype, strides, inside_kernel: bool, what: str = "T.make_tensor",
                      takes_address: bool = True, align: int = -1, offset_factor: int = 0):
    """``param`` made a tensor parameter. ``takes_address``: the call may also pass an integer
    address (``T.make_tensor`` of a ``T.ptr``); not so for ``T.match_buffer`` of a ``T.handle``."""
    name = str(param.name)
    if inside_kernel:
        raise FrontendError(f"{what} of the pointer parameter '{name}' must come before the "
                            f"first T.Kernel (it makes '{name}' a tensor parameter of the kernel)")
    frames = [f for f in IRBuilder.current().frames if isinstance(f, B.frame.PrimFuncFrame)]
    args = list(frames[-1].args) if frames else []
    index = next((i for i, a in enumerate(args) if a.same_as(param)), None)
    if index is None:
        who = f"'{name}'" if name else "this pointer"
        raise FrontendError(f"{what}: {who} is not a pointer parameter of this kernel (pointer "
                            f"parameters are supported in T.prim_func kernels, not yet in eager @jit "
                            f"signatures; there, annotate the tensor: A: T.Tensor(shape, dtype))")
    key = param.__chandle__()
    if key in _MADE:
        raise FrontendError(f"{what}: the pointer parameter '{name}' is already a tensor; "
                            "make one tensor per pointer parameter")
    try:
        buf = B.match_buffer(param, dims, dtype, strides=strides, align=align,
                             offset_factor=offset_factor)
    except Exception as exc:  # noqa: BLE001 - TVM says "not a parameter" in its own words
        raise FrontendError(f"{what}: '{name}' is not a pointer parameter of this kernel "
                            f"({str(exc).strip().splitlines()[-1]})") from None
    IRBuilder.name(name, buf)
    _MADE[key] = name
    if takes_address:
        B.func_attr({f"{POINTER_PARAM}{index}": name})
    return buf


def reset() -> None:
    """Forget the pointer parameters of the kernel parsed last."""
    _MADE.clear()
