"""TMA boxes and tensor maps: which tile copies the tensor memory accelerator can carry, and the
host-side encoding of their tensor maps (used by TMA loads, warp_specialize.py, and TMA stores,
tma_store.py).

A box is one global tensor's tile: two of its dimensions (the innermost and one other) span the
tile, every other one is a single index. It moves in strips of 128 bytes (``atom`` columns) with
the 128-byte swizzle, or, for a tile whose rows are 64 bytes, in one strip with the 64-byte
swizzle; either way the shared side is ``wgmma_shared_layout`` of the tile.

A 1-D tile (a run of the innermost dimension: FlashAttention backward's per-row statistics
``LSE[b, h, q0:q0 + 64]``, float32) is a linear box: one load, no swizzle, the shared side row-major
with its base and every pipeline stage 128-byte aligned. TMA zero-fills its elements past the
tensor's end, as for the 2-D boxes.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from tilelang_core.ir import TileOp

from .wgmma import atom_cols, element_bits, tile_swizzle

#: element type -> the tensor map's (TMA moves bytes: fp8 and int8 travel as uint8; packed int4
#: weights are uint8 tensors)
TMA_DTYPES = {"float16": "float16", "bfloat16": "bfloat16", "float8_e4m3": "uint8", "float8_e4m3fn": "uint8",
              "float8_e5m2": "uint8", "uint8": "uint8", "int8": "uint8"}
#: the tensor map's element type for every box (float32: the TMA reduce-adds of tma_reduce.py)
DESCRIPTOR_DTYPES = {**TMA_DTYPES, "float32": "float32"}
#: element types a linear (1-D, unswizzled) box loads: no wgmma reads it, so float32 too
LINEAR_DTYPES = DESCRIPTOR_DTYPES
MAX_BOX = 256
#: a linear box's bytes and its shared tile's alignment (every stage of its ring starts aligned)
LINEAR_ALIGN = 128
#: swizzle width (bytes) -> CUtensorMapSwizzle (CU_TENSOR_MAP_SWIZZLE_NONE / _64B / _128B)
TMA_SWIZZLE = {0: 0, 64: 2, 128: 3}


class NotSpecialized(Exception):
    """Why a kernel keeps the cp.async pipeline (shown in the schedule notes of the source)."""


class TmaBox:
    """A tile of ``region`` (a global TensorRegion) of ``rows x cols``, rows along ``rows_dim``;
    ``rows_dim`` None: a linear box of ``cols`` elements (``rows`` 1). ``op``: the tile op it was
    found in."""

    def __init__(self, region, rows: int, cols: int, rows_dim: int | None, op=None):
        self.op = op
        self.region = region
        self.tensor = region.source
        self.rank = len(self.tensor.ty.shape)
        self.rows_dim = rows_dim
        self.rows, self.cols = rows, cols
        self.elem_bytes = element_bits(str(self.tensor.ty.dtype)) // 8
        if rows_dim is None:  # one unswizzled load
            self.swizzle, self.atom = 0, cols
        else:
            self.swizzle = tile_swizzle(cols, 8 * self.elem_bytes)  # check_tile has accepted the width
            self.atom = atom_cols(8 * self.elem_bytes, self.swizzle)
        # box dims innermost first: atom columns, then the rows dim, 1 for every other dim
        box = []
        for d in reversed(range(self.rank)):
            box.append(self.atom if d == self.rank - 1 else rows if d == rows_dim else 1)
        self.box = tuple(box)
        self.bytes = rows * cols * self.elem_bytes

    @property
    def linear(self) -> bool:
        return self.rows_dim is None

    def strip_index(self, strip: int) -> list:
        """The shared tile's index where strip ``strip`` lands."""
        col = tirx.const(strip * self.atom, "int32")
        return [col] if self.linear else [tirx.const(0, "int32"), col]

    def strip_coords(self, mins, strip: int) -> list:
        """The box coordinates (innermost first, int32) of 128-byte strip ``strip`` of the tile
        whose region starts at ``mins``."""
        coords = [mins[d] + (strip * self.atom if d == self.rank - 1 else 0) for d in reversed(range(self.rank))]
        return [tirx.Cast("int32", c) if str(c.ty) != "int32" else c for c in coords]


