"""The two sides of a warp-specialized pipeline's TMA ring (warp_specialize.py): its mbarriers,
the producer's loads of one iteration, and one consumer iteration as consumer_schedule.py plans it.

Ring positions count every iteration a CTA ran (across tiles when persistent): iteration ``it``
of a tile uses slot ``ring % stages`` with phase ``ring / stages % 2``. Loaded tiles are read from
their staged copies (``staged``: tile -> (ring buffer, stages), software_pipeline's restaging).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tvm import tirx

from tilelang_core.ir import TileOp, is_tile_op
from tilelang_core.simt import intrinsics as I
from tilelang_core.simt.transform.software_pipeline import _restage_accesses, _restage_op
from tilelang_core.simt.transform.state import if_then, seq, substitute

from .cluster import cluster_rank
from .consumer_schedule import EPILOGUE, LAST, PLAIN, PROLOGUE, STEADY, schedule
from .pingpong import turn_options
from .wgmma import WGMMA_BUSY, WGMMA_PENDING, WGMMA_PHASE

#: the consumers' loop (its attribute value: 1 where the warpgroups take ping-pong turns)
OVERLAP_REGION = "tl.ws_overlap"


class RingBarriers:
    """The mbarriers of the TMA ring: a full/empty pair per ring slot and tile group
    (consumer_schedule.py), then one full/empty pair for the per-tile loads (tile_boxes)."""

    def __init__(self, stages: int, ngroups: int, tile_loads: bool):
        self.stages, self.ngroups = stages, ngroups
        self.buffer = tirx.decl_buffer((2 * stages * ngroups + (2 if tile_loads else 0),), "uint64",
                                       name="tl_mbar", scope="shared")
        self.tile_full, self.tile_empty = self._at(2 * stages * ngroups, 0), self._at(2 * stages * ngroups + 1, 0)

    def _at(self, base: int, slot):
        return tirx.address_of(tirx.BufferLoad(self.buffer, [slot if base == 0 else base + slot]))

    def full(self, g, slot):
        return self._at(g * self.stages, slot)

    def empty(self, g, slot):
        return self._at((self.ngroups + g) * self.stages, slot)

    def init(self, empty_arrivals: int, tile_arrivals: int) -> list:
        """One thread's mbarrier inits: every full barrier expects one arrival (the producer's
        expect_tx), every empty one ``empty_arrivals``; the per-tile pair (``tile_arrivals`` > 0)."""
        s = tirx.Var("s", "int32")
        one = tirx.const(1, "int32")
        out = [tirx.For(s, tirx.const(0, "int32"), tirx.const(self.stages, "int32"), tirx.ForKind.UNROLLED, seq([
            call for g in range(self.ngroups)
            for call in (I.call("tl_mbar_init", self.full(g, s), one),
                         I.call("tl_mbar_init", self.empty(g, s), tirx.const(empty_arrivals, "int32")))]))]
        if tile_arrivals:
            out += [I.call("tl_mbar_init", self.tile_full, one),
                    I.call("tl_mbar_init", self.tile_empty, tirx.const(tile_arrivals, "int32"))]
        return out


def _slot_phase(ring, stages: int):
    return tirx.floormod(ring, stages), tirx.floormod(tirx.floordiv(ring, stages), 2)


@dataclass
class ProducerLoads:
    """The producer thread's TMA loads. ``boxes``: the ring's loads; ``tile_boxes``: per-tile
    operands (persistent), loaded once per tile; ``maps``: (tensor, box) -> tensor map;
    ``multicast``: boxes a cluster pair shares (loaded half by each CTA, into both); ``values``:
    the loop body's leading bindings; ``k`` / ``start``: the loop variable and its first value."""

    ring: RingBarriers
    boxes: list
    tile_boxes: list
    group_of: dict
    staged: dict
    maps: dict
    values: dict
    k: object
    start: object
    multicast: set = field(default_factory=set)

    def iteration(self, it, ring):
        """Loads of iteration ``it`` into ring slot ``ring % stages``, group by group."""
        slot, phase = _slot_phase(ring, self.ring.stages)
        out = []
        for g in range(self.ring.ngroups):
            mine = [b for b in self.boxes if self.group_of[b.op.dst.source] == g]
            out += [I.call("tl_mbar_wait", self.ring.empty(g, slot), 1 - phase),
                    I.call("tl_mbar_expect_tx", self.ring.full(g, slot), tirx.const(sum(b.bytes for b in mine), "int32"))]
            out += [load for box in mine for load in self._ring_loads(box, it, slot)]
        return seq(out)

    def tile_operands(self, t):
        """The loads of the ``t``-th tile's operands, once the consumers are done with the
        previous tile's (they arrive on tile_empty after their loop); before the tile's ring
        loads, so that a tile whose loop runs no iteration still gets them."""
        parity = tirx.floormod(t, 2)
        out = [if_then(t > 0, I.call("tl_mbar_wait", self.ring.tile_empty, 1 - parity)),
               I.call("tl_mbar_expect_tx", self.ring.tile_full, tirx.const(sum(b.bytes for b in self.tile_boxes), "int32"))]
        for box in self.tile_boxes:
            out += self._strip_loads(box, [r.min for r in box.op.src.region], box.op.dst.source, [], self.ring.tile_full)
        return seq(out)

    def _ring_loads(self, box, it, slot):
        mins = [substitute(substitute(r.min, self.values), {self.k: self.start + it}) for r in box.op.src.region]
        return self._strip_loads(box, mins, self.staged[box.op.dst.source][0], [slot],
                                 self.ring.full(self.group_of[box.op.dst.source], slot))

    def _strip_loads(self, box, mins, buf, lead, bar):
        """TMA loads of ``box`` (its region starting at ``mins``) into ``buf[*lead, 0, strip]``, one
        per 128-byte strip (a linear box: one, into ``buf[*lead, 0]``), completing on ``bar``; a box the cluster shares
        (``multicast``) is loaded half by each CTA, into both."""
        out = []
        for j in range(box.cols // box.atom):
            index = lead + box.strip_index(j)
            target = (tirx.address_of(tirx.BufferLoad(buf, index)), tirx.address_of(self.maps[(box.tensor, box.box)]),
                      bar)
            if box in self.multicast:
                out.append(if_then(cluster_rank() == j % 2, I.call(
                    f"tl_tma_load_multicast<{box.rank}>", *target, tirx.const(3, "uint16"), *box.strip_coords(mins, j))))
            else:
                out.append(I.call(f"tl_tma_load<{box.rank}>", *target, *box.strip_coords(mins, j)))
        return out


@dataclass
class ConsumerIteration:
    """One consumer iteration (``__call__(it, ring, kind)``) of the loop body ``body_stmts`` as
    ``schedule`` plans it (``plan``, ``lazy``; consumer_schedule.py): the events become the
    statements on the iteration's ring slot, mbarrier waits and arrives, and gemm issues and
    waits. Events of the previous iteration (lag 1) use ``it - 1`` and its slot."""

    ring: RingBarriers
    body_stmts: list
    groups: list
    binds: list
    values: dict
    staged: dict
    k: object
    start: object
    thread_var: object
    plan: object = None
    lazy: frozenset = frozenset()
    pingpong: bool = False
    overlap_block: bool = False
    multicast: set = field(default_factory=set)

    def _statement(self, it, ring, i, lag, options=None):
        s, slot = self.body_stmts[i], _slot_phase(ring - lag if lag else ring, self.ring.stages)[0]
        if lag:  # the leading bindings of that iteration, inlined
            s = substitute(s, self.values)
        if is_tile_op(s):
            op = _restage_op(TileOp.from_stmt(s), self.staged, slot)
            s = op.replace(options={**op.options, **options}).to_stmt() if options else op.to_stmt()
        else:
            s = _restage_accesses(s, self.staged, slot)
        return substitute(s, {self.k: self.start + (it - lag if lag else it)})

    def __call__(self, it, ring, kind):
        out = [substitute(b, {self.k: self.start + it}) for b in self.binds] if kind != EPILOGUE else []
        events = schedule(self.body_stmts, self.groups, kind, self.plan, self.lazy)
        turns = turn_options(events) if self.pingpong else {}
        top, block = out, None  # block: the statements after a wait that leaves a gemm in flight

        def close_block():
            top.append(tirx.IfThenElse(I.call("tl_opaque_true", dtype="bool"), seq(block), None))

        for n_event, e in enumerate(events):
            if e.kind == "wait" and block is not None:
                close_block()
                out, block = top, None
            if e.kind == "run":
                out.append(self._statement(it, ring, e.index, e.lag))
            elif e.kind == "issue":
                out.append(self._statement(it, ring, e.index, e.lag, {WGMMA_PHASE: "issue", **turns.get(n_event, {})}))
            elif e.kind == "wait":
                busy = [TileOp.from_stmt(self.body_stmts[i]) for i in e.busy]
                names = sorted({str(r.source.name) for g in busy for r in (g.A, g.C)})
                out.append(self._statement(it, ring, e.index, e.lag, {WGMMA_PHASE: "wait", WGMMA_PENDING: e.pending,
                                                                      WGMMA_BUSY: ",".join(names)}))
                if self.overlap_block and e.pending and (self.plan is None or self.plan[1]):
                    # The softmax that follows runs under the gemm still in flight; as one basic
                    # block of its own, ptxas cannot hoist the next wait_group (which has no
                    # operands) above it, as it does within a block.
                    out = block = []
            elif e.kind == "acquire":
                slot, phase = _slot_phase(ring - e.lag if e.lag else ring, self.ring.stages)
                out.append(I.call("tl_mbar_wait", self.ring.full(e.group, slot), phase))
            else:
                bar = self.ring.empty(e.group, _slot_phase(ring - e.lag if e.lag else ring, self.ring.stages)[0])
                out.append(I.call("tl_mbar_arrive", bar))
                if self.multicast:  # the peer's producer also loads into this slot: one arrive per warp
                    # (after the warp's collective wgmma wait every lane is done with the slot)
                    # (releasing at the cluster's scope: the peer's TMA then overwrites the slot)
                    out.append(if_then(tirx.floormod(self.thread_var, 32) == 0, I.call(
                        "tl_mbarrier_arrive_remote", bar, tirx.Cast("int32", 1 - cluster_rank()))))
        if block is not None:
            close_block()
        return seq(top)


def consumer_iterations(plan, consume, cit, trip, done, pingpong: bool):
    """The consumers' loop over ``trip`` iterations (``consume(it, ring, kind)`` builds one; ring
    positions count from ``done``): plain, the chain with iterations 0 and n-1 peeled, or the
    overlap with iteration 0 and the tail of n-1 peeled (consumer_schedule.py)."""
    zero, one = tirx.const(0, "int32"), tirx.const(1, "int32")
    if plan is None:
        return tirx.For(cit, zero, trip, tirx.ForKind.SERIAL, consume(cit, done + cit, PLAIN))
    if not plan[1]:
        body = seq([
            if_then(trip == 1, consume(zero, done, PLAIN)),
            if_then(trip > 1, seq([
                consume(zero, done, PROLOGUE),
                tirx.For(cit, one, trip - 2, tirx.ForKind.SERIAL, consume(cit, done + cit, STEADY)),
                consume(trip - 1, done + trip - 1, LAST)]))])
    else:
        body = seq([
            if_then(trip > 0, consume(zero, done, PROLOGUE)),
            tirx.For(cit, one, trip - 1, tirx.ForKind.SERIAL, consume(cit, done + cit, STEADY)),
            if_then(trip > 0, consume(trip, done + trip, EPILOGUE))])
    return tirx.AttrStmt(zero, OVERLAP_REGION, tirx.const(int(pingpong), "int32"), body)


__all__ = ["OVERLAP_REGION", "ConsumerIteration", "ProducerLoads", "RingBarriers", "consumer_iterations"]
