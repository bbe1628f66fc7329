"""TileLang's hand-written warp matrix code: ``T.ptx_ldmatrix`` and ``T.ptx_mma``, NVIDIA's
ldmatrix and mma.sync as a kernel calls them itself (TileLang's ``TensorCoreIntrinEmitter``,
tilelang_core/cuda/intrinsics, is built on them)::

    T.ptx_ldmatrix(False, 4, T.access_ptr(A_s[row, col], "r"), T.access_ptr(A_regs[0], "w"))
    T.ptx_mma(T.float32, "m16n8k16", "row", "col", "fp16", "fp16", "fp32",
              A_regs.data, 0, B_regs.data, 0, C_regs.data, 0, False)

Both are warp-wide: every lane of the warp executes them together, each with its own operands.
``T.ptx_ldmatrix(trans, num, src, dst)``: each lane names one 16-byte row of shared memory (lanes
0-7 the rows of the first 8x8 matrix of 16-bit units, 8-15 the second, ...); ``num`` (1, 2 or 4)
matrices are loaded and each lane receives ``num`` 32-bit registers of them, at ``dst`` (the
thread's ``T.alloc_local`` registers), in the fragment order of the PTX ISA ("Warp-level matrix
load instruction: ldmatrix"), transposed with ``trans`` (16-bit elements only).
``T.ptx_mma(...)``: ``C += A @ B`` of one mma.sync instruction, its operands the thread's registers
at element offsets of ``T.alloc_local`` buffers, in the ISA's fragment order ("Matrix Fragments for
mma.m16n8k16" and kin). The forms are those of ``MMA_FORMS`` below.

In the IR each is the value of a vector store into the registers it writes, reading vector loads
of what it reads (the 16-byte row a lane names; the A, B and C registers), so every pass sees what
they touch: the shared-memory barriers, the software pipeline, the alignment and layout checks of
vector accesses (a row must start 16-byte aligned, and a ``T.annotate_layout`` must keep its 16
bytes side by side, or the kernel is refused). Backends with these instructions lower them to
their helpers (``SimtDialect.warp_matrix``; the cuda backend: ldmatrix and mma.sync); the others
refuse them, naming the target.
"""

from __future__ import annotations

import tvm
from tvm import tirx
from tvm.script.ir_builder import tirx as B

from ..errors import FrontendError
from ..ir import intrinsics as I
from .kernel import current_kernel
from .vector_access import start_of, vector_indices

#: TileLang's operand type names -> element type
_ABBREVIATIONS = {"fp16": "float16", "bf16": "bfloat16", "tf32": "float32", "fp32": "float32",
                  "int8": "int8", "uint8": "uint8", "int32": "int32"}
_NAMES = {dtype: name for name, dtype in _ABBREVIATIONS.items() if name != "tf32"}

#: (shape, A, B, C element types) -> (A, B, C elements per thread): the forms with a helper in a
#: backend (SimtDialect.warp_matrix names them by ``mma_form``)
MMA_FORMS = {
    ("m16n8k16", "float16", "float16", "float32"): (8, 4, 4),
    ("m16n8k16", "float16", "float16", "float16"): (8, 4, 4),  # fp16 accumulate: the 4 elements, 2 registers
    ("m16n8k16", "bfloat16", "bfloat16", "float32"): (8, 4, 4),
    ("m16n8k8", "float32", "float32", "float32"): (4, 2, 4),  # tf32 operands
    ("m16n8k32", "int8", "int8", "int32"): (16, 8, 4),
    ("m16n8k32", "uint8", "uint8", "int32"): (16, 8, 4),
}


def mma_form(shape: str, a: str, b: str, c: str) -> str:
    """The key of one mma.sync form, as SimtDialect.warp_matrix and the IR's call spell it."""
    return f"{shape}.{a}.{b}.{c}"


def abbreviation(dtype: str, operand: bool) -> str:
    """TileLang's name of ``dtype`` in a T.ptx_mma call: float32 operands are ``tf32``."""
    return "tf32" if operand and dtype == "float32" else _NAMES[dtype]


def ldmatrix_name(num: int, trans: bool) -> str:
    """SimtDialect.warp_matrix's key of an ldmatrix of ``num`` matrices."""
    return f"ldmatrix_x{num}" + ("_trans" if trans else "")


def _const(value, what: str, kinds=(int,)):
    if isinstance(value, tirx.IntImm):
        value = bool(value.value) if str(value.ty) == "bool" else int(value.value)
    if not isinstance(value, kinds):
        raise FrontendError(f"{what} must be a compile-time constant, got {value!r}")
    return value


def _element(ptr, what: str, op: str):
    """(buffer, indices) of a pointer operand: ``T.access_ptr(...)``, ``T.address_of(...)``, an
    element, or a buffer (its start)."""
    if isinstance(ptr, tirx.Call) and ptr.op.name == "tirx.address_of" and isinstance(ptr.args[0], tvm.ir.TensorLoad):
        ptr = ptr.args[0]
    start = start_of(ptr)
    if start is None:
        raise FrontendError(f"T.{op}: {what} must be a T.access_ptr of a buffer element (or the element), got {ptr!r}")
    return start


def _registers(buffer, op: str, what: str):
    if str(buffer.ty.storage_scope) != "local":
        raise FrontendError(f"T.{op}: {what} '{buffer.name}' is {buffer.ty.storage_scope} memory; it must be "
                            f"the thread's registers (T.alloc_local)")


