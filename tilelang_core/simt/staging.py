"""Fragments through shared memory, for tile ops whose work is dealt by line rather than by the
fragment's layout (scans; reductions with a shared side). TileLang stages such fragments the
same way.

``fragment_to_shared`` has every thread write the elements it holds (replicas write the same
value) at their logical positions in a fresh shared workspace and ends with a barrier;
``shared_to_fragment`` is the way back (a barrier first: the workspace was written by other
threads). Workspaces are scratch of the kernel's state, allocated at the top.
"""

from __future__ import annotations

from tvm import tirx

from . import intrinsics as I
from .lowering import dtype, require_whole_fragment
from .transform.state import loop, seq


def size(extents) -> int:
    n = 1
    for e in extents:
        n *= e
    return n


def flat(index, extents):
    """Row-major offset of ``index`` in a tile of ``extents``."""
    out = 0
    for i, e in zip(index, extents):
        out = out * e + i
    return out


def unflatten(offset, extents) -> list:
    """The row-major index of ``offset`` in a tile of ``extents``."""
    index, rest = [None] * len(extents), offset
    for d in reversed(range(len(extents))):
        index[d] = tirx.floormod(rest, extents[d]) if d else rest
        rest = tirx.floordiv(rest, extents[d])
    return index


def fragment_to_shared(region, st, what: str, suffix: str):
    """(statements, workspace): the fragment ``region`` copied to a shared tile of its shape."""
    require_whole_fragment(region, st, what)
    regs = st.local_buffer(region.source)  # (says so when layout inference left it out)
    layout = st.layouts[region.source]
    extents = [int(e) for e in layout.shape]
    ws = st.alloc(f"{region.source.name}_{suffix}", (size(extents),), dtype(region), "shared.dyn")
    write = loop("l", layout.local_size, lambda l: tirx.BufferStore(
        ws, tirx.BufferLoad(regs, [l]), [st.simplify(flat(layout.index_of(st.thread_var, l), extents))]),
        tirx.ForKind.UNROLLED)
    return seq([write, I.syncthreads()]), ws


def shared_to_fragment(ws, region, st, what: str, value_of=None):
    """Statements that load every thread's elements of fragment ``region`` from the shared tile
    ``ws`` (same shape); ``value_of(loaded, old_register)`` may combine instead of replace."""
    require_whole_fragment(region, st, what)
    regs = st.local_buffer(region.source)  # (says so when layout inference left it out)
    layout = st.layouts[region.source]
    extents = [int(e) for e in layout.shape]

    def take(l):
        value = tirx.BufferLoad(ws, [st.simplify(flat(layout.index_of(st.thread_var, l), extents))])
        if value_of is not None:
            value = value_of(value, tirx.BufferLoad(regs, [l]))
        return tirx.BufferStore(regs, value, [l])

    return seq([I.syncthreads(), loop("l", layout.local_size, take, tirx.ForKind.UNROLLED)])
