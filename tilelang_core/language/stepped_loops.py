"""Loops with a step (``for i in T.serial(0, n, 2)``) become unit-step loops right after parsing.

TVM 0.27's ``For`` carries the step, but a pass that rebuilds a loop from (var, min, extent, kind,
body) drops it, and then runs every index instead of every other one, silently (found on every
backend: ``s[i] += 1`` over ``T.serial(0, 8, 2)`` touched all 8 elements). Rewriting the loop as
``for k in range(ceildiv(extent, step)): i = min + k * step`` once, here, leaves no step for any
later pass to lose.
"""

from __future__ import annotations

import tvm_ffi
from tvm import tirx


def _is_unit(step) -> bool:
    return step is None or (isinstance(step, tirx.IntImm) and int(step.value) == 1)


def unit_step_loops(func: tirx.PrimFunc) -> tirx.PrimFunc:
    changed = []

    def on_for(loop):
        if _is_unit(loop.step):
            return loop
        var = loop.loop_var
        k = tirx.Var(f"{var.name}_k", var.ty.dtype)
        start = loop.min if not isinstance(loop.min, tirx.IntImm) or int(loop.min.value) else None
        index = k * loop.step if start is None else start + k * loop.step
        body = tvm_ffi.structural_map(loop.body, [(tirx.Var, lambda v: index if v.same_as(var) else v)])
        changed.append(loop)
        return tirx.For(k, tirx.const(0, var.ty.dtype), tirx.ceildiv(loop.extent, loop.step), loop.kind, body,
                        loop.thread_binding, loop.annotations)

    body = tvm_ffi.structural_map(func.body, [(tirx.For, on_for)])
    return func.with_body(body) if changed else func
