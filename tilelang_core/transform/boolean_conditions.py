"""``if count:`` / ``while n:`` on a number: the condition as ``count != 0``.

Python (and TileLang) take any number as a condition; TVM's ``Not`` and the passes that reason
about a branch's negation (the else branch of ``if count:``: safe global access, barriers, the
cpu backend's thread loops) need a boolean, and failed with TVM's "Check failed:
a_ty.MatchesCode(kDLBool)" (DeepSeek's TileKernels: unique group indices). Runs at parse time.
"""

from __future__ import annotations

import tvm_ffi
from tvm import tirx


def _boolean(cond):
    dtype = str(cond.ty)
    if dtype == "bool" or not dtype.startswith(("int", "uint", "float")):
        return cond
    return tirx.NE(cond, tirx.const(0, dtype))


def boolean_conditions(func: tirx.PrimFunc) -> tirx.PrimFunc:
    def on_if(node):
        cond = _boolean(node.condition)
        return node if cond.same_as(node.condition) else tirx.IfThenElse(cond, node.then_case, node.else_case,
                                                                          node.span)

    def on_while(node):
        cond = _boolean(node.condition)
        return node if cond.same_as(node.condition) else tirx.While(cond, node.body, node.span)

    body = tvm_ffi.structural_map(func.body, [(tirx.IfThenElse, on_if), (tirx.While, on_while)])
    return func if body.same_as(func.body) else func.with_body(body)


__all__ = ["boolean_conditions"]
