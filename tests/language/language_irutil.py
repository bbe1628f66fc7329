"""Small IR inspection helpers for the language tests."""

from __future__ import annotations

import tvm
import tvm_ffi

from tilelang_core.ir import TileOp, is_tile_op
from tilelang_core.ir import region as R


def _collect(func, node_type):
    found = []
    tvm_ffi.structural_walk(func.body, [(node_type, found.append)], order="pre")
    return found


def tile_ops(func) -> list[TileOp]:
    return [TileOp.from_stmt(s) for s in _collect(func, tvm.tirx.TilePrimitiveCall)
            if is_tile_op(s)]


def op_names(func) -> list[str]:
    return [str(s.op.name) for s in _collect(func, tvm.tirx.TilePrimitiveCall)]


def loops(func) -> list:
    return _collect(func, tvm.tirx.For)


def launches(func) -> dict[str, int | object]:
    """thread tag -> extent of every launch_thread in the kernel."""
    out = {}
    for attr in _collect(func, tvm.tirx.AttrStmt):
        if attr.attr_key == "thread_extent":
            ext = attr.value
            out[str(attr.node.thread_tag)] = int(ext.value) if isinstance(
                ext, tvm.tirx.IntImm) else ext
    return out


def attrs(func, key: str) -> list:
    return [a for a in _collect(func, tvm.tirx.AttrStmt) if a.attr_key == key]


def allocs(func) -> dict[str, tuple]:
    """buffer name -> (shape, dtype, scope) of every allocation."""
    out = {}
    for a in _collect(func, tvm.tirx.AllocBuffer):
        buf = a.buffer
        out[str(buf.name)] = ([int(d) for d in buf.ty.shape], str(buf.ty.dtype),
                              str(buf.ty.storage_scope))
    return out


def ext(region) -> list:
    """Constant extents of a region (symbolic ones as strings)."""
    return [R.as_int(e) if R.as_int(e) is not None else str(e) for e in R.extents_of(region)]


def mins(region) -> list[str]:
    return [str(m) for m in R.mins_of(region)]


def loop_kind(loop) -> str:
    return {0: "serial", 1: "parallel", 2: "vectorized", 3: "unrolled"}.get(int(loop.kind),
                                                                           str(loop.kind))
