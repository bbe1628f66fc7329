"""``T.any_of`` / ``T.all_of``: whether any / every element of a buffer or of a slice along its
last dimension is true (TileLang's block-sparse masks: ``if T.any_of(BlockMask[by, bx, k, :])``).

The value is an ordinary expression: the elements' loads joined with ``||`` / ``&&`` (a non-bool
element counts as true when it is not zero), so every backend evaluates it where it stands and
layout inference, bounds checks and the cpu oracle see each load. The extent must be a
constant (it is unrolled); TileLang accepts a slice only along the last dimension, and so do we.

Example::

    if T.any_of(BlockMask[by, bx, k, :]):
        T.gemm(A_shared, B_shared, C_local)
"""

from __future__ import annotations

import tvm
from tvm import tirx

from ..errors import FrontendError

#: elements unrolled at most: past this the expression is long enough to be a mistake
MAX_ELEMENTS = 1024


def _elements(target, name: str):
    """(buffer, [index lists]) of the elements ``target`` names."""
    if tirx.is_buffer_var(target):
        buffer = target
        starts = [tirx.const(0, "int32") for _ in buffer.ty.shape]
        extents = list(buffer.ty.shape)
    elif isinstance(target, tvm.ir.TensorRegion):
        buffer = target.source
        starts = [r.min for r in target.region]
        extents = [r.extent for r in target.region]
    elif isinstance(target, tvm.ir.TensorLoad):
        return target.source, [list(target.indices)]
    else:
        raise FrontendError(f"T.{name} expects a buffer or a slice of one (X[i, :]), got {type(target).__name__}")
    sizes = []
    for extent in extents:
        if not isinstance(extent, (int, tirx.IntImm)):
            raise FrontendError(f"T.{name}({buffer.name}[...]): the extent {extent} is not a constant; "
                                f"T.{name} unrolls over the elements, so their number must be known")
        sizes.append(int(extent))
    # a whole buffer: every element, any rank (TileLang reads it flat); a slice: the last dimension
    if not tirx.is_buffer_var(target) and any(s > 1 for s in sizes[:-1]):
        raise FrontendError(f"T.{name}({buffer.name}[...]): only the last dimension may be a slice "
                            f"(as in TileLang); index the others with a single value")
    count = 1
    for s in sizes:
        count *= s
    if count > MAX_ELEMENTS:
        raise FrontendError(f"T.{name}({buffer.name}[...]) over {count} elements: at most {MAX_ELEMENTS} "
                            f"(it becomes one expression per element); reduce into a flag with T.Parallel")
    indices = [[]]
    for start, size in zip(starts, sizes):
        indices = [prefix + [start + k if k else start] for prefix in indices for k in range(size)]
    return buffer, indices


def _truth(load):
    return load if str(load.ty.dtype) == "bool" else load != tirx.const(0, str(load.ty.dtype))


def _join(target, name: str, combine, empty: bool):
    buffer, index_lists = _elements(target, name)
    value = tirx.const(empty, "bool") if not index_lists else None
    for indices in index_lists:
        term = _truth(tirx.BufferLoad(buffer, indices))
        value = term if value is None else combine(value, term)
    return value


def any_of(buffer):
    """True when any element of ``buffer`` (a buffer, or a slice along its last dimension) is true."""
    return _join(buffer, "any_of", tirx.Or, empty=False)


def all_of(buffer):
    """True when every element of ``buffer`` (a buffer, or a slice along its last dimension) is true."""
    return _join(buffer, "all_of", tirx.And, empty=True)
