"""Emit tile ops into the kernel being built, and turn user operands into regions."""

from __future__ import annotations

import tvm
from tvm.ir import TensorLoad
from tvm.script.ir_builder import IRBuilder
from tvm.tirx import is_buffer_var
from tvm.tirx.script.builder import _ffi_api as _builder_ffi

from ..errors import FrontendError
from ..ir import TileOp
from ..ir import region as R
from .kernel import current_kernel


def emit(op: TileOp) -> None:
    """Append ``op`` as a TilePrimitiveCall statement to the innermost open frame."""
    current_kernel(f"T.{op.name}")
    if not IRBuilder.is_in_scope():  # pragma: no cover - current_kernel implies a builder
        raise FrontendError(f"T.{op.name} must be called inside a kernel")
    _builder_ffi.TilePrimitiveCall(op.to_stmt())


def is_element(x) -> bool:
    """``A[i, j]``: a single-element access used as the start of a region."""
    if isinstance(x, tvm.tirx.script.builder.scalar_wrapper):
        return True
    return isinstance(x, TensorLoad) and is_buffer_var(x.source)


def _unwrap(x):
    if isinstance(x, tvm.tirx.script.builder.scalar_wrapper):
        return x.scalar
    return x


def region_from_start(start, other, what: str):
    """The region of ``start``'s buffer beginning at ``start``'s indices, shaped like ``other``.

    ``T.copy(A[by * 128, k * 32], A_s)`` copies a (128, 32) block of A. TileLang's rule: the
    other operand's extents, unit ones included, fill the trailing dimensions in order and the
    leading ones get extent 1, so ``T.copy(X[i, 0], x)`` with ``x`` of shape (64, 1) copies a
    column of X, not a row. When the other operand has more dimensions than ``start``, its
    leading unit extents are dropped (TileLang refuses that case; it has one meaning).
    """
    start = _unwrap(start)
    other_region = R.to_region(other, what)
    extents = list(R.extents_of(other_region))
    rank = len(start.indices)
    while len(extents) > rank and R.as_int(extents[0]) == 1:
        extents.pop(0)
    if len(extents) > rank:
        raise FrontendError(
            f"{what}: {start.source.name} has {rank} dimensions but the other operand "
            f"{R.fmt_region(other_region)} has {len(R.squeeze(extents))} non-unit dimensions; "
            f"index every dimension of {start.source.name} or slice it")
    extents = [1] * (rank - len(extents)) + extents
    return R.make_region(start.source, list(start.indices), extents)


def pair_regions(a, b, what_a: str, what_b: str):
    """Regions for two operands where either may be a start element (``A[i, j]``); two elements
    are one element each (``T.copy(indices[pid], idx[0])``)."""
    if is_element(a) and is_element(b):  # TileLang's rule: one element each
        return tuple(R.make_region(x.source, list(x.indices), [1] * len(x.indices))
                     for x in (_unwrap(a), _unwrap(b)))
    if is_element(a):
        return region_from_start(a, b, what_a), settled(R.to_region(b, what_b))
    if is_element(b):
        return settled(R.to_region(a, what_a)), region_from_start(b, a, what_b)
    return settled(R.to_region(a, what_a)), settled(R.to_region(b, what_b))


def settled(region):
    """``region`` with each extent that the names bound in the kernel body make a constant
    replaced by that constant: ``KV[b, kv_start:kv_end, 0, :]`` with ``kv_start = base + k * 64``
    and ``kv_end = base + (k + 1) * 64`` (TileLang's MLA decode) is 64 rows, which the planner
    must know (a TMA box, a layout). Only pure values are looked through (one reading memory
    that changed in between would not be the same value; transform/bindings.is_pure)."""
    from ..transform.bindings import is_pure
    from .parser import current_parser, through_lets

    parser = current_parser.get()
    if parser is None or all(R.as_int(e) is not None for e in R.extents_of(region)):
        return region
    extents = []
    for extent in R.extents_of(region):
        if R.as_int(extent) is None:
            seen = through_lets(parser, extent)
            value = R.as_int(tvm.sym.Analyzer().simplify(seen)) if is_pure(seen) else None
            extent = tvm.tirx.const(value, str(extent.ty)) if value is not None else extent
        extents.append(extent)
    return R.make_region(region.source, R.mins_of(region), extents)
