"""Bf16BindsToRegisters: a bound bfloat16 value (``v = A[i]`` of a bfloat16 tensor) kept in a
one-element bfloat16 register instead of a Bind.

TVM 0.27's bfloat16 legalization for LLVM computes in float32 and rewrites a bound value, not the
bound variable, so the LLVM codegen stops at ``Check failed: StructuralEqual(value->ty,
var->ty)`` for any kernel that binds a bfloat16 value (and a float32 bind read back through a
cast to bfloat16 is stored as the integer of its bits). Buffers are what that legalization
handles: ``v = e`` becomes ``v_reg[0] = e`` where the Bind stood (the declaration scopes over the
same statements), each use reads ``v_reg[0]``; the value is computed once, where it was bound.

The same goes for a bound value of another dtype that converts a bfloat16 element
(``g = T.cast(gate[i, j], "float32")`` in a T.Parallel body, as TileLang's SwiGLU kernels write):
the legalization rewrites that conversion to read the buffer's 16-bit storage before the storage is
declared ("Load/Store of buffer gate occurred before its declaration"); through a register of the
bound dtype it is a store, which it handles.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx


def _converts_bf16_element(value) -> bool:
    """Whether ``value`` converts an expression reading a bfloat16 buffer to another dtype."""
    found = []

    def on_cast(cast):
        loads = []
        tvm_ffi.structural_walk(cast.value, [(tvm.ir.TensorLoad, loads.append)])
        if str(cast.ty) != "bfloat16" and any(str(ld.source.ty.dtype) == "bfloat16" for ld in loads):
            found.append(cast)

    tvm_ffi.structural_walk(value, [(tirx.Cast, on_cast)])
    return bool(found)


def bf16_binds_to_registers(func: tirx.PrimFunc) -> tirx.PrimFunc:
    registers: dict[int, tirx.Var] = {}

    def collect(bind):
        dtype = str(getattr(bind.var.ty, "dtype", ""))  # handles (T.make_tensor) have none
        if dtype == "bfloat16" or (dtype and _converts_bf16_element(bind.value)):
            registers[bind.var.__chandle__()] = tirx.decl_buffer([1], dtype, name=str(bind.var.name),
                                                                 scope="local")

    tvm_ffi.structural_walk(func.body, [(tirx.Bind, collect)])
    if not registers:
        return func

    def register_of(stmt):
        return registers.get(stmt.var.__chandle__()) if isinstance(stmt, tirx.Bind) else None

    def as_register(stmt):
        reg = register_of(stmt)
        return [stmt] if reg is None else [tirx.AllocBuffer(reg), tirx.BufferStore(reg, stmt.value, [0])]

    def splice(seq):
        return tirx.SeqStmt([s for stmt in seq.seq for s in as_register(stmt)])

    def lone(stmt):  # a Bind that is a whole branch or loop body: nothing after it reads it
        reg = register_of(stmt)
        return stmt if reg is None else tirx.Evaluate(tirx.const(0, "int32"))

    # sequences first (a Bind's declaration stays in its sequence), then uses
    body = tvm_ffi.structural_map(func.body, [(tirx.SeqStmt, splice)])
    body = tvm_ffi.structural_map(body, [(tirx.Bind, lone)])

    def use(var):
        reg = registers.get(var.__chandle__())
        return var if reg is None else tirx.BufferLoad(reg, [0])

    return func.with_body(tvm_ffi.structural_map(body, [(tvm.ir.Var, use)]))


__all__ = ["bf16_binds_to_registers"]