def _dtype(buffer) -> str:
    return str(buffer.ty.dtype)


def _bits(buffer) -> int:
    return tvm.runtime.DataType(_dtype(buffer)).bits


def ptx_ldmatrix(trans, num, src_access_ptr, dst_access_ptr):
    """Load ``num`` 8x8 matrices of 16-bit units from shared memory into the warp's registers
    (module docstring), transposed with ``trans``."""
    current_kernel("T.ptx_ldmatrix")
    trans = _const(trans, "T.ptx_ldmatrix trans", (bool, int))
    num = _const(num, "T.ptx_ldmatrix num")
    if num not in (1, 2, 4):
        raise FrontendError(f"T.ptx_ldmatrix loads 1, 2 or 4 matrices (ldmatrix .x1/.x2/.x4), got num={num}")
    src, src_idx = _element(src_access_ptr, "the source", "ptx_ldmatrix")
    dst, dst_idx = _element(dst_access_ptr, "the destination", "ptx_ldmatrix")
    if str(src.ty.storage_scope) not in ("shared", "shared.dyn"):
        raise FrontendError(f"T.ptx_ldmatrix reads shared memory; '{src.name}' is {src.ty.storage_scope}")
    _registers(dst, "ptx_ldmatrix", "the destination")
    bits = _bits(src)
    if _bits(dst) != bits or bits not in (8, 16, 32):
        raise FrontendError(f"T.ptx_ldmatrix moves bits between elements of one size (8, 16 or 32 bits): "
                            f"'{src.name}' is {_dtype(src)}, '{dst.name}' {_dtype(dst)}")
    if trans and bits != 16:
        raise FrontendError(f"T.ptx_ldmatrix with trans=True transposes 16-bit elements; '{src.name}' is "
                            f"{_dtype(src)} (load it without trans, or element by element)")
    row, regs = 128 // bits, num * 32 // bits
    value = I.call("ldmatrix", f"{_dtype(dst)}x{regs}", tirx.const(bool(trans), "bool"), tirx.const(num, "int32"),
                   tirx.BufferLoad(src, vector_indices(src_idx, row)))
    B.buffer_store(dst, value, vector_indices(dst_idx, regs))


def _operand(data, offset, what: str, dtype: str, count: int):
    if isinstance(data, tirx.Call) and data.op.name == "tirx.buffer_data":
        data = data.args[0]
    if not tirx.is_buffer_var(data):
        raise FrontendError(f"T.ptx_mma: {what} must be a T.alloc_local buffer or its .data, got {data!r}")
    _registers(data, "ptx_mma", what)
    if len(data.ty.shape) != 1:
        raise FrontendError(f"T.ptx_mma: {what} '{data.name}' must be a 1-D T.alloc_local buffer (the offset "
                            f"counts its elements); it has shape {list(data.ty.shape)}")
    if _dtype(data) != dtype:
        raise FrontendError(f"T.ptx_mma: {what} '{data.name}' is {_dtype(data)}; this form takes {dtype}")
    return data, vector_indices([tirx.const(offset, "int32") if isinstance(offset, int) else offset], count)


def ptx_mma(dtype, shape, A_layout, B_layout, A_dtype, B_dtype, C_dtype, multiplicand_a, a_index,
            multiplicand_b, b_index, accumulator, c_index, saturate=False, operator=None):
    """One mma.sync of the warp: the thread's C registers += A @ B (module docstring)."""
    current_kernel("T.ptx_mma")
    del dtype  # the accumulator buffer's type is the one that counts
    if (str(A_layout), str(B_layout)) != ("row", "col"):
        raise FrontendError(f"T.ptx_mma takes A 'row' and B 'col' (mma.sync's only layouts for these forms), "
                            f"got {A_layout!r}, {B_layout!r}")
    if _const(saturate, "T.ptx_mma saturate", (bool, int)) or operator is not None:
        raise FrontendError("T.ptx_mma: saturate and operator (the .satfinite and bit-op forms) are not supported")
    names = [_ABBREVIATIONS.get(str(t)) for t in (A_dtype, B_dtype, C_dtype)]
    key = (str(shape), *names)
    if key not in MMA_FORMS:
        forms = ", ".join(f"{s} {a}/{b} -> {c}" for s, a, b, c in MMA_FORMS)
        raise FrontendError(f"T.ptx_mma: no mma.sync form {shape} {A_dtype}/{B_dtype} -> {C_dtype} here; "
                            f"the forms are {forms} (fp8 is not supported)")
    na, nb, nc = MMA_FORMS[key]
    a = _operand(multiplicand_a, a_index, "A", key[1], na)
    b = _operand(multiplicand_b, b_index, "B", key[2], nb)
    c = _operand(accumulator, c_index, "the accumulator", key[3], nc)
    value = I.call("mma_sync", f"{key[3]}x{nc}", tvm.ir.StringImm(mma_form(*key)),
                   tirx.BufferLoad(*a), tirx.BufferLoad(*b), tirx.BufferLoad(*c))
    B.buffer_store(c[0], value, c[1])


__all__ = ["MMA_FORMS", "abbreviation", "ldmatrix_name", "mma_form", "ptx_ldmatrix", "ptx_mma"]
