"""Loops with a step (``for i in T.serial(0, n, 2)``) become unit-step loops right after parsing.

TVM 0.27's ``For`` carries the step, but a pass that rebuilds a loop from (var, min, extent, kind,
body) drops it, and then runs every index instead of every other one, silently (found on every
backend: ``s[i] += 1`` over ``T.serial(0, 8, 2)`` touched all 8 elements). Rewriting the loop as
``for k in range(ceildiv(extent, step)): i = min + k * step`` once, here, leaves no step for any
later pass to lose.

The trip count is Python's ``len(range(start, stop, step))``: ``ceil((stop - start) / step)``, and
none when that is negative, for either sign of the step (``range(10, 0, -1)`` runs 10 times, from
10 down to 1; it ran 12 once, writing past the tensor's end).
"""

from __future__ import annotations

import tvm_ffi
from tvm import tirx


def _is_unit(step) -> bool:
    return step is None or (isinstance(step, tirx.IntImm) and int(step.value) == 1)


def is_zero_step(step) -> bool:
    """A step known at compile time to be 0 (Python's range refuses it; so do the loops here)."""
    return step is not None and not isinstance(step, tirx.Var) and getattr(step, "value", step) == 0


def trip_count(span, step):
    """``len(range(start, start + span, step))`` (module docstring); a step of 0 runs nothing
    (the parser refuses a constant 0)."""
    zero = tirx.const(0, span.ty.dtype)

    def up(s):  # iterations of a positive step s over span
        return tirx.max(zero, tirx.floordiv(span + s - 1, s))

    def down(s):  # of a negative step -s
        return tirx.max(zero, tirx.floordiv(zero - span + s - 1, s))

    if isinstance(step, tirx.IntImm):
        value = int(step.value)
        return up(step) if value > 0 else down(tirx.const(-value, step.ty.dtype)) if value < 0 else zero
    return tirx.Select(step > 0, up(step), tirx.Select(step < 0, down(zero - step), zero))


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
        return tirx.For(k, tirx.const(0, var.ty.dtype), trip_count(loop.extent, loop.step), loop.kind, body,
                        loop.thread_binding, loop.annotations)

    body = tvm_ffi.structural_map(func.body, [(tirx.For, on_for)])
    return func.with_body(body) if changed else func
