"""Fragments read through a window in T.Parallel: ``x_frag[i, jj * 4 + j]`` in a loop over
``i, j`` (TileLang's mHC pre kernel), where ``jj`` is a serial loop outside.

Each index of the access is one loop variable of the nest plus an offset that does not depend on
the nest (``jj * 4``), a multiple of that variable's extent. The fragment, seen with each such
dimension split into (windows, extent), must hold every window of an element in the same thread
(its window dimensions carry registers only): then the loop runs each element on the thread that
holds it in every window, and the access reads the register of the window the offset selects.
That is TileLang's rule for these loops (its loop layout is the fragment's, taken through the
index); where the fragment's layout spreads windows over threads the access is refused by the
caller, never compiled.

    access = window_access(nest, indices, shape)    # None unless the index has this form
    layout = window_layout(frag_layout, access, nest.extents)   # the loop's layout, or None
"""

from __future__ import annotations

from dataclasses import dataclass

import tvm
import tvm_ffi
from tvm import tirx

from ..errors import LayoutError
from ..layout import LOCAL, Fragment


@dataclass(frozen=True)
class WindowAccess:
    #: per fragment dimension: the nest loop dimension that indexes it
    dims: tuple[int, ...]
    #: per fragment dimension: the offset added to the loop variable (a PrimExpr; 0 for none)
    offsets: tuple


def _uses(expr, var) -> bool:
    found = []
    tvm_ffi.structural_walk(expr, [(tirx.Var, lambda v: found.append(v) if v.same_as(var) else None)])
    return bool(found)


def var_plus_offset(nest, indices, analyzer) -> tuple[tuple, tuple] | None:
    """(per index: the nest loop dimension it uses, the offset added to that loop variable), when
    every index is one loop variable of ``nest`` plus an offset the nest does not change and every
    loop variable is used exactly once; None for any other form (``i * 2``, ``i + j``, a loop
    variable left out). The form both windows (here) and shifted reads (simt shifted_reads.py)
    start from."""
    dims, offsets = [], []
    for index in indices:
        used = [k for k, v in enumerate(nest.loop_vars) if _uses(index, v)]
        if len(used) != 1:
            return None
        offset = analyzer.simplify(index - nest.loop_vars[used[0]])
        if any(_uses(offset, v) for v in nest.loop_vars):
            return None  # not var + offset (var * 2, var // 2, ...)
        dims.append(used[0])
        offsets.append(offset)
    if sorted(dims) != list(range(len(nest.loop_vars))):
        return None
    return tuple(dims), tuple(offsets)


def window_access(nest, indices, shape) -> WindowAccess | None:
    """The access as loop variable + offset per dimension, at least one offset nonzero, every loop
    variable of the nest used exactly once, each nonzero offset a multiple of its loop extent
    inside a dimension of ``shape`` that extent tiles; None for any other form (``acc[i + s * 32, j]``
    over the whole of ``acc``'s rows is a shift, not a window)."""
    analyzer = tvm.sym.Analyzer()
    found = var_plus_offset(nest, indices, analyzer)
    if found is None:
        return None
    dims, offsets = found
    for size, k, offset in zip(shape, dims, offsets):
        extent = int(nest.extents[k])
        zero = isinstance(offset, tirx.IntImm) and offset.value == 0
        if not zero and (size % extent or size == extent
                         or not analyzer.can_prove(tirx.floormod(offset, extent) == 0)):
            return None
    if all(isinstance(o, tirx.IntImm) and o.value == 0 for o in offsets):
        return None  # a plain access: not a window
    return WindowAccess(dims, offsets)


def window_layout(layout: Fragment, access: WindowAccess, extents) -> Fragment | None:
    """The layout of the loop over ``extents`` that runs each element where ``layout`` holds it
    in every window; None when the fragment spreads its windows over threads. (``access`` comes
    from window_access, which checked that the windows tile the fragment.)"""
    split_shape, window_dims = [], []
    for size, k in zip(layout.shape, access.dims):
        extent = int(extents[k])
        if size > extent:
            window_dims.append(len(split_shape))
            split_shape.append(size // extent)
        split_shape.append(extent)
    try:
        split = layout.reshape(split_shape)
    except LayoutError:
        return None
    if any(x.space != LOCAL and x.extent > 1 for d in window_dims for x in split.digits[d]):
        return None  # a window lives in other threads
    for d in reversed(window_dims):
        split = split.reduce(d)  # (registers only: the threads are the window's own)
    order = [access.dims.index(k) for k in range(len(access.dims))]
    return split if order == sorted(order) else split.permute(order)


def window_owned(layout: Fragment, anchor: Fragment, access: WindowAccess, extents) -> bool:
    """Check by enumeration that under ``anchor`` every thread holds, in ``layout``, each element
    it reads through every window (the guard against a silent wrong answer)."""
    windows = [range(size // int(extents[k])) for size, k in zip(layout.shape, access.dims)]
    owners: dict = {}
    for t in range(anchor.num_threads):
        for r in range(anchor.local_size):
            point = anchor.index_of(t, r)
            base = [int(point[k]) for k in access.dims]
            for w in _product(windows):
                idx = tuple(b + i * int(extents[k]) for b, i, k in zip(base, w, access.dims))
                held = owners.get(idx)
                if held is None:
                    held = owners[idx] = {layout.thread_of(*idx, replica=p) for p in range(layout.replicas)}
                if t not in held:
                    return False
    return True


def _product(ranges):
    if not ranges:
        yield ()
        return
    for head in ranges[0]:
        for tail in _product(ranges[1:]):
            yield (head, *tail)
