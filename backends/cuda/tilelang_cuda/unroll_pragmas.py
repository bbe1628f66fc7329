"""``T.unroll(..., unroll_factor=N)`` as ``#pragma unroll N`` before the loop.

The frontend keeps such a loop sequential with the annotation ``pragma_unroll_factor`` (TileLang's);
TVM's CUDA printer knows only ``#pragma unroll`` (full) and ``#pragma unroll 1``. At codegen a marker
call ``tl_unroll_pragma(N)`` goes right before the loop, and the printed source has it replaced by
the pragma on the line before the loop's ``for`` (statements TVM prints between the two, such as
hoisted index computations, stay before the pragma). A marker whose loop TVM did not print as a
loop (unrolled away) is dropped: the hint changes no value.
"""

from __future__ import annotations

import re

import tvm
import tvm_ffi
from tvm import tirx

from tilelang_core.language.loops import UNROLL_FACTOR

from .transform.prim_funcs import map_prim_funcs

MARK = "tl_unroll_pragma"
_MARK_LINE = re.compile(r"^([ \t]*)" + MARK + r"\((\d+)\);[ \t]*\n", re.M)


def mark_unroll_factors(mod: tvm.IRModule) -> tvm.IRModule:
    """Each loop annotated with an unroll factor, preceded by its marker call."""
    def on_for(loop):
        factor = loop.annotations.get(UNROLL_FACTOR) if loop.annotations else None
        if factor is None:
            return loop
        rest = {k: v for k, v in loop.annotations.items() if k != UNROLL_FACTOR}
        plain = tirx.For(loop.loop_var, loop.min, loop.extent, loop.kind, loop.body, loop.thread_binding, rest)
        mark = tirx.Evaluate(tirx.call_extern("void", MARK, tirx.const(int(factor), "int32")))
        return tirx.SeqStmt([mark, plain])

    return map_prim_funcs(mod, lambda func: func.with_body(tvm_ffi.structural_map(func.body, [(tirx.For, on_for)])))


def with_unroll_pragmas(source: str) -> str:
    """``source`` with each marker replaced by ``#pragma unroll N`` on the line before the next
    ``for`` at the marker's indentation (or removed, where none follows in its block)."""
    while (mark := _MARK_LINE.search(source)) is not None:
        indent, factor = mark.group(1), mark.group(2)
        rest = source[mark.end():]
        loop = re.search(r"^" + re.escape(indent) + r"for \(", rest, re.M)
        closes = re.search(r"^" + re.escape(indent[:-2] if len(indent) >= 2 else "") + r"}", rest, re.M)
        if loop is not None and (closes is None or loop.start() < closes.start()):
            at = mark.end() + loop.start()
            source = source[:mark.start()] + source[mark.end():at] + f"{indent}#pragma unroll {factor}\n" + source[at:]
        else:
            source = source[:mark.start()] + rest
    return source
