"""Dynamic tile scheduler for persistent kernels whose tiles run different trip counts (causal
attention; the default there, ``tl.disable_persistent`` turns it off).

A static walk (CTA c takes tiles c, c + CTAs, ...) leaves causal attention's CTAs unevenly loaded:
at S4096 the busiest does 12% more than the mean, against 4% for the hardware's own dispatch of
one CTA per tile (``bench/causal_schedule_sim.py``). Here a counter in global memory hands out
tiles in order instead, each to the CTA that asks first, and the order is longest first within
chunks of ``CHUNK`` heads (balanced, and the K/V of a chunk stays in the L2; all heads' longest
row blocks first would put as many heads' K/V in flight as there are CTAs)::

    host:  counter = 4 zeroed bytes, stream-ordered (cudaMallocAsync + cudaMemsetAsync on the
           launch stream; intrinsics.SCRATCH_HOST); freed the same way after the launch
    producer thread:
        tile = atomicAdd(counter, 1); j = 0
        while tile < tiles:   publish tile in slot j % 2 (wait empty, write, arrive full)
                              the tile's loads; ring position += its trip count; j += 1
                              tile = atomicAdd(counter, 1)
        publish tile          # >= tiles: the consumers stop
    consumers:
        tile = receive slot 0 (wait full, read, arrive empty); j = 0
        while tile < tiles:   the tile's work; ring position += its trip count; j += 1
                              tile = receive slot j % 2

The ring of loads continues across a CTA's tiles at the running sum of their trip counts, as the
static walk's ``t * n`` does for tiles of one length. The while loops are built as a For over
at most ``tiles`` rounds whose body runs only while the tile is valid (the passes up to Finalize
know For loops, not While), and ``walks_to_while`` makes them real while loops in Finalize.

Measured on the H200, causal B8 H16 S4096 D128 (bench/causal_probe.py, device time): 593 TFLOP/s
against 573 for one CTA per tile and 560 for cuDNN; 8-head chunks 593, 1-head 532, all 128 heads
465 (the L2 argument above); in the benchmark's turns 555 vs 528 (1.04x vs 0.99x of cuDNN).
"""

from __future__ import annotations

import tvm_ffi
from tvm import tirx

from tilelang_core.simt import intrinsics as I
from tilelang_core.simt.transform.longest_first import extents_along_x
from tilelang_core.simt.transform.state import if_then, seq

from .intrinsics import scratch_statements

#: For annotation of a walk over claimed tiles (the For + If form the passes before Finalize
#: know), which ``walks_to_while`` turns into the while loop it stands for
WALK = "tl.tile_walk"

#: the device helper a producer claims its next tile with (intrinsics.py); other passes find the
#: scheduler's kernels by it (transform/fast_divide.py)
CLAIM = "tl_claim_tile"

#: heads (batch x head pairs) per chunk: 8 x 2 MB of K/V at S4096 D128 fit the H200's 50 MB L2
CHUNK = 8

def longest_first_order(blocks, n_value) -> bool:
    """Whether the trip count ``n_value`` never shrinks along blockIdx.x (causal attention's row
    blocks cost more the larger it is): the order then starts each chunk at the last row block."""
    bx, gx = blocks[0]
    counts = extents_along_x(n_value, bx, gx)
    return counts is not None and all(a <= b for a, b in zip(counts, counts[1:]))