def check_tile(name: str, shape, dtype: str, verb: str, linear: bool = False) -> tuple[int, int]:
    """(rows, cols) of a shared/register tile a box can carry; NotSpecialized(why) otherwise.
    ``linear``: a 1-D tile is one too, (1, cols)."""
    if linear and len(shape) == 1 and isinstance(shape[0], tirx.IntImm):
        cols = int(shape[0])
        if cols > MAX_BOX or (cols * element_bits(dtype) // 8) % LINEAR_ALIGN:
            raise NotSpecialized(f"copy {verb} {name} ({cols}): a 1-D TMA box needs a multiple of "
                                 f"{LINEAR_ALIGN} bytes, at most {MAX_BOX} elements")
        return 1, cols
    if len(shape) != 2 or not all(isinstance(s, tirx.IntImm) for s in shape):
        raise NotSpecialized(f"copy {verb} {name}: not a 2-D tile of static shape")
    rows, cols = int(shape[0]), int(shape[1])
    bits = element_bits(dtype)
    if tile_swizzle(cols, bits) is None or rows % 8 or rows > MAX_BOX:
        raise NotSpecialized(f"copy {verb} {name} ({rows}x{cols}): the swizzled TMA boxes need columns in "
                             f"multiples of {atom_cols(bits)} (or exactly {atom_cols(bits, 64)}), rows in "
                             f"multiples of 8, at most {MAX_BOX}")
    return rows, cols


def global_box(region, rows: int, cols: int, tile_name: str, verb: str, op=None) -> TmaBox:
    """The TmaBox of ``region`` (global) for a ``rows x cols`` tile; NotSpecialized(why) when TMA
    cannot address it (``verb``: "from"/"to", for the message)."""
    tensor = region.source
    rank = len(tensor.ty.shape)
    if rank > 5 or tensor.ty.strides:
        raise NotSpecialized(f"copy {verb} {tensor.name}: rank {rank} or strided (TMA: rank <= 5, compact)")
    tile = [d for d, r in enumerate(region.region) if not (isinstance(r.extent, tirx.IntImm) and int(r.extent) == 1)]
    linear = rows == 1 and len(tile) == 1  # (check_tile gave a 1-D tile rows 1)
    if linear:
        tile = [None] + tile
    if len(tile) != 2 or tile[1] != rank - 1:
        raise NotSpecialized(f"copy {verb} {tensor.name}: the tile must span the innermost dimension"
                             + ("" if rows == 1 else " and one other"))
    # One thread computes the box coordinates: they may read global memory (indices of a
    # block-sparse layout) but not registers or shared memory other threads own.
    loads = []
    for r in region.region:
        tvm_ffi.structural_walk(r.min, [(tvm.ir.TensorLoad, loads.append)])
    if any(str(load.source.ty.storage_scope) not in ("global", "") for load in loads):
        raise NotSpecialized(f"copy {verb} {tensor.name}: its coordinates read shared memory or registers")
    ext = [tirx.const(1, "int32") if d is None else region.region[d].extent for d in tile]
    if not all(isinstance(e, tirx.IntImm) for e in ext) or (int(ext[0]), int(ext[1])) != (rows, cols):
        raise NotSpecialized(f"copy {verb} {tensor.name}: a region of another shape than {tile_name}")
    # TMA needs 16-byte global strides: static shapes are checked here, dynamic ones by the driver
    bits = element_bits(str(tensor.ty.dtype))
    stride = 1
    for d in reversed(range(1, rank)):
        stride = stride * tensor.ty.shape[d]
        if isinstance(stride, tirx.IntImm) and (int(stride) * bits // 8) % 16:
            raise NotSpecialized(f"copy {verb} {tensor.name}: a row stride of {int(stride) * bits // 8} bytes "
                                 f"(TMA: multiples of 16)")
    return TmaBox(region, rows, cols, tile[0], op)


def load_box(stmt) -> TmaBox:
    """The TmaBox of a TMA-loadable copy global -> shared; NotSpecialized(why) otherwise."""
    op = TileOp.from_stmt(stmt)
    src, dst = op.src.source, op.dst.source
    dst_shape = list(dst.ty.shape)
    linear = len(dst_shape) == 1
    if str(src.ty.dtype) not in (LINEAR_DTYPES if linear else TMA_DTYPES) or str(src.ty.dtype) != str(dst.ty.dtype):
        raise NotSpecialized(f"copy into {dst.name}: {src.ty.dtype} -> {dst.ty.dtype} (TMA here: 16- and 8-bit types, "
                             f"float32 into 1-D tiles, no conversion)")
    rows, cols = check_tile(str(dst.name), dst_shape, str(src.ty.dtype), "into", linear=linear)
    if any(int(r.extent) != int(s) for r, s in zip(op.dst.region, dst_shape) if isinstance(r.extent, tirx.IntImm)):
        raise NotSpecialized(f"copy into part of {dst.name}")
    return global_box(op.src, rows, cols, str(dst.name), "from", op)


def tensor_maps(boxes) -> tuple[dict, list]:
    """({(tensor, box): tensor map variable}, host statements encoding them before the launch):
    one map per distinct (global tensor, box), swizzled like the box's shared tile."""
    maps, host = {}, []
    for box in boxes:
        key = (box.tensor, box.box)
        if key in maps:
            continue
        tm = _tensormap_var(f"{box.tensor.name}_tmap{len(maps)}")
        maps[key] = tm
        shape = list(box.tensor.ty.shape)
        dims = [shape[d] for d in reversed(range(box.rank))]
        strides, acc = [], tirx.const(box.elem_bytes, "int64")
        for d in reversed(range(1, box.rank)):
            acc = acc * tirx.Cast("int64", shape[d]) if not isinstance(shape[d], int) else acc * shape[d]
            strides.append(acc)
        host.append(tirx.Bind(tm, _script().tvm_stack_alloca("tensormap", 1)))
        host.append(tirx.Evaluate(tirx.tensormap_encode_tiled(
            tm, box.tensor.data, *dims, *strides, *box.box, *([1] * box.rank),
            descriptor_dtype=DESCRIPTOR_DTYPES[str(box.tensor.ty.dtype)], rank=box.rank, swizzle=TMA_SWIZZLE[box.swizzle], l2_promotion=2)))
    return maps, host


def _script():
    from tvm.script import tirx as T  # its builders give tensormap values their own type

    return T


def _tensormap_var(name: str):
    return _script().Var(name, ty=_script().handle("tensormap").ty)


__all__ = ["LINEAR_ALIGN", "MAX_BOX", "TMA_DTYPES", "NotSpecialized", "TmaBox", "check_tile", "global_box", "load_box",
           "tensor_maps"]
