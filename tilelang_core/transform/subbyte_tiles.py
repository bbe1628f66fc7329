"""Tiles of 4-bit elements (``T.alloc_shared`` / ``T.alloc_fragment`` / ``T.alloc_local`` of
``T.float4_e2m1fn`` or ``T.int4``), one element per byte.

TileLang packs such a tile two elements to a byte, as a 4-bit tensor is packed in memory
(packed_subbyte.py). A kernel only sees a tile through its elements (stores, reads converted with
T.cast, T.copy, T.fill), so here each element gets a byte of its own holding its 4-bit code in the
low nibble: the tile becomes an ``int8`` tile of the same shape, and every layout, copy and
pipelining rule for byte tiles applies unchanged. What it costs: twice TileLang's shared memory and
registers for the tile. What it buys: no two threads ever share a byte of a tile, so stores into a
tile from ``T.Parallel`` need no read-modify-write (TileLang's act_quant stores a ``T.clamp`` of
floats into an fp4 fragment that way).

- an element store takes a code: ``T.cast(v, T.float4_e2m1fn)`` (or TileLang's implicit
  conversion of a float stored into the tile) encodes ``v``; another 4-bit element copies its code;
- an element read converted with ``T.cast`` decodes the code (packed_subbyte.py's rules);
- ``T.copy`` between two 4-bit tiles of one dtype copies the bytes (the int8 tiles' own copy);
- ``T.copy`` between a 4-bit tile and anything else becomes an element-wise ``T.Parallel`` nest
  (:func:`lower_subbyte_tile_ops`), converting as a copy does; into a packed 4-bit tensor each
  iteration writes one whole byte (two elements), so the region's last extent must be even and its
  start provably even (else two threads would share a byte; refused);
- ``T.fill`` / ``T.clear`` store the encoded value;
- ``T.reduce_*`` of a 4-bit tile into a wider one reduces a tile of the destination's dtype that
  an element-wise nest fills with the decoded elements (TileLang reduces in that dtype too);
- any other use (``T.gemm``, atomics, pointers, a bare element used as a value) is refused,
  naming the tile.
"""

from __future__ import annotations

from dataclasses import dataclass

import tvm
import tvm_ffi
from tvm import tirx

SUBBYTE = ("float4_e2m1fn", "int4")


@dataclass(frozen=True)
class Subbyte:
    """A 4-bit buffer of the kernel as written (``logical``) and what holds it (``phys``): a packed
    byte tensor (``packed``) or a tile of one int8 per element."""

    phys: object
    logical: str
    packed: bool


def code_tiles(body) -> dict:
    """handle of each 4-bit tile -> its Subbyte (a new int8 tile of the same shape and scope)."""
    found = {}

    def add(buffer):
        if str(buffer.ty.dtype) in SUBBYTE and buffer.__chandle__() not in found:
            t = buffer.ty
            phys = tirx.decl_buffer(list(t.shape), "int8", name=buffer.name, scope=str(t.storage_scope))
            found[buffer.__chandle__()] = Subbyte(phys, str(t.dtype), False)

    tvm_ffi.structural_walk(body, [(tirx.AllocBuffer, lambda a: add(a.buffer)),
                                   (tirx.DeclBuffer, lambda d: add(d.buffer))])
    return found


def packed_byte(entry: Subbyte, indices):
    """(byte load, bit shift) of logical element ``indices`` of a packed 4-bit tensor: the byte
    holding it and where its nibble sits (the even element in the low one)."""
    indices = list(indices)
    k = indices[-1]
    return tirx.BufferLoad(entry.phys, indices[:-1] + [tirx.floordiv(k, 2)]), tirx.floormod(k, 2) * 4


def code_of(load, entry: Subbyte):
    """The 4-bit code (int32, 0..15) of element ``load`` of a 4-bit buffer."""
    if entry.packed:
        byte, shift = packed_byte(entry, load.indices)
        return tirx.bitwise_and(tirx.shift_right(tirx.Cast("int32", byte), shift), 0xF)
    return tirx.Cast("int32", tirx.BufferLoad(entry.phys, list(load.indices)))


def store_code(entry: Subbyte, indices, code):
    """Element ``indices`` of a 4-bit tile set to ``code`` (a packed tensor's element store, which
    keeps the other nibble of its byte, is packed_subbyte.py's)."""
    return tirx.BufferStore(entry.phys, tirx.Cast("int8", code), list(indices))


