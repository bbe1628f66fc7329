"""Tensors of 4-bit elements (``T.float4_e2m1fn``, ``T.int4``) as their bytes, TileLang's way.

A 4-bit tensor lives in memory two elements to a byte, the even element in the low nibble (torch's
``float4_e2m1fn_x2``, NVIDIA's ``__nv_fp4x2_e2m1``). TileLang binds such a parameter to a tensor of
bytes (``uint8``, ``int8`` or ``float4_e2m1fn_x2``) whose last dimension is half the logical one
and whose other strides are half the logical strides: ``x: T.Tensor[(m, 16), T.float4_e2m1fn]``
takes a ``(m, 8)`` uint8 tensor.

No backend here has 4-bit arithmetic, so after parsing each such parameter becomes an ``int8``
parameter of the byte shape, and its element accesses become byte arithmetic:

- the last logical dimension ``e`` is ``2 * b`` for the byte size ``b``: a constant (even), a
  size variable ``n`` (replaced by ``2 * n_bytes`` everywhere), or an expression whose half
  simplifies (``n * 2`` -> ``n``); other forms are refused. Strides the same way; the last must be 1.
- ``T.cast(x[i, k], T.float32)`` (or any dtype) decodes nibble ``k % 2`` of byte ``k // 2``:
  e2m1 (sign, 2 exponent bits, 1 mantissa bit: 0, 0.5, 1, 1.5, 2, 3, 4, 6) or two's complement.
- ``y[i, k] = x[i, k]`` copies the nibble; ``y[i, k] = T.cast(v, T.float4_e2m1fn)`` encodes ``v``
  (round to nearest, ties to even, saturating at +-6, as CUDA's ``cvt.rn.satfinite``; int4 keeps
  the low 4 bits, as C's conversion does). The store rewrites its byte keeping the other nibble.
  Two threads storing into one byte would race, so a store whose element index depends on the
  thread or a ``T.Parallel`` variable is refused (a ``T.copy`` from a 4-bit tile writes whole
  bytes instead); so is any other use of a 4-bit value.
- 4-bit tiles (shared, fragment, local) hold one element per byte: subbyte_tiles.py.

The parameter keeps its logical dtype in the attribute ``tl.packed_param.<index>``: the JIT binds
byte tensors of any of the three dtypes to it, and allocates ``T.empty`` outputs as bytes
(``float4_e2m1fn_x2`` where torch has it).
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from ..ir.substitute import substitute
from .buffer_views import view_source
from .subbyte_tiles import SUBBYTE, Subbyte, code_of, code_tiles, lower_subbyte_tile_ops, packed_byte, store_code

#: PrimFunc attribute prefix: ``tl.packed_param.<i>`` = the logical dtype of packed parameter i
PACKED_PARAM = "tl.packed_param."
#: the dtypes of a byte tensor a packed parameter binds to
BYTE_DTYPES = ("int8", "uint8", "float4_e2m1fn_x2")


def packed_param_dtypes(func) -> dict[int, str]:
    """Index -> logical dtype of ``func``'s packed 4-bit parameters."""
    attrs = getattr(func, "attrs", None)
    if attrs is None:
        return {}
    return {int(str(k)[len(PACKED_PARAM):]): str(v) for k, v in attrs.items() if str(k).startswith(PACKED_PARAM)}


def _is_subbyte(dtype) -> bool:
    return str(dtype) in SUBBYTE


