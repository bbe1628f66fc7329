"""Helpers on buffer regions (``tvm.ir.TensorRegion``), the operands of every tile op."""

from __future__ import annotations

from collections.abc import Sequence

import tvm
from tvm.ir import Range, TensorLoad, TensorRegion
from tvm.tirx import is_buffer_var

from ..errors import FrontendError

_ANALYZER = None


def analyzer() -> tvm.sym.Analyzer:
    """One shared analyzer: creating one per check would dominate parse time."""
    global _ANALYZER
    if _ANALYZER is None:
        _ANALYZER = tvm.sym.Analyzer()
    return _ANALYZER


def rows_in_vectors(buffer, vec: int, analyzer) -> bool:
    """Can ``vec`` consecutive elements of the last axis move as one vector from any row start
    that is a multiple of ``vec``? Its elements must be adjacent (last stride 1) and every row
    must start ``vec``-aligned and hold whole vectors: the row length a multiple of ``vec``, and
    for a strided buffer each outer stride one too (``T.StridedTensor``; a view such as
    ``A[:, 0, :, 0]`` has last stride 2, and a vector there would move the elements between)."""
    shape = list(buffer.ty.shape)
    strides = list(buffer.ty.strides or [])
    if not analyzer.can_prove(tvm.tirx.floormod(shape[-1], vec) == 0):
        return False
    return not strides or analyzer.can_prove(strides[-1] == 1) and all(
        analyzer.can_prove(tvm.tirx.floormod(s, vec) == 0) for s in strides[:-1])


def is_region(x) -> bool:
    return isinstance(x, TensorRegion) and is_buffer_var(x.source)


def full_region(buffer) -> TensorRegion:
    """The region covering the whole of ``buffer``."""
    return tvm.tirx.BufferRegion(buffer, [Range.from_min_extent(0, s) for s in buffer.ty.shape])


def make_region(buffer, mins: Sequence, extents: Sequence) -> TensorRegion:
    return tvm.tirx.BufferRegion(
        buffer, [Range.from_min_extent(m, e) for m, e in zip(mins, extents, strict=True)])


def to_region(x, what: str = "operand") -> TensorRegion:
    """Buffer -> its full region; region -> itself; element load ``A[i, j]`` -> 1-element region."""
    if is_buffer_var(x):
        return full_region(x)
    if is_region(x):
        return x
    if isinstance(x, TensorLoad) and is_buffer_var(x.source):
        return make_region(x.source, list(x.indices), [1] * len(x.indices))
    raise FrontendError(f"{what} must be a buffer or a buffer region, got {_describe(x)}")


def _describe(x) -> str:
    if isinstance(x, tvm.ir.Expr):
        return f"the expression {x}"
    return f"{type(x).__name__} {x!r}"


def buffer_of(region: TensorRegion):
    return region.source


def name_of(region: TensorRegion) -> str:
    return str(region.source.name) if hasattr(region.source, "name") else str(region.source)


def scope_of(region: TensorRegion) -> str:
    return str(region.source.ty.storage_scope)


def dtype_of(region: TensorRegion) -> str:
    return str(region.source.ty.dtype)


def mins_of(region: TensorRegion) -> list:
    return [r.min for r in region.region]


def extents_of(region: TensorRegion) -> list:
    return [r.extent for r in region.region]


def covers_whole(region: TensorRegion) -> bool:
    """Is ``region`` its whole buffer (every dim from 0 over the buffer's extent)?"""
    return all(as_int(r.min) == 0 and as_int(r.extent) == as_int(s)
               for r, s in zip(region.region, region.source.ty.shape))


def as_int(x) -> int | None:
    """The value of a constant integer expression, else None."""
    if isinstance(x, int):
        return x
    if isinstance(x, tvm.tirx.IntImm):
        return int(x.value)
    return None


def squeeze(extents: Sequence) -> list:
    """Extents without the dimensions that are constantly 1."""
    return [e for e in extents if as_int(e) != 1]


def same_extent(a, b) -> bool:
    """False only when ``a != b`` can be decided; symbolic extents we cannot compare pass."""
    ia, ib = as_int(a), as_int(b)
    if ia is not None and ib is not None:
        return ia == ib
    an = analyzer()
    if an.can_prove_equal(a, b):
        return True
    diff = an.simplify(a - b)
    return as_int(diff) in (None, 0)


def same_extents(a: Sequence, b: Sequence) -> bool:
    return len(a) == len(b) and all(same_extent(x, y) for x, y in zip(a, b, strict=True))


def fmt_extents(extents: Sequence) -> str:
    return "[" + ", ".join(str(e) for e in extents) + "]"


def fmt_region(region: TensorRegion) -> str:
    return (f"{name_of(region)}{fmt_extents(extents_of(region))} "
            f"({scope_of(region)}, {dtype_of(region)})")
