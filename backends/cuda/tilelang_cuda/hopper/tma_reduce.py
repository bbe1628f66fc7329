"""TmaReduce (opt-in, ``tl.enable_tma_reduce``: correct on the H200 but not faster there): a tile
``T.atomic_add(global_tile, shared_tile)`` of float32 inside a warp-specialized loop (the
FlashAttention backward's dQ) becomes TMA reduce-adds, issued by one consumer thread, instead of
16-byte vector reductions by every consumer thread (vector_atomics.py)::

    ... the loop body, up to the first write of the shared tile:
        consumer 0: wait until its earlier reduce-adds have read shared memory; barrier
        the writes of the shared tile (T.copy(dq, dq_s))
        fence.proxy.async; barrier                 # the writes, visible to the TMA unit
        consumer 0: one reduce-add per 128-byte strip of the tile; commit
    after the loop: consumer 0 waits for the last ones' reads

Why: the vector reductions ran through the consumers' load/store pipeline, 32 KB per iteration at
D128, where the next iteration's loads queued behind them; the TMA unit reads the tile from shared
memory on its own while the consumers go on (FlashAttention-3 hands dQ to a TMA reduce the same
way). The wait sits one iteration later, before the tile is written again, so it finds the reads
long done. Measured on the H200 (bench/NOTES.md stop 55): FlashAttention backward D128 319 against
321 TFLOP/s with the vector reductions, so the dQ adds were not what held it back; opt-in. The reduce-add is the same per-element float addition (in some order), at L2; the box
is clipped at the tensor's edges as a TMA store's is, so rows past a ragged end are not touched.

The shared tile takes the strip layout a swizzled box reads (wgmma_shared_layout: rows of 128
bytes, 16-byte chunks XOR-swizzled by row, which also keeps the fragment's writes free of bank
conflicts). Taken where: add, relaxed, a whole 2-D shared tile of static shape read by nothing
else in the loop but its own copy-in, destination a float32 global box TMA can address with the
128-byte swizzle, and no layout of the tile chosen elsewhere (a gemm operand, a TMA-loaded tile).
"""

from __future__ import annotations

from dataclasses import dataclass

from tvm import tirx

from tilelang_core.ir import Atomic, TileOp, is_tile_op
from tilelang_core.simt import intrinsics as I
from tilelang_core.simt.lowering import covers_whole_buffer
from tilelang_core.simt.transform.insert_barriers import accesses
from tilelang_core.simt.transform.state import if_then, seq

from ..vector_atomics import float32_tile_add
from .tma import NotSpecialized, TmaBox, check_tile, global_box
from .wgmma import element_bits, wgmma_shared_layout


@dataclass
class PlannedReduce:
    op: Atomic
    stmt: object  # the tile op statement in the loop body
    box: TmaBox


def plan_reduces(body_stmts: list, hopper_layouts: dict, notes: list | None = None) -> list[PlannedReduce]:
    """The loop's tile atomics the TMA unit can add (module docstring), their shared tiles laid
    out in ``hopper_layouts``; the others stay as they are."""
    planned = []
    for stmt in body_stmts:
        if not is_tile_op(stmt):
            continue
        op = TileOp.from_stmt(stmt)
        if not float32_tile_add(op):
            continue
        tile = op.src.source
        name = str(tile.name)
        if name in hopper_layouts or _read_elsewhere(tile, body_stmts, stmt):
            continue
        dtype = str(tile.ty.dtype)
        try:
            if not covers_whole_buffer(op.src):
                raise NotSpecialized("part of a shared tile")
            rows, cols = check_tile(name, list(tile.ty.shape), dtype, "from")
            box = global_box(op.dst, rows, cols, name, "to", op)
        except NotSpecialized:
            continue
        if box.swizzle != 128:
            continue
        hopper_layouts[name] = wgmma_shared_layout(rows, cols, element_bits(dtype))
        planned.append(PlannedReduce(op, stmt, box))
        if notes is not None:
            notes.append(f"atomic add {name} -> {box.tensor.name} by TMA reduce-adds ({box.cols // box.atom} strips)")
    return planned


def _read_elsewhere(tile, body_stmts, atomic_stmt) -> bool:
    """Does another statement of the loop read ``tile``? (Its reads would then have to wait for
    the TMA unit's too; the dQ tile is only written and reduced.)"""
    return any(tile in accesses(s)[0] for s in body_stmts if not s.same_as(atomic_stmt))


def lower_reduces(body_stmts: list, after: list, planned: list[PlannedReduce], maps: dict, tx) -> tuple[list, list]:
    """(loop body, statements after the loop) with each planned atomic replaced by its
    reduce-adds and the waits of the module docstring."""
    if not planned:
        return body_stmts, after
    out = list(body_stmts)
    for reduce in planned:
        box, tile = reduce.box, reduce.op.src.source
        tmap = tirx.address_of(maps[(box.tensor, box.box)])
        mins = [r.min for r in reduce.op.dst.region]
        strips = range(box.cols // box.atom)
        # (the barrier between the tile's writes and these reads is insert_barriers': the strips'
        # addresses are reads of the tile by consumer 0)
        issue = [I.call("tl_fence_proxy_async"), if_then(tx == 0, seq([
            *(I.call(f"tl_tma_reduce_add<{box.rank}>", tirx.address_of(tirx.BufferLoad(tile, [0, j * box.atom])),
                     tmap, *box.strip_coords(mins, j)) for j in strips),
            I.call("tl_bulk_commit")]))]
        at = next(i for i, s in enumerate(out) if s.same_as(reduce.stmt))
        out[at:at + 1] = issue
        # a tile written only before the loop is not written again until the wait after it
        first_write = next((i for i, s in enumerate(out) if tile in accesses(s)[1]), None)
        if first_write is not None:
            out[first_write:first_write] = [if_then(tx == 0, I.call("tl_bulk_wait_read<0>")), I.syncthreads()]
    return out, [if_then(tx == 0, I.call("tl_bulk_wait_read<0>"))] + list(after)


__all__ = ["PlannedReduce", "lower_reduces", "plan_reduces"]
