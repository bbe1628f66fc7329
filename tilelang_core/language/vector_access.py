"""Explicit 32/64/128/256-bit accesses: TileLang's ``T.ldg*``/``T.stg*`` (global memory),
``T.lds*``/``T.sts*`` (shared memory) and ``T.__ldg`` (a load through CUDA's read-only cache).

``T.ldg128(X[i:i + 4])`` reads the 16 bytes that start at ``X[i]`` and returns their bits as
``uint32x4`` (``uint32`` for 32 bits, ``uint32x2`` for 64, ``uint32x8`` for 256), whatever the
element type; ``T.stg128(Y[i:i + 4], v)`` writes such bits. The source is an element (``X[i]``:
the bytes from there on), a slice of exactly that many bytes, or a buffer (its start). They
become one vector load or store of the buffer's elements with a bit cast (``*(uint4*)&X[i]`` on
CUDA), so every backend, the cpu one included, has them, and the compiler sees what they read and
write. With ``pred=``, a false predicate loads zeros / stores nothing.

Refused with a clear message: a buffer of another memory (``T.ldg*`` on shared memory, ...), an
access whose start cannot be proved aligned to its size (the GPU would fault), a slice of another
size, a stored value that is not a 32-bit-lane integer of the right width (``T.reinterpret`` a
float first, as TileLang's ``uint`` helpers need).

Example::

    bits = T.ldg128(X[pid * 4:pid * 4 + 4])            # uint32x4
    T.sts128(S[tx * 4:tx * 4 + 4], bits)
    y = T.reinterpret(T.ldg32(X[i], pred=i < n), T.float32)
"""

from __future__ import annotations

import tvm
from tvm import tirx
from tvm.script.ir_builder import tirx as B

from ..errors import FrontendError
from ..ir import intrinsics as I
from .kernel import current_kernel

_GLOBAL = ("global",)
_SHARED = ("shared", "shared.dyn")


def _where(buffer, indices) -> str:
    return f"{buffer.name}[{', '.join(str(i) for i in indices)}]"


def slice_lanes(region) -> int | None:
    """How many elements ``region`` holds as one vector: a slice of the last dimension (every other
    extent 1), its extent a constant; None for any other region."""
    extents = [r.extent for r in region.region]
    size = 1
    for e in extents:
        size = size * e
    size = tvm.sym.Analyzer().simplify(size)
    if any(not (isinstance(e, tirx.IntImm) and e.value == 1) for e in extents[:-1]) or \
            not isinstance(size, tirx.IntImm):
        return None
    return int(size)


def start_of(target):
    """(buffer, indices of the first element) of a buffer, a region of one or an element; None for
    anything else (each caller words its own refusal)."""
    if isinstance(target, tvm.ir.TensorRegion):
        return target.source, [r.min for r in target.region]
    if isinstance(target, tvm.ir.TensorLoad):
        return target.source, list(target.indices)
    if tirx.is_buffer_var(target):
        return target, [tirx.const(0, "int32") for _ in target.ty.shape]
    return None


def vector_indices(indices: list, lanes: int) -> list:
    """``indices`` of a vector access's first element, the last one widened to ``lanes``."""
    return indices[:-1] + [tirx.Ramp(indices[-1], 1, lanes)] if lanes > 1 else list(indices)


def _access(target, nbytes: int, name: str, scopes, memory: str):
    """(buffer, indices with a Ramp on the last dimension, lanes, element dtype)."""
    start = start_of(target)
    if start is None:
        raise TypeError(f"T.{name} expects Buffer, BufferRegion, or BufferLoad. Got {type(target)}: {target}")
    buffer, indices = start
    extents = [r.extent for r in target.region] if isinstance(target, tvm.ir.TensorRegion) else None
    scope = str(buffer.ty.storage_scope)
    if scope not in scopes:
        raise FrontendError(f"T.{name} accesses {memory} memory, but '{buffer.name}' is in {scope} "
                            f"memory; use T.{'lds' if memory == 'global' else 'ldg'}* / plain indexing for it")
    dtype = str(buffer.ty.dtype)
    bits = tvm.runtime.DataType(dtype).bits
    if bits < 8 or (nbytes * 8) % bits:
        raise FrontendError(f"T.{name} moves {nbytes} bytes, which is not a whole number of {dtype} elements")
    lanes = nbytes * 8 // bits
    if extents is not None:
        if slice_lanes(target) != lanes:
            raise FrontendError(f"T.{name} moves {nbytes} bytes ({lanes} x {dtype}), but the slice of "
                                f"'{buffer.name}' is {extents}: give one element or a slice of {lanes} "
                                f"along the last dimension")
    _check_aligned(buffer, indices, lanes, nbytes, name, shared=scope in _SHARED)
    return buffer, vector_indices(indices, lanes), lanes, dtype


