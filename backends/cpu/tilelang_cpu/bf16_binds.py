"""A name bound to a converted bfloat16 element, made safe for TVM's LLVM pipeline.

``g = T.cast(gate[i, j], "float32")`` inside a loop (a value bound in a T.Parallel body, the
way TileLang kernels write SwiGLU) fails in TVM 0.27's build: its bfloat16 legalization rewrites
the conversion to read the buffer's 16-bit storage, and for a bound value it reads it before the
storage is declared ("Load/Store of buffer gate occurred before its declaration"). Stores are
rewritten correctly, so such a value is stored into a one-element register first and the name
is bound to that register's element: the same value, read once, in the same place.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx


def _reads_converted_bf16(value) -> bool:
    found = []

    def on_cast(cast):
        if str(cast.ty) == "bfloat16":
            return
        loads = []
        tvm_ffi.structural_walk(cast.value, [(tvm.ir.TensorLoad, loads.append)])
        if any(str(ld.source.ty.dtype) == "bfloat16" for ld in loads):
            found.append(cast)

    tvm_ffi.structural_walk(value, [(tirx.Cast, on_cast)])
    return bool(found)


def spill_bf16_binds(mod):
    """``mod`` with every such bound value stored through a register first (module docstring)."""
    def on_bind(bind):
        if str(bind.var.ty) == "bfloat16" or not _reads_converted_bf16(bind.value):
            return bind
        reg = tirx.decl_buffer((1,), str(bind.var.ty), name=f"{bind.var.name}_reg", scope="local")
        return tirx.SeqStmt([tirx.AllocBuffer(reg), tirx.BufferStore(reg, bind.value, [0]),
                             tirx.Bind(bind.var, tirx.BufferLoad(reg, [0]))])

    out = {}
    for gvar, func in mod.functions.items():
        if isinstance(func, tirx.PrimFunc):
            func = func.with_body(tvm_ffi.structural_map(func.body, [(tirx.Bind, on_bind)]))
        out[gvar] = func
    return tvm.IRModule(out, attrs=mod.attrs)


__all__ = ["spill_bf16_binds"]
