"""The codegen-stage rewrites' common walk over a module's PrimFuncs."""

from __future__ import annotations

import tvm
from tvm import tirx


def map_prim_funcs(mod: tvm.IRModule, rewrite) -> tvm.IRModule:
    """``mod`` with each PrimFunc replaced by ``rewrite(func)``; other functions as they are."""
    out = tvm.IRModule({})
    for gvar, func in mod.functions.items():
        out[gvar] = rewrite(func) if isinstance(func, tirx.PrimFunc) else func
    return out
