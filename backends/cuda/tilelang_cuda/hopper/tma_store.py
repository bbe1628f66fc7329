"""TmaStore (on by default; ``tl.disable_tma_store`` keeps per-thread stores): the epilogue
``T.copy(fragment, global_tile)`` of a warp-specialized kernel goes through shared memory and
TMA stores instead of per-thread global stores.

The tile is written in 128-byte strips (``atom`` columns, 64 for fp16), one strip buffer of
``rows x atom`` in the 128-byte-swizzle layout (conflict-free register writes, what a swizzled TMA
box reads)::

    for each strip j:
        consumers: strip j of the fragment -> stage (cast to the tensor's type)
        fence.proxy.async; barrier                      # the writes, visible to the TMA unit
        consumer 0: TMA store stage -> tile strip j; commit; wait until the stage has been read
        barrier                                         # the stage may be written again

The TMA unit clips the box at the tensor's edges, so ragged tiles need no predicate. Why the
strips: the whole tile (64 KB for 128x256 fp16) does not fit next to a 4-stage ring; one strip is
16 KB. On the H200, GEMM 4096^3 fp16: 681-694 TFLOP/s against 632 with per-thread stores.
"""

from __future__ import annotations

from dataclasses import dataclass

from tvm import tirx

from tilelang_core.ir import Copy, TileOp, is_tile_op
from tilelang_core.ir import region as R
from tilelang_core.simt import intrinsics as I
from tilelang_core.simt.transform.state import if_then, seq

from .tma import TMA_DTYPES, NotSpecialized, TmaBox, check_tile, global_box
from .wgmma import ATOM_BYTES, element_bits, wgmma_shared_layout

FRAGMENT = "local.fragment"


@dataclass
class PlannedStore:
    index: int  # in the statements after the loop
    op: Copy
    box: TmaBox
    stage: object  # the strip buffer


def plan_stores(stmts: list, hopper_layouts: dict, budget: int | None = None,
                notes: list | None = None) -> tuple[list[PlannedStore], list]:
    """The epilogue copies TMA can store, each with its strip buffer (laid out in
    ``hopper_layouts``), and the allocations to add; others are left as they are. ``budget``:
    shared memory bytes still free (None: unknown); a strip buffer that does not fit is skipped,
    and ``notes`` says so."""
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
            if any(not isinstance(r.min, tirx.IntImm) or int(r.min) != 0 for r in op.src.region):
                raise NotSpecialized("part of a fragment")
            rows, cols = check_tile(str(frag.name), list(frag.ty.shape), dtype, "from")
            box = global_box(op.dst, rows, cols, str(frag.name), "to", op)
        except NotSpecialized:
            continue
        need = rows * ATOM_BYTES + ATOM_BYTES * 8  # the strip, and its 1024-byte alignment at most
        if budget is not None and need > budget:
            if notes is not None:
                notes.append(f"epilogue: {frag.name} -> {op.dst.source.name} by thread stores (a {rows * ATOM_BYTES} "
                             f"byte TMA strip buffer does not fit next to the pipeline: {budget} bytes free)")
            continue
        budget = None if budget is None else budget - need
        stage = tirx.decl_buffer((rows, box.atom), dtype, name=f"{frag.name}_stage", scope="shared.dyn")
        hopper_layouts[str(stage.name)] = wgmma_shared_layout(rows, box.atom, element_bits(dtype))
        planned.append(PlannedStore(i, op, box, stage))
        allocs.append(tirx.AllocBuffer(stage))
    return planned, allocs


def lower_stores(stmts: list, planned: list[PlannedStore], maps: dict, tx) -> list:
    """``stmts`` with each planned copy replaced by its strips (module docstring)."""
    out = list(stmts)
    for store in reversed(planned):
        box, stage, frag = store.box, store.stage, store.op.src
        tmap = tirx.address_of(maps[(box.tensor, box.box)])
        mins = [r.min for r in store.op.dst.region]
        strips = []
        for j in range(box.cols // box.atom):
            strips += [
                _strip_to_stage(frag.source, stage, j * box.atom),
                # (the block barriers around the store are insert_barriers': it sees the stage
                # written, then read through the store's address, then written again)
                I.call("tl_fence_proxy_async"),
                if_then(tx == 0, seq([
                    I.call(f"tl_tma_store<{box.rank}>", tirx.address_of(tirx.BufferLoad(stage, [0, 0])), tmap,
                           *box.strip_coords(mins, j)),
                    I.call("tl_bulk_commit"),
                    I.call("tl_bulk_wait_read<0>")])),
            ]
        out[store.index:store.index + 1] = strips
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
    parallel = {"tl.parallel": tirx.const(1, "int32")}
    inner = tirx.For(j, tirx.const(0, "int32"), tirx.const(cols, "int32"), tirx.ForKind.PARALLEL, store,
                     annotations=parallel)
    return tirx.For(i, tirx.const(0, "int32"), tirx.const(rows, "int32"), tirx.ForKind.PARALLEL, inner,
                    annotations=parallel)


__all__ = ["PlannedStore", "lower_stores", "plan_stores"]
