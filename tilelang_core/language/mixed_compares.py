"""Comparisons of two integer (or float) widths in a kernel: ``value != tp_rank`` with ``value``
int64 and ``tp_rank`` an int32 parameter.

TVMScript parses a comparison by building the node (``tirx.NE(a, b)``) itself, which refuses
operands of different dtypes ("mismatched types. int64 vs. int32"), while TileLang's parser takes
them (DeepSeek's TileKernels MoE kernels compare int64 indices with int32 ranks). Where the two
scalar operands' dtypes differ, the comparison goes through TVM's own operators instead, which
cast the narrower side as ``+`` and ``*`` already do; everything else keeps TVMScript's rule.
Installed once, for TVMScript's operator table, when the parser is imported.
"""

from __future__ import annotations

import operator

from tvm import tirx
from tvm.script.parser.core import dispatch, doc

_COMPARES = {doc.Eq: operator.eq, doc.NotEq: operator.ne, doc.Lt: operator.lt, doc.LtE: operator.le,
             doc.Gt: operator.gt, doc.GtE: operator.ge}


def _scalar_dtype(x) -> str | None:
    if isinstance(x, tirx.IterVar):
        x = x.var
    dtype = getattr(getattr(x, "ty", None), "dtype", None)
    return str(dtype) if dtype is not None and int(dtype.lanes) == 1 else None


def _promoting(original, compare):
    def method(a, b):
        da, db = _scalar_dtype(a), _scalar_dtype(b)
        if da is not None and db is not None and da != db:
            result = compare(a.var if isinstance(a, tirx.IterVar) else a,
                             b.var if isinstance(b, tirx.IterVar) else b)
            return result.asobject() if hasattr(result, "asobject") else result  # (== and != are lazy)
        return original(a, b)

    method.__wrapped__ = original
    return method


def install() -> None:
    for operand in (tirx.Expr, tirx.IterVar):
        for index in (0, 1):
            for op, compare in _COMPARES.items():
                original = dispatch.get_op(operand, op, index)
                if original is not None and not hasattr(original, "__wrapped__"):
                    dispatch.register_op(operand, op, index)(_promoting(original, compare))
