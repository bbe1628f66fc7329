"""``T.annotate_safe_value({A: v})``: what a T.Parallel read past the edge of global tensor ``A``
gives instead of 0 (TileLang's safe memory access, with its pad value).

The frontend leaves a ``tl.safe_value`` attribute (node: a Map buffer -> value) around the rest
of the kernel; :func:`take_safe_values` strips it and returns the map, which the backends' guard
passes read (the SIMT kit's LowerParallel, the cpu backend's GuardParallelGlobals). A ``T.copy``
that reads such a tensor is refused at parse time (:func:`check_safe_value_copies`): its rules pad
with 0 (cp.async zero-fills), and TileLang pads with the value there too.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

SAFE_VALUE = "tl.safe_value"


def take_safe_values(body):
    """(body without the attributes, [(buffer, value)])."""
    found = []

    def on_attr(attr):
        if attr.attr_key != SAFE_VALUE:
            return attr
        found.extend((buffer, value) for buffer, value in attr.node.items())
        return attr.body

    return tvm_ffi.structural_map(body, [(tirx.AttrStmt, on_attr)]), found


def padding_for(load, safe_values):
    """What an out-of-bounds ``load`` reads: its buffer's safe value, else 0."""
    for buffer, value in safe_values:
        if buffer.same_as(load.source):
            return value if str(value.ty) == str(load.ty) else tirx.Cast(str(load.ty), value)
    return tirx.const(0, str(load.ty))


def check_safe_value_copies(func, refuse) -> None:
    """A T.copy from a tensor with a nonzero safe value: ``raise refuse(message)``."""
    from ..ir import Copy, TileOp, is_tile_op

    annotated = []

    def on_attr(attr):
        if attr.attr_key == SAFE_VALUE:
            annotated.extend(b for b, v in attr.node.items()
                             if not (isinstance(v, (tirx.IntImm, tirx.FloatImm)) and float(v.value) == 0))

    tvm_ffi.structural_walk(func.body, [(tirx.AttrStmt, on_attr)])
    if not annotated:
        return
    bad = []

    def on_call(call):
        if is_tile_op(call):
            op = TileOp.from_stmt(call)
            if isinstance(op, Copy) and any(op.src.source.same_as(b) for b in annotated):
                bad.append(op.src.source)

    tvm_ffi.structural_walk(func.body, [(tirx.TilePrimitiveCall, on_call)])
    if bad:
        raise refuse(f"T.copy reads '{bad[0].name}', which T.annotate_safe_value pads with a nonzero "
                     f"value; copies pad with 0 here. Write the load as a T.Parallel loop "
                     f"(dst[i, j] = {bad[0].name}[...]), which pads with the safe value")


__all__ = ["SAFE_VALUE", "check_safe_value_copies", "padding_for", "take_safe_values"]