def _check_aligned(buffer, indices, lanes: int, nbytes: int, name: str, shared: bool) -> None:
    """Refuse a first element whose offset is provably not a multiple of ``lanes`` (a vector
    access at an unaligned address faults on the GPU); in shared memory the run must also stay in
    one row (the SIMT kit's swizzles permute 16-byte pieces of a row). Offsets this cannot decide
    (names bound earlier in the kernel) are checked again by the GPU backends, which know them."""
    if lanes == 1:
        return
    terms = [I.flat_offset(buffer, indices)]
    if shared:
        terms += [indices[-1], buffer.ty.shape[-1]]
    analyzer = tvm.sym.Analyzer()
    for term in terms:
        found = analyzer.modular_set(analyzer.simplify(term))
        coeff, base = int(found.coeff), int(found.base)
        if (coeff % lanes == 0 and base % lanes) or (coeff == 0 and base % lanes):
            raise FrontendError(f"T.{name} of {_where(buffer, indices)} is not {nbytes}-byte aligned (the element "
                                f"offset must be a multiple of {lanes}{' and stay in one row' if shared else ''}); "
                                f"the GPU faults on an unaligned vector access")


def _bits_type(nbytes: int) -> str:
    words = nbytes // 4
    return "uint32" if words == 1 else f"uint32x{words}"


def _zero(nbytes: int):
    words = nbytes // 4
    if words == 1:
        return tirx.const(0, "uint32")
    if words == 8:  # TVM prints uint32x8 as ulonglong4; a uint64x4 zero keeps its constructor right
        return tirx.reinterpret("uint32x8", tirx.Broadcast(tirx.const(0, "uint64"), 4))
    return tirx.Broadcast(tirx.const(0, "uint32"), words)


def _pred(pred, name: str):
    if isinstance(pred, bool):
        pred = tirx.const(pred, "bool")
    dtype = str(getattr(pred, "ty", ""))
    if dtype == "bool":
        return pred
    if dtype.startswith(("int", "uint")):
        return tirx.NE(pred, tirx.const(0, dtype))
    raise TypeError(f"T.{name}: pred must be a boolean condition, got {pred!r}")


def _load(name: str, nbytes: int, scopes, memory: str):
    def load(src, pred=None):
        buffer, indices, lanes, dtype = _access(src, nbytes, name, scopes, memory)
        value = tirx.BufferLoad(buffer, indices)
        bits = tirx.reinterpret(_bits_type(nbytes), value)
        if pred is None:
            return bits
        return tirx.if_then_else(_pred(pred, name), bits, _zero(nbytes))  # lazy: no read when false

    load.__name__ = name
    load.__doc__ = (f"The {nbytes * 8} bits at ``src`` ({memory} memory) as {_bits_type(nbytes)}"
                    + ("; zeros where ``pred`` is false." if memory == "global" else "."))
    return load


