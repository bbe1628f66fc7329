"""TmaStore (on by default; ``tl.disable_tma_store`` keeps per-thread stores): the epilogue
``T.copy(fragment, global_tile)`` of a warp-specialized kernel goes through shared memory and
TMA stores instead of per-thread global stores.

The tile is written in 128-byte strips (``atom`` columns, 64 for fp16) through as many strip
buffers of ``rows x atom`` as fit next to the pipeline (at most one per strip), each in the
128-byte-swizzle layout (conflict-free register writes, what a swizzled TMA box reads)::

    for each round of as many strips as there are buffers:
        consumers: strip j of the fragment -> buffer j % buffers (cast to the tensor's type)
        fence.proxy.async; barrier                      # the writes, visible to the TMA unit
        consumer 0: one TMA store per buffer -> tile strip j; commit; wait until all were read
        barrier                                         # the buffers may be written again

The TMA unit clips the box at the tensor's edges, so ragged tiles need no predicate. Why strips:
the whole tile (64 KB for 128x256 fp16) does not fit next to a 4-stage ring; one strip is 16 KB,
and two fit there, which halves the rounds (each a barrier and a wait for the TMA unit's reads).
On the H200, GEMM 4096^3 fp16 with one buffer: 681-694 TFLOP/s against 632 with per-thread stores.
"""

from __future__ import annotations

from dataclasses import dataclass

from tvm import tirx

from tilelang_core.ir import Copy, TileOp, is_tile_op
from tilelang_core.ir import region as R
from tilelang_core.ir.elementwise import parallel_loop
from tilelang_core.simt import intrinsics as I
from tilelang_core.simt.lowering import covers_whole_buffer
from tilelang_core.simt.transform.state import if_then, seq

from .tma import TMA_DTYPES, NotSpecialized, TmaBox, check_tile, global_box
from .wgmma import element_bits, wgmma_shared_layout

FRAGMENT = "local.fragment"


@dataclass
class PlannedStore:
    index: int  # in the statements after the loop
    op: Copy
    box: TmaBox
    stages: list  # the strip buffers


def plan_stores(stmts: list, hopper_layouts: dict, budget: int | None = None,
                notes: list | None = None) -> tuple[list[PlannedStore], list]:
    """The epilogue copies TMA can store, each with its strip buffers (laid out in
    ``hopper_layouts``), and the allocations to add; others are left as they are. ``budget``:
    shared memory bytes still free (None: unknown, then one buffer per copy); a copy gets as many
    buffers as fit, up to one per strip; where not even one fits it is skipped, and ``notes``
    says so."""
    planned, allocs = [], []
    for i, stmt in enumerate(stmts):
        if not is_tile_op(stmt):
            continue
        op = TileOp.from_stmt(stmt)
        if not isinstance(op, Copy) or R.scope_of(op.src) != FRAGMENT or R.scope_of(op.dst) not in ("global", ""):
            continue
        dtype = str(op.dst.source.ty.dtype)
        if dtype not in TMA_DTYPES:
            continue
        frag = op.src.source
        try:
            if not covers_whole_buffer(op.src):  # acc_o[:valid_h, :]: the box would store it all
                raise NotSpecialized("part of a fragment")
            rows, cols = check_tile(str(frag.name), list(frag.ty.shape), dtype, "from")
            box = global_box(op.dst, rows, cols, str(frag.name), "to", op)
        except NotSpecialized:
            continue
        if box.swizzle != 128:  # 64-byte strips load correctly on the H200; stores have not run there yet
            continue
        strip = rows * box.atom * box.elem_bytes
        need = strip + box.swizzle * 8  # the strip, and its alignment (a whole 8-row swizzle period) at most
        if budget is not None and need > budget:
            if notes is not None:
                notes.append(f"epilogue: {frag.name} -> {op.dst.source.name} by thread stores (a {strip} "
                             f"byte TMA strip buffer does not fit next to the pipeline: {budget} bytes free)")
            continue
        count = 1 if budget is None else min(box.cols // box.atom, budget // need)
        budget = None if budget is None else budget - count * need
        stages = [tirx.decl_buffer((rows, box.atom), dtype, name=f"{frag.name}_stage{b}", scope="shared.dyn")
                  for b in range(count)]
        for stage in stages:
            hopper_layouts[str(stage.name)] = wgmma_shared_layout(rows, box.atom, element_bits(dtype))
        planned.append(PlannedStore(i, op, box, stages))
        allocs += [tirx.AllocBuffer(stage) for stage in stages]
    return planned, allocs


def lower_stores(stmts: list, planned: list[PlannedStore], maps: dict, tx) -> list:
    """``stmts`` with each planned copy replaced by its rounds of strips (module docstring)."""
    out = list(stmts)
    for store in reversed(planned):
        box, stages, frag = store.box, store.stages, store.op.src
        tmap = tirx.address_of(maps[(box.tensor, box.box)])
        mins = [r.min for r in store.op.dst.region]
        strips = list(range(box.cols // box.atom))
        rounds = []
        for first in range(0, len(strips), len(stages)):
            round_strips = list(zip(stages, strips[first:first + len(stages)]))
            rounds += [_strip_to_stage(frag.source, stage, j * box.atom) for stage, j in round_strips]
            # (the block barriers around the stores are insert_barriers': it sees the buffers
            # written, then read through the stores' addresses, then written again)
            rounds += [
                I.call("tl_fence_proxy_async"),
                if_then(tx == 0, seq([
                    *(I.call(f"tl_tma_store<{box.rank}>", tirx.address_of(tirx.BufferLoad(stage, [0, 0])), tmap,
                             *box.strip_coords(mins, j)) for stage, j in round_strips),
                    I.call("tl_bulk_commit"),
                    I.call("tl_bulk_wait_read<0>")])),
            ]
        out[store.index:store.index + 1] = rounds
    return out


def _strip_to_stage(frag, stage, col0: int):
    """``T.Parallel`` over the whole fragment (tile ops and parallel loops take fragments whole),
    storing the columns ``col0 .. col0 + atom`` into the strip buffer."""
    rows, cols = (int(s) for s in frag.ty.shape)
    atom = int(stage.ty.shape[1])
    i, j = tirx.Var("i", "int32"), tirx.Var("j", "int32")
    value = tirx.BufferLoad(frag, [i, j])
    if str(frag.ty.dtype) != str(stage.ty.dtype):
        value = tirx.Cast(str(stage.ty.dtype), value)
    store = tirx.IfThenElse(tirx.all(col0 <= j, j < col0 + atom),
                            tirx.BufferStore(stage, value, [i, j - col0]), None)
    return parallel_loop(i, rows, parallel_loop(j, cols, store))


__all__ = ["PlannedStore", "lower_stores", "plan_stores"]
