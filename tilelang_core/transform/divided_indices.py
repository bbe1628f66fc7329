"""A fragment indexed by a loop variable divided by a constant in T.Parallel: ``B[i, j // 2]``.

TileLang's dequantizing GEMMs unpack two 4-bit values from each byte of a fragment::

    for i, j in T.Parallel(block_N, block_K):
        B_dequant[i, j] = decode(B_local[i, j // 2], j % 2)

Iteration ``(i, j)`` reads byte ``(i, j // 2)``. TileLang lays ``B_local`` out as the loop's layout
taken through the index. So does this: along a dimension divided by ``c`` the fragment's layout is
the loop's with its lowest digits of extent ``c`` taken out (digits: layout/fragment.py). Those that
were registers disappear (one register now serves ``c`` iterations); those that were threads
become replica digits (each of those threads holds its own copy of the byte). Where the lowest
digits cannot be split at ``c`` the fragment falls back to being held whole by every thread.

Without this the byte fragment was held whole by every thread: correct, but 8 KB of registers per
thread for a 128 x 64 tile and a fully unrolled copy (TileLang's fp4 Hopper example took 415 s to
compile into 1.8 MB of CUDA).
"""

from __future__ import annotations

from tvm import tirx

from ..layout import LOCAL, THREAD, Digit, Fragment


def divided_access(nest, indices) -> list[tuple[int, int]] | None:
    """``[(loop dim, divisor)]`` of an access whose every index is a loop variable or a loop
    variable floor-divided by a constant, at least one divided; None otherwise."""
    out = []
    for index in indices:
        divisor = 1
        if isinstance(index, tirx.FloorDiv) and isinstance(index.b, tirx.IntImm) and int(index.b.value) > 1:
            index, divisor = index.a, int(index.b.value)
        hit = [k for k, v in enumerate(nest.loop_vars) if index.same_as(v)]
        if not hit:
            return None
        out.append((hit[0], divisor))
    if all(c == 1 for _, c in out) or len({d for d, _ in out}) != len(out):
        return None
    return out


def spans(nest, divided, shape) -> bool:
    """Does the access cover the fragment exactly (loop extent = its extent times the divisor)?"""
    return len(divided) == len(shape) and all(
        isinstance(nest.extents[d], int) and nest.extents[d] == s * c for (d, c), s in zip(divided, shape))


def divided_layout(nest, anchor: Fragment, divided, shape) -> Fragment | None:
    """The layout a fragment of ``shape`` read at ``divided`` (:func:`divided_access`) must have in
    ``nest`` following ``anchor`` (module docstring); None when the access does not cover the
    fragment exactly (:func:`spans`) or a divisor cuts through a digit that cannot be split there."""
    from .layout_inference import access_layout  # (layout_inference imports this module)

    if not spans(nest, divided, shape):
        return None
    layout = anchor
    for d, c in divided:
        if c > 1:
            layout = _divide(layout, d, c)
            if layout is None:
                return None
    return access_layout(layout, [d for d, _ in divided], tuple(shape))


def _divide(fragment: Fragment, d: int, c: int) -> Fragment | None:
    kept, moved, left = list(fragment.digits[d]), [], c
    while left > 1 and kept:
        low = kept.pop()
        if low.extent == 1:
            continue
        if left % low.extent == 0:
            part = low
        elif low.extent % left == 0:  # split: the high part stays, the low one goes
            kept.append(Digit(low.extent // left, low.space, low.stride * left))
            part = Digit(left, low.space, low.stride)
        else:
            return None
        left //= part.extent
        if part.space == THREAD:
            moved.append(part)
    if left > 1:
        return None
    digits = [list(ds) for ds in fragment.digits]
    digits[d] = kept or [Digit(1, LOCAL, 0)]
    # registers renumbered densely in their old order (the dropped ones leave gaps)
    local = sorted((x for ds in digits for x in ds if x.space == LOCAL and x.extent > 1), key=lambda x: x.stride)
    stride, renumbered = 1, {}
    for x in local:
        renumbered[id(x)] = Digit(x.extent, LOCAL, stride)
        stride *= x.extent
    digits = tuple(tuple(renumbered.get(id(x), x) for x in ds) for ds in digits)
    shape = list(fragment.shape)
    shape[d] //= c
    return Fragment(tuple(shape), digits, tuple(fragment.replica_digits) + tuple(moved), name=fragment.name)


__all__ = ["divided_access", "divided_layout", "spans"]
