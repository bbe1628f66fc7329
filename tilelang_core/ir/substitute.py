"""Variable substitution in any IR node (TVM 0.27's Python API offers none)."""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx


def substitute(node, values: dict):
    """``node`` with every variable that ``values`` names replaced by its value. Keys are the
    variables themselves or their handles (``var.__chandle__()``): a variable is matched by
    identity, never by name. A Python int value becomes a constant of the variable's dtype (a
    layout's index of a unit dimension can be a plain 0)."""
    if not values:
        return node
    keyed = {}
    for key, value in values.items():
        if isinstance(key, int):
            keyed[key] = value
        else:
            is_int = isinstance(value, int) and not isinstance(value, bool)
            keyed[key.__chandle__()] = tirx.const(value, str(key.ty)) if is_int else value
    return tvm_ffi.structural_map(node, [(tvm.ir.Var, lambda v: keyed.get(v.__chandle__(), v))])


def substitute_nested(node, values: dict, depth: int = 8):
    """``substitute`` until nothing changes (at most ``depth`` rounds): values that name other
    substituted variables (``count = min(per_split, tiles - first)``) are followed through."""
    for _ in range(depth):
        out = substitute(node, values)
        if out.same_as(node):
            break
        node = out
    return node


__all__ = ["substitute", "substitute_nested"]