class DynamicTiles:
    """The persistent walk with tiles handed out by a counter (module docstring). Same interface
    as persistent._PersistentTiles: ``host``/``after`` statements around the launch, ``allocs``
    and ``init`` for the block, ``t`` (this CTA's tile index) and ``done`` (ring iterations of
    its earlier tiles), ``loop(body, role, n)`` and ``launch``."""

    def __init__(self, static, n_value, consumers: int):
        self.static = static  # the static walk: its grid, and its launch of min(tiles, SMs) CTAs
        self.blocks, self.total = static.blocks, static.total  # [(block var, static extent)], x first
        self.consumers = consumers
        self.grows = longest_first_order(self.blocks, n_value)
        self.counter = tirx.Var("tl_tile_counter", "handle")
        four = tirx.const(4, "int64")  # bytes of the counter, all zeroed
        host, self.after = scratch_statements(self.counter, four, four, "the tile counter of a persistent kernel")
        self.host = static.host + host
        self.slots = tirx.decl_buffer((2,), "int32", name="tl_sched_tile", scope="shared")
        self.bars = tirx.decl_buffer((4,), "uint64", name="tl_sched_mbar", scope="shared")
        self.cur = tirx.decl_buffer((1,), "int32", name="tl_tile_cur", scope="local")
        self.seq = tirx.decl_buffer((1,), "int32", name="tl_tile_seq", scope="local")
        self.ring = tirx.decl_buffer((1,), "int32", name="tl_ring_done", scope="local")
        self.allocs = [tirx.AllocBuffer(b) for b in (self.slots, self.bars, self.cur, self.seq, self.ring)]
        self.init = [I.call("tl_mbar_init", self._bar(s), tirx.const(1, "int32")) for s in (0, 1)] + \
                    [I.call("tl_mbar_init", self._bar(2 + s), tirx.const(consumers, "int32")) for s in (0, 1)]
        self.t = tirx.BufferLoad(self.seq, [0])
        self.done = tirx.BufferLoad(self.ring, [0])
        # one tile variable for both walks: the block indices (and what is bound to them, e.g.
        # causal attention's loop_range) are then the same expressions on both sides
        self.tile = tirx.Var("tl_tile", "int32")

    def _bar(self, i):
        return tirx.address_of(tirx.BufferLoad(self.bars, [i]))

    def _slot_bar(self, base: int, j):
        return tirx.address_of(tirx.BufferLoad(self.bars, [base + tirx.floormod(j, 2)]))

    def _publish(self, tile, j):
        """Producer: tile -> slot j % 2, once the consumers have read what it held before."""
        phase = tirx.floormod(tirx.floordiv(j, 2), 2)
        return seq([I.call("tl_mbar_wait", self._slot_bar(2, j), 1 - phase),
                    tirx.BufferStore(self.slots, tile, [tirx.floormod(j, 2)]),
                    I.call("tl_mbar_arrive", self._slot_bar(0, j))])

    def _receive(self, j):
        """Consumers: the tile in slot j % 2 -> cur; the slot goes back."""
        phase = tirx.floormod(tirx.floordiv(j, 2), 2)
        return seq([I.call("tl_mbar_wait", self._slot_bar(0, j), phase),
                    tirx.BufferStore(self.cur, tirx.BufferLoad(self.slots, [tirx.floormod(j, 2)]), [0]),
                    I.call("tl_mbar_arrive", self._slot_bar(2, j))])

    def _claim(self):
        return tirx.BufferStore(self.cur, I.call(CLAIM, self.counter, dtype="int32"), [0])

    def block_indices(self, tile):
        """{block var: its index in ``tile``}: chunks of CHUNK heads one after another; within a
        chunk, row block by row block (the longest first where trip counts grow along x), every
        head of the chunk at each."""
        (bx, gx), rest = self.blocks[0], self.blocks[1:]
        heads = self.total // gx
        chunk = min(CHUNK, heads)
        whole = heads // chunk * chunk  # heads in whole chunks; the rest form one smaller chunk
        body = tirx.const(whole * gx, "int32")
        level = tirx.floordiv(tirx.floormod(tile, chunk * gx), chunk)
        head = tirx.floordiv(tile, chunk * gx) * chunk + tirx.floormod(tile, chunk)
        if whole < heads:
            tail = heads - whole
            level = tirx.Select(tile < body, level, tirx.floordiv(tile - body, tail))
            head = tirx.Select(tile < body, head, whole + tirx.floormod(tile - body, tail))
        vmap = {bx: (gx - 1 - level) if self.grows else level}
        stride = 1
        for var, extent in rest:
            vmap[var] = tirx.floormod(tirx.floordiv(head, stride), extent)
            stride *= extent
        return vmap

    def loop(self, body, role: str, n):
        """The walk for ``role`` ("producer": one thread claims and publishes; "consumer"),
        running ``body`` (written for the old block indices) once per tile of trip count ``n``."""
        tile = self.tile
        # each block index bound once per tile: its uses read one register instead of each
        # recomputing (and ptxas keeping) the chunk arithmetic
        indices = [tirx.Bind(var, value) for var, value in self.block_indices(tile).items()]
        total = tirx.const(self.total, "int32")
        advance = [tirx.BufferStore(self.ring, self.done + n, [0]),
                   tirx.BufferStore(self.seq, self.t + 1, [0])]
        fetch = self._claim() if role == "producer" else self._receive(self.t)
        step = [self._publish(tile, self.t)] if role == "producer" else []
        rounds = tirx.Var("tl_round", "int32")
        iteration = if_then(tirx.BufferLoad(self.cur, [0]) < total, seq([
            tirx.Bind(tile, tirx.BufferLoad(self.cur, [0])), *indices, *step, body, *advance, fetch]))
        start = [tirx.BufferStore(self.seq, tirx.const(0, "int32"), [0]),
                 tirx.BufferStore(self.ring, tirx.const(0, "int32"), [0]),
                 self._claim() if role == "producer" else self._receive(tirx.const(0, "int32"))]
        walk = tirx.For(rounds, tirx.const(0, "int32"), total, tirx.ForKind.SERIAL, iteration,
                        annotations={WALK: 1})
        finish = [self._publish(tirx.BufferLoad(self.cur, [0]), self.t)] if role == "producer" else []
        return seq(start + [walk] + finish)

    def launch(self, chain, inner, thread_var):
        return self.static.launch(chain, inner, thread_var)


def walks_to_while(body):
    """Each ``for (round < tiles) { if (tile valid) { work } barriers }`` walk -> ``while (tile
    valid) { work barriers }``. The For form keeps every pass before this one working on loops
    it knows, but it spins through all ``tiles`` rounds after the last claim, and the barrier that
    InsertBarriers put after the If runs in each of them: measured 455 against 579 TFLOP/s of the
    one-CTA-per-tile launch (causal S4096 D128, device time; ~4,000 idle rounds per CTA)."""
    def on_for(loop):
        if loop.annotations is None or WALK not in loop.annotations:
            return None
        stmts = list(loop.body.seq) if isinstance(loop.body, tirx.SeqStmt) else [loop.body]
        guard, rest = stmts[0], stmts[1:]
        if not isinstance(guard, tirx.IfThenElse) or guard.else_case is not None:
            raise AssertionError(f"a tile walk's body must start with its validity test, got {type(guard).__name__}")
        return tirx.While(guard.condition, seq([guard.then_case, *rest]))

    def visit(loop):
        out = on_for(loop)
        return loop if out is None else out

    return tvm_ffi.structural_map(body, [(tirx.For, visit)])


__all__ = ["CHUNK", "CLAIM", "DynamicTiles", "WALK", "longest_first_order", "walks_to_while"]