def pack_subbyte_params(func: tirx.PrimFunc, refuse) -> tirx.PrimFunc:
    """``func`` with its 4-bit tensor parameters as byte tensors (module docstring) and its 4-bit
    tiles as tiles of one byte per element (subbyte_tiles.py); ``refuse(message)`` makes the error
    for what cannot be done."""
    params = list(func.params)
    packed = [i for i, p in enumerate(params) if tirx.is_buffer_var(p) and _is_subbyte(p.ty.dtype)]
    tiles = code_tiles(func.body)
    if not packed and not tiles:
        return func
    analyzer = tvm.sym.Analyzer()
    vmap: dict = {}  # size variable -> 2 * its byte variable
    byte_dims: dict = {}
    for i in packed:
        p = params[i]
        shape, strides = list(p.ty.shape), list(p.ty.strides or [])
        if strides and not (isinstance(strides[-1], tirx.IntImm) and int(strides[-1].value) == 1):
            raise refuse(f"packed {p.ty.dtype} tensor '{p.name}' must have last stride 1 (two elements share a "
                         f"byte), got strides {strides}")
        shape[-1] = _half(shape[-1], f"the last dimension of '{p.name}'", vmap, analyzer, refuse)
        strides = [_half(s, f"stride {k} of '{p.name}'", vmap, analyzer, refuse) for k, s in enumerate(strides[:-1])] \
            + strides[-1:]
        byte_dims[i] = (shape, strides)

    def sub(e):
        return substitute(e, vmap)

    replaced, out = {}, []
    for i, p in enumerate(params):
        if not tirx.is_buffer_var(p):
            out.append(p)
            continue
        t = p.ty
        if i in byte_dims:
            shape, strides = byte_dims[i]
            dtype = "int8"
        else:
            shape, strides, dtype = list(t.shape), list(t.strides or []), str(t.dtype)
        shape, strides = [sub(d) for d in shape], [sub(s) for s in strides]
        if i not in byte_dims and not vmap:
            out.append(p)
            continue
        new = tirx.decl_buffer(shape, dtype, name=p.name, strides=strides or None, elem_offset=t.elem_offset,
                               scope=str(t.storage_scope), data_alignment=t.data_alignment,
                               offset_factor=t.offset_factor)
        replaced[p.__chandle__()] = new
        out.append(new)
    entries = dict(tiles)
    entries.update({params[i].__chandle__(): Subbyte(replaced[params[i].__chandle__()], str(params[i].ty.dtype), True)
                    for i in packed})
    body = sub(func.body)
    body = lower_subbyte_tile_ops(body, entries, _encode, refuse)
    body = _rewrite_accesses(body, entries, refuse)
    phys = {**{k: e.phys for k, e in tiles.items()}, **replaced}
    body = substitute(body, phys)
    result = tirx.PrimFunc(out, body, func.ret_type, func.attrs)
    for i in packed:
        result = result.with_attr(f"{PACKED_PARAM}{i}", str(params[i].ty.dtype))
    return result


