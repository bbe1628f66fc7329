"""The SIMT interpreter's ``tl_print_*`` (T.print, language/debug_print.py): each active lane prints
its line, in lane order, in the format the CUDA helper's printf uses (tilelang_cuda/warp_intrinsics.py)."""

from __future__ import annotations

import builtins

import numpy as np

from .interpreter import NOT_HANDLED


def _format(value, kind: str) -> str:
    if kind == "bool":
        return "true" if bool(value) else "false"
    if kind == "float":
        return f"{float(value):.9g}"
    return str(int(value))


def print_helper(interp, name: str, args, mask):
    """None after printing, or NOT_HANDLED for other helpers."""
    if not name.startswith("tl_print_"):
        return NOT_HANDLED
    active = interp.read_mask & np.broadcast_to(mask, (interp.lanes,))
    msg = str(args[0].value)
    where = [np.broadcast_to(interp.expr(a), (interp.lanes,)) for a in args[1:7]]
    if len(args) > 7:
        dtype, buf = str(args[7].value), str(args[9].value)
        value, index = (np.broadcast_to(interp.expr(a), (interp.lanes,)) for a in (args[8], args[10]))
        kind = name[len("tl_print_"):]
    for lane in np.nonzero(active)[0]:
        b, t = (", ".join(str(int(w[lane])) for w in where[i:i + 3]) for i in (0, 3))
        line = f"msg='{msg}' BlockIdx=({b}), ThreadIdx=({t})"
        if len(args) > 7:
            element = f"buffer={buf}, index={int(index[lane])}, " if buf else ""
            line += f": {element}dtype={dtype} value={_format(value[lane], kind)}"
        builtins.print(line, flush=True)
    return None