def lower_subbyte_tile_ops(body, entries: dict, encode, refuse):
    """``body`` with the tile ops touching a 4-bit buffer (``entries``: handle -> Subbyte) in the
    forms of the module docstring: T.copy as element-wise nests (copies between two 4-bit tiles of
    one dtype kept), T.fill as a fill of the encoded value; any other op refused (``raise
    refuse(message)``). ``encode(value, logical)`` gives the code of a value."""
    from ..ir import Copy, Fill, Reduce, TileOp, is_tile_op
    from ..ir import region as R
    from ..ir.elementwise import cast_to, elementwise
    from .element_copies import tile_ops_in_parallel

    in_parallel = tile_ops_in_parallel(body)

    def entry(region):
        return entries.get(region.source.__chandle__())

    def on_call(call):
        if not is_tile_op(call):
            return call
        op = TileOp.from_stmt(call)
        regions = [r for r in list(op.reads) + list(op.writes) if entry(r) is not None]
        if not regions:
            return call
        name = regions[0].source.name
        if isinstance(op, Fill) and not entry(op.dst).packed:
            value = op.value.value if isinstance(op.value, tirx.Cast) else op.value
            if str(value.ty) in SUBBYTE:  # a constant made in the tile's dtype: its value
                value = tirx.const(float(value.value), "float32")
            code = encode(value, entry(op.dst).logical)
            dst = R.make_region(entry(op.dst).phys, R.mins_of(op.dst), R.extents_of(op.dst))
            return Fill(dst, tirx.Cast("int8", code)).to_stmt()
        if isinstance(op, Reduce) and entry(op.src) is not None and not entry(op.src).packed \
                and entry(op.dst) is None:
            return _decoded_reduce(op, refuse)
        if not isinstance(op, Copy):
            raise refuse(f"T.{op.name} on 4-bit {'tensor' if entry(regions[0]).packed else 'tile'} '{name}': "
                         f"only element stores, T.cast reads, T.copy and T.fill take 4-bit tiles here; "
                         f"convert it to a wider dtype first (T.copy into a float16 tile)")
        src, dst = entry(op.src), entry(op.dst)
        if src is not None and dst is not None and not src.packed and not dst.packed and src.logical == dst.logical:
            return call  # code bytes to code bytes
        if call_in_parallel(call):
            raise refuse(f"T.copy of 4-bit '{name}' inside a T.Parallel loop; write the element store "
                         f"itself (dst[i] = T.cast(src[i], ...))")
        if dst is not None and dst.packed:
            nest = _byte_pairs(op, src, dst, encode, refuse)
        else:
            dtype = str(op.dst.source.ty.dtype)
            nest = elementwise(op.src, op.dst, lambda v, idx: tirx.BufferStore(op.dst.source, cast_to(v, dtype), idx))
        if nest is None:
            raise refuse(f"T.copy of 4-bit '{name}' over a region whose extents are known only at run time; "
                         f"give the region constant extents")
        return nest

    def call_in_parallel(call):
        return any(call.same_as(c) for c in in_parallel)

    return tvm_ffi.structural_map(body, [(tirx.TilePrimitiveCall, on_call)])


def _decoded_reduce(op, refuse):
    """``T.reduce_*(tile4, dst)`` as the reduction of a tile of ``dst``'s dtype that an
    element-wise nest fills with the decoded elements (TileLang reduces in the destination's
    dtype; every float4_e2m1fn and int4 value is exact in any wider type). TileKernels'
    per-token cast of fp4 input takes the absmax of its fp4 tile into a float16 tile so."""
    from ..ir import Reduce
    from ..ir import region as R
    from ..ir.elementwise import cast_to, elementwise

    src = op.src
    extents = [R.as_int(e) for e in R.extents_of(src)]
    if None in extents:
        raise refuse(f"T.reduce_{op.kind} of 4-bit tile '{src.source.name}' over a region whose extents are "
                     f"known only at run time; give the region constant extents")
    dtype = str(op.dst.source.ty.dtype)
    decoded = tirx.decl_buffer(extents, dtype, name=f"{src.source.name}_{dtype}",
                               scope=str(src.source.ty.storage_scope))
    whole = R.make_region(decoded, [0] * len(extents), extents)
    fill = elementwise(src, whole, lambda v, idx: tirx.BufferStore(decoded, cast_to(v, dtype), idx))
    reduce = Reduce(whole, op.dst, kind=op.kind, dim=op.dim, clear=op.clear, nan_propagate=op.nan_propagate)
    return tirx.SeqStmt([tirx.AllocBuffer(decoded), fill, reduce.to_stmt()])


def _byte_pairs(op, src, dst: Subbyte, encode, refuse):
    """``T.copy(src, packed)`` as a T.Parallel nest writing one byte (two elements) an iteration."""
    from ..ir import region as R
    from ..ir.elementwise import parallel_loop

    name = op.dst.source.name
    d_mins, d_ext = list(R.mins_of(op.dst)), list(R.extents_of(op.dst))
    last = R.as_int(d_ext[-1])
    analyzer = tvm.sym.Analyzer()
    if last is None or last % 2 or not analyzer.can_prove(tirx.floormod(d_mins[-1], 2) == 0):
        raise refuse(f"T.copy into packed 4-bit tensor '{name}' over [{R.fmt_region(op.dst)}]: a copy writes "
                     f"whole bytes (two elements each), so the last dimension's extent must be an even constant "
                     f"and its start provably even")
    extents = [R.as_int(e) for e in R.squeeze(R.extents_of(op.src))]
    if any(e is None for e in extents) or not extents or extents[-1] != last:
        raise refuse(f"T.copy into packed 4-bit tensor '{name}': the source's last non-unit extent must be the "
                     f"destination's last extent ({last}), known at compile time")
    loop_vars = [tirx.Var(f"e{d}", "int32") for d in range(len(extents))]
    pair = loop_vars[-1]

    def src_index(second):
        it = iter(loop_vars)
        out = []
        for m, e in zip(R.mins_of(op.src), R.extents_of(op.src)):
            if R.as_int(e) == 1:
                out.append(m)
                continue
            v = next(it)
            out.append(m + 2 * v + second if v.same_as(pair) else m + v)
        return out

    def code(second):
        load = tirx.BufferLoad(op.src.source, src_index(second))
        return code_of(load, src) if src is not None else encode(load, dst.logical)

    outer = iter(loop_vars[:-1])
    d_index = [m if R.as_int(e) == 1 else m + next(outer) for m, e in zip(d_mins[:-1], d_ext[:-1])]
    byte = tirx.bitwise_or(code(0), tirx.shift_left(code(1), 4))
    body = tirx.BufferStore(dst.phys, tirx.Cast("int8", byte), d_index + [tirx.floordiv(d_mins[-1], 2) + pair])
    for v, e in reversed(list(zip(loop_vars, extents[:-1] + [last // 2]))):
        body = parallel_loop(v, e, body)
    return body


__all__ = ["Subbyte", "code_of", "code_tiles", "lower_subbyte_tile_ops", "packed_byte", "store_code"]
