"""The SIMT interpreter's check for shared-memory races: a missing barrier raises instead of passing.

The interpreter runs a block in lockstep, statement by statement, so a read that the GPU could
run before another warp's write has landed still sees the write here; without this check a
barrier the compiler forgot passes every interpreter test and computes garbage on the device
(stop 45: a T.Pipelined loop whose body scanned a loaded tile in place read it before the scan
was done, relative error 0.7 on the H200, exact in the interpreter).

Each byte of a block's shared memory remembers which warp last wrote it and which warp(s) read it
since, with the barrier epoch of each: every block-wide or group barrier and every mbarrier wait
starts a new epoch (group barriers and mbarrier waits order only some threads: counting them as
block-wide can hide a race among the others, never report one that is not there). Within an
epoch, a byte written by one warp and read or written by another is a race. Lanes of one warp
are not compared (the warp intrinsics and lockstep-written code order them); atomics are not
tracked (they don't race with each other). The first race raises ``SharedMemoryRace`` naming the
buffer, the warps and the statement.
"""

from __future__ import annotations

import numpy as np

#: helpers after which every thread that passed them sees what the others wrote before them
#: (tvm_storage_sync is the block barrier every backend prints its own way)
BARRIER_HELPERS = frozenset({"tl_named_barrier", "tl_syncthreads_count", "tl_syncthreads_and",
                             "tl_syncthreads_or", "tl_mbarrier_wait", "tl_sync_grid"})

_NONE, _SEVERAL = -1, -2


class SharedMemoryRace(RuntimeError):
    """Two warps touched the same shared bytes, one of them writing, with no barrier between."""


class SharedRaces:
    """The race bookkeeping of one interpreter: one record per shared allocation (views share
    their allocation's record through the bytes they cover)."""

    def __init__(self, warp_size: int):
        self.warp_size = warp_size
        self.epoch = 0
        self.records: dict[int, dict] = {}
        self.where = ""  # the statement being run, for the message

    def barrier(self):
        self.epoch += 1

    def new_block(self):
        self.records.clear()
        self.epoch += 1

    def _record(self, storage) -> tuple[dict, int]:
        """The bookkeeping of the allocation ``storage`` views, and the view's byte offset in it."""
        cached = storage.race_record
        if cached is not None and cached[0] is self.records.get(cached[1]):
            return cached[0], cached[2]
        root = storage.array
        while isinstance(root.base, np.ndarray):
            root = root.base
        offset = storage.array.__array_interface__["data"][0] - root.__array_interface__["data"][0]
        key = id(root)  # (the record holds ``root``: the id is not reused while it is kept)
        if key not in self.records:
            n = root.nbytes
            self.records[key] = {"root": root, "w": np.full(n, _NONE, np.int32), "we": np.full(n, -1, np.int64),
                                 "lo": np.zeros(n, np.int32), "hi": np.full(n, _NONE, np.int32),
                                 "re": np.full(n, -1, np.int64)}
        storage.race_record = (self.records[key], key, offset)
        return self.records[key], offset

    def _bytes(self, storage, flat, mask):
        """(bookkeeping, byte offsets into the allocation, warp of each) of the active lanes' elements."""
        rec, offset = self._record(storage)
        lanes = np.nonzero(mask)[0]
        elements = np.asarray(flat)[..., lanes]
        size = storage.array.itemsize
        spans = (offset + elements.astype(np.int64) * size)[..., None] + np.arange(size)
        warps = np.zeros(spans.shape, np.int32) + (lanes // self.warp_size).astype(np.int32)[:, None]
        return rec, spans.reshape(-1), warps.reshape(-1)

    def _race(self, storage, what: str, mine: np.ndarray, theirs: np.ndarray, at: np.ndarray):
        i = int(np.nonzero(at)[0][0])
        other = "several warps" if int(theirs[i]) == _SEVERAL else f"warp {int(theirs[i])}"
        lines = [line.strip() for line in str(self.where).splitlines() if line.strip()]
        statement = lines[-1] if lines else ""  # (the script's last line; the others declare buffers)
        # an async copy's write lands at the wait that covers it (cp_async_lands_at_wait)
        landing = "tl_cp_async_wait" in statement
        missing = "an async-copy wait or a barrier" if landing else "a barrier"
        raise SharedMemoryRace(
            f"shared-memory race on '{storage.name}': warp {int(mine[i])} {what.format(other=other)} since the "
            f"last barrier ({missing} is missing: the device could compute anything; a compiler bug, please "
            f"report it), in: {statement[:300]}")

    def _after_writes(self, storage, flat, mask, verb: str):
        """The access's bytes, once checked against other warps' writes of this epoch."""
        rec, where, warps = self._bytes(storage, flat, mask)
        w, we = rec["w"][where], rec["we"][where]
        clash = (we == self.epoch) & (w >= 0) & (w != warps)
        if clash.any():
            self._race(storage, verb + " what {other} wrote", warps, w, clash)
        return rec, where, warps

    def read(self, storage, flat, mask):
        if not mask.any():
            return
        rec, where, warps = self._after_writes(storage, flat, mask, "reads")
        # the range of warps that read each byte in this epoch (lo == hi: one warp)
        stale = where[rec["re"][where] != self.epoch]
        rec["lo"][stale], rec["hi"][stale], rec["re"][stale] = np.iinfo(np.int32).max, _NONE, self.epoch
        np.minimum.at(rec["lo"], where, warps)
        np.maximum.at(rec["hi"], where, warps)

    def write(self, storage, flat, mask):
        if not mask.any():
            return
        rec, where, warps = self._after_writes(storage, flat, mask, "overwrites")
        lo, hi = rec["lo"][where], rec["hi"][where]
        clash = (rec["re"][where] == self.epoch) & (hi >= 0) & ((lo != warps) | (hi != warps))
        if clash.any():
            self._race(storage, "overwrites what {other} read", warps, np.where(lo == hi, lo, _SEVERAL), clash)
        rec["w"][where] = warps
        rec["we"][where] = self.epoch
