"""Refuse 4- and 6-bit float values the kernel still computes with after lowering.

Sub-byte tiles are stored as bytes and converted element by element (transform/packed_subbyte.py),
and constants of those types are folded where they are bound, but an expression whose own type is
``float4_e2m1fn`` or ``float6_*`` (a variable, a cast to it) would reach TVM's LLVM codegen, which
has no such type: it crashed the process. Refused here with the kernel's name instead.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from tilelang_core.errors import LoweringError


def _is_subbyte_float(dtype: str) -> bool:
    return dtype.startswith(("float4_", "float6_")) and tvm.DataType(dtype).bits < 8


def refuse_subbyte_float_scalars(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """``func`` unchanged, or a LoweringError naming the first such value."""
    found = []

    def check(node):
        ty = getattr(node, "ty", None)
        if not found and ty is not None and tvm.ir.is_prim_expr(node) and _is_subbyte_float(str(ty)):
            found.append(node)

    tvm_ffi.structural_walk(func.body, [(tvm.ir.Expr, check)])
    if found:
        name = func.attrs.get("global_symbol", "kernel") if func.attrs else "kernel"
        raise LoweringError(f"kernel '{name}': the cpu backend cannot compute with {found[0].ty} values "
                            f"({found[0]}); compute in float32 and convert where the value is stored")
    return func
