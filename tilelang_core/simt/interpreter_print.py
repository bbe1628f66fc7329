"""The SIMT interpreter's ``tl_print_*`` (T.print, language/debug_print.py): each active lane prints
its line, in lane order, in the format the CUDA helper's printf uses (``print_line``)."""

from __future__ import annotations

import builtins

import numpy as np

from tilelang_core.language.debug_print import print_line

from .interpreter import NOT_HANDLED


def print_helper(interp, name: str, args, mask):
    """None after printing, or NOT_HANDLED for other helpers."""
    if not name.startswith("tl_print_"):
        return NOT_HANDLED
    active = interp.read_mask & np.broadcast_to(mask, (interp.lanes,))
    msg = str(args[0].value)
    per_lane = [np.broadcast_to(interp.expr(a), (interp.lanes,)) for a in args[1:7]]
    if len(args) > 7:
        dtype, buf = str(args[7].value), str(args[9].value)
        value, index = (np.broadcast_to(interp.expr(a), (interp.lanes,)) for a in (args[8], args[10]))
    for lane in np.nonzero(active)[0]:
        where = [w[lane] for w in per_lane]
        line = print_line(msg, where, dtype, value[lane], buf, index[lane]) if len(args) > 7 else print_line(msg, where)
        builtins.print(line, flush=True)
    return None
