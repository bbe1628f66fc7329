"""The SIMT interpreter's model of the mbarrier helpers (T.alloc_barrier and its waits, arrivals
and tracked copies; their contract is in simt/transform/mbarriers.py), for every backend.

A barrier element has an arrival count, the arrivals still pending in its current phase and the
number of phases completed. Each arriving lane counts once, in lane order (a barrier of count 1
that a warp arrives on completes 32 phases, as on the hardware). ``tl_mbarrier_track`` hands the
lane's async copies not yet landed to the barrier: under ``cp_async_lands_at_wait`` they land
when the current phase completes, the latest the contract allows, so a consumer that reads a
tile before waiting for its phase sees the shared pool's NaN bytes.

The interpreter runs the block in lockstep, in program order: a wait for a phase that has not
completed when the waiting lanes reach it would need a later statement to run first, so it
raises (a hand-written pipeline whose producer region comes before its consumer's runs; one that
needs the regions to interleave is beyond this model, never a silent answer).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tilelang_core.ir.intrinsics import CLUSTER_BARRIERS

from .interpreter import NOT_HANDLED


@dataclass
class _Barrier:
    count: int
    pending: int
    phases: int = 0
    #: deferred writes of tracked async copies: land when the current phase completes
    tracked: list = field(default_factory=list)


def _state(interp) -> dict:
    if not hasattr(interp, "mbarriers"):
        interp.mbarriers = {}
    return interp.mbarriers


def _targets(interp, ptr_arg, mask):
    """(lane, key) for each active lane: the barrier element it names."""
    ptr = interp.pointer(ptr_arg)
    index = np.broadcast_to(ptr.index, (interp.lanes,))
    return [(lane, (id(ptr.storage), int(index[lane]))) for lane in np.nonzero(mask)[0]]


def _barrier(interp, key, name: str) -> _Barrier:
    bar = _state(interp).get(key)
    if bar is None:
        raise RuntimeError(f"{name} on an mbarrier that was never initialized (tl_mbarrier_init)")
    return bar


def _complete(bar: _Barrier):
    for dst, index, value, write in bar.tracked:
        dst.write(index, value, write)
    bar.tracked = []
    bar.phases += 1
    bar.pending = bar.count


#: the cluster's barriers and the cross-block mbarrier helpers (language/cluster.py)
_CLUSTER_WAITS = frozenset(f"tl_{name}" for name in (*CLUSTER_BARRIERS, "mbarrier_arrive_remote", "mbarrier_wait_cluster"))


def mbarrier_helper(interp, name: str, args, mask):
    """The model of one helper call, or NOT_HANDLED."""
    if name == "tl_mbarrier_init":
        count = np.broadcast_to(np.asarray(interp.expr(args[1])), (interp.lanes,))
        for lane, key in _targets(interp, args[0], mask):
            _state(interp)[key] = _Barrier(int(count[lane]), int(count[lane]))
        return None
    if name == "tl_sync_grid" or name in _CLUSTER_WAITS:
        what = "T.sync_grid" if name == "tl_sync_grid" else "a cluster barrier"
        raise NotImplementedError(f"interpreter: {what} (the interpreter runs one block at a time, so no block "
                                  f"can wait for the others; the GPU tests run it)")
    if name == "tl_cluster_dims":  # the cluster shape (language/cluster.py), for tl_cluster_rank
        interp.cluster_dims = tuple(int(interp.expr(a)) for a in args)
        return None
    if name == "tl_cluster_rank":
        dims = getattr(interp, "cluster_dims", (1, 1, 1))
        position = [interp.block_index.get(axis, 0) % d for axis, d in zip("xyz", dims)]
        return np.uint32(position[0] + dims[0] * (position[1] + dims[1] * position[2]))
    if name in ("tl_mbarrier_fence_init", "tl_pdl_trigger", "tl_pdl_sync") or name.startswith("tl_set_max_nreg<"):
        return None  # ordering, register and launch-overlap hints: one kernel at a time needs none
    if name == "tl_mbarrier_arrive":
        for _, key in _targets(interp, args[0], mask):
            bar = _barrier(interp, key, name)
            bar.pending -= 1
            if bar.pending == 0:
                _complete(bar)
        return None
    if name == "tl_mbarrier_track":
        targets = _targets(interp, args[0], mask)
        lanes = np.zeros(interp.lanes, dtype=bool)
        lanes[[lane for lane, _ in targets]] = True
        for _, key in targets:
            _barrier(interp, key, name)
        if not interp.defer_async or not targets:
            return None  # the copies landed when issued
        bar = _barrier(interp, targets[0][1], name)
        if any(key != targets[0][1] for _, key in targets):
            raise NotImplementedError("interpreter: tl_mbarrier_track with lanes on different barriers")
        keep = []
        for dst, index, value, write in interp.open_group:
            mine = write & lanes
            if mine.any():
                bar.tracked.append((dst, index, value, mine))
            rest = write & ~lanes
            if rest.any():
                keep.append((dst, index, value, rest))
        interp.open_group = keep
        return None
    if name == "tl_mbarrier_wait":
        parity = np.broadcast_to(np.asarray(interp.expr(args[1])), (interp.lanes,))
        for lane, key in _targets(interp, args[0], mask):
            bar = _barrier(interp, key, name)
            if bar.phases % 2 == int(parity[lane]) % 2:
                raise RuntimeError(
                    f"mbarrier wait (parity {int(parity[lane])}) on thread {lane} would block forever: the "
                    f"interpreter runs the block in program order and the phase has not completed "
                    f"({bar.count - bar.pending} of {bar.count} arrivals); the arrivals it waits for come "
                    f"later in the program, or never")
        return None
    return NOT_HANDLED


__all__ = ["mbarrier_helper"]
