"""Fragments indexed by the serial loops around a T.Parallel nest: those dimensions stay in registers.

TileLang lays such a fragment out from the loop, and DeepSeek's TileKernels rely on it (mHC's
backward pass)::

    for k in T.serial(4):
        for j in T.Parallel(256):
            db[k, j] += a[k, o] * dx[k, j]

``db[k, j]`` names the nest's variable ``j`` in one dimension and, in the other, only serial loops
around the nest (or constants): the thread that runs iteration ``j`` holds the whole column
``db[:, j]``, the serial dimension in its registers, so every ``k`` finds its element there. A
read may also name serial loops of the body and skip loop variables (``res[c, j]`` summed over
``c`` in a loop over ``o, j``: the threads running column ``j`` hold it, for every ``o``). Such
an access is "serial-indexed": layout inference gives an unlaid fragment the loop's layout over
its loop dimensions and registers over the others (:func:`with_serial_dims`), a fragment with a
layout already may anchor the loop, and LowerParallel checks ownership numerically over the outer
loops' values (transform/owned_accesses.py), refusing an element another thread holds.

Before this rule such fragments were held whole by every thread: each of them ran all
4 x 256 iterations into a 1024-register copy, and a loop writing one next to a distributed
fragment was refused.

Example::

    dims = serial_indexed(nest, [k, j], (4, 256))    # [None, 0]: dim 0 serial, dim 1 = loop dim 0
    layout = with_serial_dims(loop_part, dims, (4, 256))
"""

from __future__ import annotations

import tvm_ffi
from tvm import tirx

from ..layout import LOCAL, Digit, Fragment
from .owned_accesses import owned_access


def serial_indexed(nest, indices, shape, stored: bool = True) -> list | None:
    """For each buffer dimension, the nest's loop dimension its index is (a bare loop variable),
    or None for an index of serial loops (around the nest, or in its body: those owned_access
    resolves, which LowerParallel's ownership check evaluates) and constants only;
    None when the access has any other form, names no serial dimension, or its loop variables
    are not distinct, over the buffer's extents. A ``stored`` access must name every loop
    variable (an iteration per element); a read may skip some (``res[c, j]`` in a loop over
    ``o, j``: the threads running any ``o`` of column ``j`` hold it)."""
    access = owned_access(nest, indices)  # the serial loops (and bound values) put in; None: another name
    if access is None:
        return None
    loop_vars = {v.__chandle__() for v in nest.loop_vars}
    dims = []
    for index, resolved in zip(indices, access.indices):
        hit = [k for k, v in enumerate(nest.loop_vars) if index.same_as(v)]
        if hit:
            dims.append(hit[0])
            continue
        names = []
        tvm_ffi.structural_walk(resolved, [(tirx.Var, names.append)])
        if any(v.__chandle__() in loop_vars for v in names):
            return None
        dims.append(None)
    loop_dims = [d for d in dims if d is not None]
    if None not in dims or not loop_dims or len(set(loop_dims)) != len(loop_dims):
        return None
    if stored and sorted(loop_dims) != list(range(len(nest.extents))):
        return None
    if any(nest.extents[d] != shape[p] for p, d in enumerate(dims) if d is not None):
        return None
    return dims


def loop_shape(dims, shape) -> tuple[int, ...]:
    """The extents of the loop-indexed dimensions of a serial-indexed buffer, in its order."""
    return tuple(s for s, d in zip(shape, dims) if d is not None)


def with_serial_dims(layout: Fragment, dims, shape) -> Fragment:
    """``layout`` (of the loop-indexed dimensions, in the buffer's order) with the serial
    dimensions added as registers: a thread holds every serial index of each element it holds,
    the serial dimensions above the loop's registers, row-major."""
    strides, stride = {}, layout.local_size
    for p in reversed(range(len(shape))):
        if dims[p] is None:
            strides[p] = stride if shape[p] > 1 else 0
            stride *= shape[p]
    digits, part = [], iter(layout.digits)
    for p, extent in enumerate(shape):
        digits.append((Digit(extent, LOCAL, strides[p]),) if dims[p] is None else next(part))
    return Fragment(tuple(shape), tuple(digits), layout.replica_digits, name=layout.name)


__all__ = ["loop_shape", "serial_indexed", "with_serial_dims"]