def _half(e, what: str, vmap: dict, analyzer, refuse):
    """The byte count of logical extent ``e`` (module docstring)."""
    if isinstance(e, tirx.IntImm):
        if int(e.value) % 2:
            raise refuse(f"{what} is {int(e.value)}, odd: a packed 4-bit tensor holds two elements per byte")
        return tirx.const(int(e.value) // 2, e.ty.dtype)
    if isinstance(e, tirx.Var):
        known = next((v for k, v in vmap.items() if k.same_as(e)), None)
        if known is not None:  # a size halved already (vmap holds 2 * its byte variable)
            return analyzer.simplify(tirx.floordiv(known, 2))
        byte = tirx.Var(f"{e.name}_bytes", e.ty.dtype)
        vmap[e] = 2 * byte
        return byte
    e = substitute(e, vmap)
    if analyzer.can_prove(tirx.floormod(e, 2) == 0):
        return analyzer.simplify(tirx.floordiv(e, 2))
    raise refuse(f"{what} is {e}, which is not provably even: a packed 4-bit tensor holds two elements per "
                 f"byte (write it as 2 * n, or use a size variable)")


# -- element accesses ----------------------------------------------------------------------------
#: twice the e2m1 magnitudes of codes 0..7 (0, 1, 2, 3, 4, 6, 8, 12), a nibble each
_TWICE_E2M1 = 0xC8643210


def _u32(value: int):
    """A uint32 constant (the bit arithmetic of the e2m1 rules)."""
    return tirx.const(value, "uint32")


def _decode(nibble, logical: str, dtype: str):
    """The value of a 4-bit code ``nibble`` (int32, 0..15) as ``dtype``.

    For e2m1, branch-free: twice the magnitude is a nibble of ``_TWICE_E2M1``; set as the low
    mantissa bits of 2^22 (whose last place is 0.5) and 2^22 subtracted, it is the magnitude, and
    the code's sign bit becomes the float's (-0.0 for code 8). (A select per exponent compiled to
    branches and int-to-float conversions, ~85 instructions an element on sm_90a.)"""
    if logical == "int4":
        return tirx.Cast(dtype, (nibble ^ 8) - 8)
    code = tirx.Cast("uint32", nibble)
    shift = tirx.shift_left(tirx.bitwise_and(code, _u32(7)), _u32(2))
    twice = tirx.bitwise_and(tirx.shift_right(_u32(_TWICE_E2M1), shift), _u32(0xF))
    mag = tirx.reinterpret("float32", tirx.bitwise_or(twice, _u32(0x4A800000))) - 4194304.0
    sign = tirx.shift_left(tirx.bitwise_and(code, _u32(8)), _u32(28))
    return tirx.Cast(dtype, tirx.reinterpret("float32", tirx.bitwise_or(tirx.reinterpret("uint32", mag), sign)))


def _encode(value, logical: str):
    """The 4-bit code (int32) of ``value``: e2m1 round-to-nearest-even saturating, or int4's low bits.

    Branch-free integer arithmetic on the float's bits (a chain of seven compares compiled to
    ~45 instructions an element on sm_90a, with branches, and made the fp4 casts compute-bound).
    Below 1.0 the code is 2|x| rounded to the nearest even integer (codes 0, 1, 2 are 0, 0.5, 1),
    which adding 2^23 in float32 does. From 1.0 up, float32 rounded to one mantissa bit (nearest
    even) is exponent and bit of the code, 2 (1.0) to 7 (6.0), saturating there (infinities and
    NaN too). Each rule gives at most the right code where the other holds (the first at most 2
    once clamped, the second at most the right code below 1.0), so their maximum is the code, with
    no select for nvcc to turn into a branch. The sign bit is kept (-0.0 is code 8), except on
    NaN, as CUDA's conversion does."""
    if logical == "int4":
        return tirx.bitwise_and(tirx.Cast("int32", value), 0xF)
    x = tirx.Cast("float32", value)
    bits = tirx.reinterpret("uint32", x)
    mag = tirx.bitwise_and(bits, _u32(0x7FFFFFFF))
    small = tirx.min(tirx.reinterpret("int32", tirx.abs(x) * 2.0 + 8388608.0) - 0x4B000000, 2)
    lsb = tirx.bitwise_and(tirx.shift_right(mag, _u32(22)), _u32(1))  # (ties go to the even code)
    rounded = tirx.shift_right(mag + _u32(0x1FFFFF) + lsb, _u32(22))
    code = tirx.max(small, tirx.min(tirx.Cast("int32", rounded) - 252, 7))
    sign = tirx.Cast("int32", tirx.bitwise_and(tirx.shift_right(bits, _u32(28)), _u32(8)))
    return tirx.bitwise_or(code, tirx.Select(mag > _u32(0x7F800000), 0, sign))


def _rewrite_accesses(body, entries: dict, refuse):
    """Loads and stores of 4-bit buffers (``entries``: handle -> Subbyte) as code arithmetic on
    what holds them (module docstring; subbyte_tiles.py for tiles)."""
    parallel_vars, thread_vars = [], []

    def collect(node):
        if isinstance(node, tirx.For) and node.annotations is not None and "tl.parallel" in node.annotations:
            parallel_vars.append(node.loop_var)
        if isinstance(node, tirx.AttrStmt) and node.attr_key == "thread_extent":
            thread_vars.append(node.node.var)

    tvm_ffi.structural_walk(body, [(tirx.For, collect), (tirx.AttrStmt, collect)])
    racing = parallel_vars + thread_vars  # (block indices too: blocks run at once like threads)
    binds = []
    tvm_ffi.structural_walk(body, [(tirx.Bind, binds.append)])
    for bind in binds:  # names bound from them (tx = T.get_thread_binding(), col = bx * 64 + tx)
        if any(uses(bind.value, v) for v in racing):
            racing.append(bind.var)

    def entry(buffer):
        return entries.get(buffer.__chandle__())

    def kind(e: Subbyte) -> str:
        return "tensor" if e.packed else "tile"

    def on_cast(cast):
        load = cast.value
        if isinstance(load, tvm.ir.TensorLoad) and entry(load.source) is not None:
            e = entry(load.source)
            return _decode(code_of(load, e), e.logical, str(cast.ty))
        return cast

    def on_store(store):
        target = entry(store.buffer)
        value = store.value
        if target is None:
            return store
        indices = list(store.indices)
        if target.packed and any(uses(indices[-1], v) for v in racing):
            raise refuse(f"a store into packed {target.logical} tensor '{store.buffer.name}' whose last index depends on "
                         f"the thread, the block or a T.Parallel variable: two of them would write the two halves "
                         f"of one byte at once. Index the last dimension with a serial loop (each thread writing "
                         f"whole bytes), or store into a {target.logical} tile and T.copy the tile to the tensor")
        if isinstance(value, tvm.ir.TensorLoad) and entry(value.source) is not None:
            code = code_of(value, entry(value.source))
        elif isinstance(value, tirx.Cast) and str(value.ty) == target.logical:
            code = _encode(value.value, target.logical)
        else:
            raise refuse(f"a store into {target.logical} {kind(target)} '{store.buffer.name}' takes an element of a "
                         f"{target.logical} buffer or T.cast(value, T.{target.logical}); got {value}")
        if not target.packed:
            return store_code(target, indices, code)
        byte, shift = packed_byte(target, indices)
        keep = tirx.bitwise_and(tirx.Cast("int32", byte), tirx.shift_left(tirx.const(0xF, "int32"), 4 - shift))
        return tirx.BufferStore(target.phys, tirx.Cast("int8", tirx.bitwise_or(keep, tirx.shift_left(code, shift))),
                                list(byte.indices))

    body = tvm_ffi.structural_map(body, [(tirx.BufferStore, on_store)])
    body = tvm_ffi.structural_map(body, [(tirx.Cast, on_cast)])
    left = []
    tvm_ffi.structural_walk(body, [(tvm.ir.TensorLoad, lambda ld: left.append(ld) if entry(ld.source) else None)])
    if left:
        ld = left[0]
        e = entry(ld.source)
        raise refuse(f"a {e.logical} element of {kind(e)} '{ld.source.name}' is used as a value "
                     f"({ld}); convert it where it is read (T.cast({ld.source.name}[...], T.float32)) or store it "
                     f"into another {e.logical} buffer as it is")
    _refuse_other_uses(body, {k: e for k, e in entries.items() if not e.packed}, refuse)
    return body


def _refuse_other_uses(body, tiles: dict, refuse) -> None:
    """A 4-bit tile handed to anything but its element accesses and tile ops (a pointer, an
    intrinsic) would see the byte-per-element tile; refused. A T.reshape of a 4-bit tile (a view
    of the same dtype: a tile of bytes seen with another shape) is one of its own uses."""
    reshapes = set()

    def on_decl(decl):
        source = view_source(decl)
        if source is not None and source.__chandle__() in tiles and decl.buffer.__chandle__() in tiles \
                and tiles[decl.buffer.__chandle__()].logical == tiles[source.__chandle__()].logical:
            reshapes.add(decl.data.__chandle__())

    tvm_ffi.structural_walk(body, [(tirx.DeclBuffer, on_decl)])

    def on_call(call):
        if call.__chandle__() in reshapes:
            return
        for arg in call.args:
            if isinstance(arg, tirx.Var) and arg.__chandle__() in tiles:
                e = tiles[arg.__chandle__()]
                raise refuse(f"4-bit tile '{arg.name}' ({e.logical}) is passed to {call.op}: a 4-bit tile is held "
                             f"one element per byte here (not packed as in memory), so only its elements, T.copy "
                             f"and T.fill may use it")

    tvm_ffi.structural_walk(body, [(tirx.Call, on_call)])


def uses(expr, var) -> bool:
    return any(v.same_as(var) for v in tirx.analysis.undefined_vars(expr))


__all__ = ["BYTE_DTYPES", "PACKED_PARAM", "SUBBYTE", "pack_subbyte_params", "packed_param_dtypes"]
