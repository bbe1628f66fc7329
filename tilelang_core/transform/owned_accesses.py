"""Fragments indexed in a T.Parallel loop by any expression of its iterations: TileLang's rule.

TileLang lets a T.Parallel body read or write a laid-out fragment at indices other than the loop
variables (``mix[i, j + 8]``, ``out[x, y * 8 + j]`` with ``j`` a serial loop inside the body,
``amax[i // 128, j // 128, k]`` with ``k`` a value bound in the body) as long as each element an
iteration touches lives in the registers of the thread that runs it; the loop can also take its
layout from such an access (the thread of iteration ``p`` is the thread holding the element it
touches). DeepSeek's TileKernels rely on both (mHC's split mixes, the e5m6 and per-block casts).

Forms with a closed rule of their own (the loop variables themselves, windows, divided indices:
layout_inference.py, fragment_windows.py, divided_indices.py) go first; this module takes the
rest, numerically: the indices are evaluated on every iteration (and every value of the serial
loops inside the body) and the owners compared. A fragment's element that another thread holds
is refused, naming the access, as before.

Example::

    access = owned_access(nest, indices)         # None: an index names a value of run time
    why = not_owned(anchor, layout, nest, access)  # None when every element is the runner's
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import tvm_ffi
from tvm import tirx

from ..errors import LayoutError
from ..ir.substitute import substitute_nested
from ..layout.fitted import MAX_ELEMENTS, fit_fragment

_INNER_KINDS = (tirx.ForKind.SERIAL, tirx.ForKind.UNROLLED, tirx.ForKind.VECTORIZED)


@dataclass
class OwnedAccess:
    """A fragment access as expressions of the nest's loop variables and the constant-extent
    serial loops around it and in its body (``inner``: (variable, extent))."""

    indices: list
    inner: list


def _inner_loops_and_values(nest):
    """The serial loops around the nest and in its body that start at 0 and have a constant extent
    (an index may name either: ``db[k, j]`` with ``k`` a loop around ``T.Parallel(j)``), and the pure
    values bound in the body (by variable handle)."""
    loops, values = [], {}
    for loop in nest.outer:
        start = int(loop.min.value)
        if start == 0:
            loops.append((loop.loop_var, max(int(loop.extent.value), 0)))
        else:  # counted from 0 here: the variable is the count plus the start
            count = tirx.Var(f"{loop.loop_var.name}_count", loop.loop_var.ty)
            loops.append((count, max(int(loop.extent.value), 0)))
            values[loop.loop_var.__chandle__()] = count + loop.min
    body = nest.inner

    def on_for(loop):
        if loop.kind in _INNER_KINDS and isinstance(loop.min, tirx.IntImm) and loop.min.value == 0 \
                and isinstance(loop.extent, tirx.IntImm):
            loops.append((loop.loop_var, max(int(loop.extent.value), 0)))  # (a loop that runs never: empty)

    def on_bind(bind):
        values[bind.var.__chandle__()] = bind.value

    tvm_ffi.structural_walk(body, [(tirx.For, on_for), (tirx.Bind, on_bind)])
    return loops, values


def owned_access(nest, indices) -> OwnedAccess | None:
    """``indices`` resolved to the nest's loop variables and its body's serial loops; None when
    another variable remains (a block index, a value read from memory): no numeric rule then."""
    loops, values = _inner_loops_and_values(nest)
    resolved = [substitute_nested(index, values) for index in indices]
    known = {v.__chandle__() for v in nest.loop_vars} | {v.__chandle__() for v, _ in loops}
    names = []
    for index in resolved:
        tvm_ffi.structural_walk(index, [(tirx.Var, names.append)])
    if any(v.__chandle__() not in known for v in names):
        return None
    used = {v.__chandle__() for v in names}
    return OwnedAccess(resolved, [(v, n) for v, n in loops if v.__chandle__() in used])


def _elements(nest, access: OwnedAccess, shape):
    """(each iteration's element, the loop variables' grids), arrays over (loop extents..., inner
    extents...); or (None, None, why not)."""
    from ..ir.numpy_ops import Unsupported, evaluate

    extents = tuple(int(e) for e in nest.extents) + tuple(n for _, n in access.inner)
    if int(np.prod(extents)) > MAX_ELEMENTS:
        return None, None, "the loop and the serial loops inside it have too many iterations to check"
    grids = np.indices(extents)
    variables = list(nest.loop_vars) + [v for v, _ in access.inner]
    env = {v.__chandle__(): g for v, g in zip(variables, grids)}
    try:
        element = [np.broadcast_to(evaluate(i, env), extents) for i in access.indices]
    except Unsupported as err:
        return None, None, f"its indices cannot be evaluated ({err})"
    outside = out_of_range(element, shape)
    if outside is not None:
        return None, None, (f"{outside} (a read at a shifted index is taken when the iterations that read provably "
                            f"stay inside: guard it, e.g. `if i < n - k:`)")
    return element, grids[:len(nest.extents)], None


def out_of_range(element, shape) -> str | None:
    """Which index of ``element`` (arrays, one per dimension) leaves ``shape``, and over what; None
    when every one stays inside."""
    for d, (index, size) in enumerate(zip(element, shape)):
        if index.size and (index.min() < 0 or index.max() >= size):
            return f"index {d} runs over {int(index.min())}..{int(index.max())}, outside 0..{size - 1}"
    return None


def first_not_held(layout, element, runner):
    """The first point (of ``runner``'s shape) where ``runner`` holds no copy of the element, with
    the thread holding its first copy; None when the runner holds every one."""
    owners = [np.broadcast_to(layout.thread_of(*element, replica=r), runner.shape) for r in range(layout.replicas)]
    held = np.zeros(runner.shape, dtype=bool)
    for owner in owners:
        held |= owner == runner
    if held.all():
        return None
    at = tuple(int(x) for x in np.argwhere(~held)[0])
    return at, int(owners[0][at])


def not_owned(anchor, layout, nest, access: OwnedAccess) -> str | None:
    """None when every element ``access`` touches (``layout``'s) is held by each thread that runs
    its iteration under ``anchor`` (every copy of a replicated loop); else the reason."""
    element, loop_grid, why = _elements(nest, access, layout.shape)
    if why is not None:
        return why
    for r in range(anchor.replicas):
        runner = np.broadcast_to(anchor.thread_of(*loop_grid, replica=r), element[0].shape)
        missed = first_not_held(layout, element, runner)
        if missed is not None:
            at, holder = missed
            return (f"iteration {list(at[:len(nest.extents)])} runs on thread {int(runner[at])}, but the "
                    f"element it touches, {[int(e[at]) for e in element]}, is held by thread {holder}")
    return None


def anchor_from(layout, nest, access: OwnedAccess):
    """The loop layout under which each iteration runs on the threads holding its element (every
    copy of a replicated fragment runs it: TileLang derives a loop's layout from such an access);
    None when no single thread holds all of an iteration's elements (over the inner loops) or the
    threads so chosen have no layout form."""
    if layout.is_whole:
        return None
    element, _, why = _elements(nest, access, layout.shape)
    if why is not None or 0 in element[0].shape:
        return None
    first = (Ellipsis,) + (0,) * len(access.inner)  # each iteration's first inner step
    threads = []
    for r in range(layout.replicas):
        thread = np.broadcast_to(layout.thread_of(*element, replica=r), element[0].shape)
        head = thread[first]
        if access.inner and not (thread == head.reshape(head.shape + (1,) * len(access.inner))).all():
            return None
        threads.append(np.ascontiguousarray(head))
    # each thread's iterations numbered in row-major order: the registers of the loop
    flat = threads[0].reshape(-1)
    order = np.argsort(flat, kind="stable")
    counts = np.bincount(flat)
    local = np.empty_like(flat)
    local[order] = np.arange(flat.size) - np.repeat(np.concatenate([[0], np.cumsum(counts)[:-1]]), counts)
    try:
        return fit_fragment(tuple(int(e) for e in nest.extents), np.stack(threads, axis=-1),
                            local.reshape(threads[0].shape))
    except LayoutError:
        return None


__all__ = ["OwnedAccess", "anchor_from", "first_not_held", "not_owned", "out_of_range", "owned_access"]