def _store(name: str, nbytes: int, scopes, memory: str):
    def store(dst, value, pred=None):
        current_kernel(f"T.{name}")
        buffer, indices, lanes, dtype = _access(dst, nbytes, name, scopes, memory)
        if isinstance(value, int) and not isinstance(value, bool) and nbytes == 4:
            value = tirx.const(value & 0xFFFFFFFF, "uint32")
        vtype = str(getattr(value, "ty", ""))
        dt = tvm.runtime.DataType(vtype) if vtype and vtype != "handle" else None
        if dt is None or dt.type_code not in (tvm.runtime.DataTypeCode.INT, tvm.runtime.DataTypeCode.UINT) \
                or dt.bits != 32 or dt.lanes * 4 != nbytes:
            raise TypeError(f"T.{name} stores the bits of a {_bits_type(nbytes)} value, got "
                            f"{vtype or type(value).__name__}; use T.reinterpret(x, T.{_bits_type(nbytes)}) "
                            f"for other types")
        stored = tirx.reinterpret(dtype if lanes == 1 else f"{dtype}x{lanes}", value)
        if pred is None:
            B.buffer_store(buffer, stored, indices)
            return None
        with B.If(_pred(pred, name)):
            with B.Then():
                B.buffer_store(buffer, stored, indices)
        return None

    store.__name__ = name
    store.__doc__ = (f"Write the {nbytes * 8} bits of a {_bits_type(nbytes)} value at ``dst`` ({memory} "
                     f"memory)" + ("; nothing where ``pred`` is false." if memory == "global" else "."))
    return store


ldg32 = _load("ldg32", 4, _GLOBAL, "global")
ldg64 = _load("ldg64", 8, _GLOBAL, "global")
ldg128 = _load("ldg128", 16, _GLOBAL, "global")
ldg256 = _load("ldg256", 32, _GLOBAL, "global")
stg32 = _store("stg32", 4, _GLOBAL, "global")
stg64 = _store("stg64", 8, _GLOBAL, "global")
stg128 = _store("stg128", 16, _GLOBAL, "global")
stg256 = _store("stg256", 32, _GLOBAL, "global")
_lds = {n: _load(f"lds{n * 8}", n, _SHARED, "shared") for n in (4, 8, 16)}
_sts = {n: _store(f"sts{n * 8}", n, _SHARED, "shared") for n in (4, 8, 16)}


def lds32(src):
    """The 32 bits at ``src`` (shared memory) as uint32."""
    return _lds[4](src)


def lds64(src):
    """The 64 bits at ``src`` (shared memory) as uint32x2."""
    return _lds[8](src)


def lds128(src):
    """The 128 bits at ``src`` (shared memory) as uint32x4."""
    return _lds[16](src)


def sts32(dst, value):
    """Write a uint32 value's bits at ``dst`` (shared memory)."""
    return _sts[4](dst, value)


def sts64(dst, value):
    """Write a uint32x2 value's bits at ``dst`` (shared memory)."""
    return _sts[8](dst, value)


def sts128(dst, value):
    """Write a uint32x4 value's bits at ``dst`` (shared memory)."""
    return _sts[16](dst, value)


def ldg(load_or_buf, index=None):
    """``T.__ldg(x[i])``: the element ``x[i]`` of a global buffer, read through CUDA's read-only
    data cache (``__ldg``); a plain load elsewhere, and on CUDA too where the kernel writes ``x``
    (the non-coherent cache could return a stale value). ``T.__ldg(x, i)`` is the same."""
    if tirx.is_buffer_var(load_or_buf):
        if index is None:
            raise ValueError("T.__ldg(Buffer, index) requires an index when passing a Buffer.")
        indices = list(index) if isinstance(index, (list, tuple)) else [index]
        if len(indices) != len(load_or_buf.ty.shape):
            raise ValueError(f"T.__ldg: '{load_or_buf.name}' has {len(load_or_buf.ty.shape)} dimensions, "
                             f"got {len(indices)} indices")
        load_or_buf = tirx.BufferLoad(load_or_buf, [tirx.convert(i) for i in indices])
    if not isinstance(load_or_buf, tvm.ir.TensorLoad):
        raise TypeError("T.__ldg expects a BufferLoad or a Buffer.")
    scope = str(load_or_buf.source.ty.storage_scope)
    if scope != "global":
        raise FrontendError(f"T.__ldg reads global memory through the read-only cache; "
                            f"'{load_or_buf.source.name}' is in {scope} memory: index it directly")
    if "x" in str(load_or_buf.ty):
        raise TypeError(f"T.__ldg loads one element, got a {load_or_buf.ty} vector")
    return I.call("ldg", str(load_or_buf.ty), load_or_buf)


__all__ = ["ldg", "ldg128", "ldg256", "ldg32", "ldg64", "lds128", "lds32", "lds64", "stg128", "stg256",
           "stg32", "stg64", "sts128", "sts32", "sts64"]
