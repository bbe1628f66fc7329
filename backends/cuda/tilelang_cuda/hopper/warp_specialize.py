"""WarpSpecialize: a T.Pipelined loop fed by TMA from a producer warpgroup (sm_90a).

Where every leading copy of the loop body is a global -> shared tile a TMA box can carry, the
kernel gets one more warpgroup (threads C .. C+127 after the author's C) and becomes::

    host:  one tensor map per (global tensor, box), encoded before the launch (128-byte swizzle)
    if tx == 0: init full[g][s] (1 arrival) and empty[g][s] (C arrivals) for every tile group g
                and slot s (a group: the tiles one statement reads first; GEMM has one, attention
                two, K and V)
    barrier
    if tx >= C:                                  # producer warpgroup, few registers
        if tx == C:
            for k in range(n):                   # runs up to `stages` tiles ahead
                for each group g: wait empty[g][k % stages] (phase of round k / stages, flipped);
                    expect_tx full[g][k % stages] (its bytes); its TMA loads into slot k % stages
    else:                                        # consumer warpgroups: the author's code
        ... statements before the loop ...
        for k in range(n):
            the loop body on slot k % stages: wait full[g] before the first statement reading
            group g, arrive empty[g] once its last reader is done (consumer_schedule.py, which
            also overlaps wgmma gemms across iterations: GEMM's chain, attention's softmax
            under the previous P V; the loop then has a peeled first and last iteration)
        ... statements after the loop ...

With tl.enable_cluster_multicast, two neighbouring CTAs that load the same tiles share them by
TMA multicast (cluster.py): each loads half the strips into both, every empty barrier also counts
the peer's warps, and the cluster synchronizes after the barrier init and before exit.

The author's threads keep their indices 0 .. C-1, so every layout and lowering rule stays as it
is; their barriers become named barriers over C threads (``named_barriers``), because the
producer never reaches them. Shared tiles loaded by TMA take ``wgmma_shared_layout`` (what a
128-byte-swizzle box writes). Kernels outside this shape keep the cp.async pipeline
(tilelang_core.simt.transform.software_pipeline).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import tvm
import tvm_ffi
from tvm import tirx

from tilelang_core.ir import Gemm, TileOp, is_tile_op
from tilelang_core.ir.substitute import substitute_nested
from tilelang_core.layout import Layout
from tilelang_core.simt import intrinsics as I
from tilelang_core.simt.transform.insert_barriers import accesses, insert_barriers, touched
from tilelang_core.simt.transform.software_pipeline import (
    _check_no_stale_uses, _is_producer, mixed_staging, num_stages, _restage_allocs, _staged_buffer, leading_bindings,
    shared_bytes)
from tilelang_core.simt.transform.state import PIPELINE_REGION, if_then, seq
from tilelang_core.transform.bindings import bound_vars, uses_any

from .cluster import cluster_pair
from .consumer_schedule import consumer_plan, plan_note, tile_groups
from .occupancy import register_split, two_blocks_per_sm
from .persistent import persistent_tiles
from .stream_k import StreamKTiles, stream_k_declined, with_stream_k
from .pingpong import PINGPONG_LOOP, pingpong_overlap, strip_turns, wants_pingpong
from .ring_loops import OVERLAP_REGION, ConsumerIteration, ProducerLoads, RingBarriers, consumer_iterations
from .tma import LINEAR_ALIGN, NotSpecialized, load_box, tensor_maps
from .tma_reduce import lower_reduces, plan_reduces
from .tma_store import lower_stores, plan_stores
from .wgmma import WARPGROUP, element_bits, wgmma_shared_layout
from .zero_fill import fold_zero_fill

CONSUMER_REGION = "tl.ws_consumer"


def _launch_chain(body):
    chain, node = [], body
    while isinstance(node, tirx.AttrStmt) and node.attr_key == "thread_extent":
        chain.append(node)
        node = node.body
    return chain, node


def _rebuild_chain(chain, inner):
    for attr in reversed(chain):
        inner = tirx.AttrStmt(attr.node, attr.attr_key, attr.value, inner)
    return inner


def _contains_pipelined(stmt) -> bool:
    found = []
    tvm_ffi.structural_walk(stmt, [(tirx.For, lambda f: found.append(1) if num_stages(f) else None)])
    return bool(found)


@dataclass
class KernelParts:
    """A kernel's launch and the top-level statements warp specialization rewrites."""
    chain: list  #: the launch's thread_extent attributes, outermost first
    stmts: list  #: the launch's statements (a guarded kernel's: those before its `if`, then its body)
    at: int  #: the index of the T.Pipelined loop in ``stmts``
    guard: object = None  #: the block-uniform condition of an `if` around the kernel's work
    outer: int = 0  #: how many of ``stmts`` come before that `if`
    declared: frozenset = frozenset()  #: tensors declared in the kernel (T.make_tensor: no host address)

    @property
    def loop(self):
        return self.stmts[self.at]


def _flat(stmt) -> list:
    return list(stmt.seq) if isinstance(stmt, tirx.SeqStmt) else [stmt]


def kernel_parts(body, thread_var) -> KernelParts:
    """The launch, its statements and its one top-level T.Pipelined loop, or NotSpecialized(why).

    A kernel whose work sits in one ``if`` over a block-uniform condition, with only allocations
    and bindings beside it (MoE's ``if tile_group[by] >= 0:``, a masked layout's ``if by * bM <
    masked_m[bz]:``), is taken with the statements of the ``if`` as its own: producer and consumers
    then both run under the condition. Bindings (hoisted in front of the producer/consumer split)
    and the condition may read memory only where the kernel never writes it: hoisted, such a read
    could see a value from before the kernel's own store."""
    chain, inner = _launch_chain(body)
    if not chain:
        raise NotSpecialized("no thread launch")
    stmts, guard, outer = _flat(inner), None, 0
    work = [i for i, s in enumerate(stmts) if not isinstance(s, (tirx.AllocBuffer, tirx.Bind))]
    if len(work) == 1 and isinstance(stmts[work[0]], tirx.IfThenElse) and \
            stmts[work[0]].else_case is None and _contains_pipelined(stmts[work[0]].then_case):
        guard, outer = stmts[work[0]].condition, work[0]
        if uses_any(guard, [thread_var]):
            raise NotSpecialized("the T.Pipelined loop sits in an `if` on the thread index")
        stmts = stmts[:outer] + _flat(stmts[outer].then_case) + stmts[outer + 1:]
    loops = [i for i, s in enumerate(stmts) if isinstance(s, tirx.For) and num_stages(s) >= 1]
    if not loops and not _contains_pipelined(seq(stmts)):
        raise NotSpecialized("no T.Pipelined loop")
    if len(loops) != 1 or any(_contains_pipelined(s) for i, s in enumerate(stmts) if i != loops[0]):
        raise NotSpecialized("T.Pipelined loops nested or more than one (one at the kernel's top level is specialized)")
    if _contains_pipelined(stmts[loops[0]].body):
        raise NotSpecialized("nested T.Pipelined loops")
    written = touched(inner)[1]
    hoisted = [(f"'{b.var.name}'", b.value) for b in stmts if isinstance(b, tirx.Bind)]
    for name, value in hoisted + ([("the `if` around the pipeline", guard)] if guard is not None else []):
        if touched(value)[0] & written:
            raise NotSpecialized(f"{name} reads memory the kernel writes")
    declared = []
    tvm_ffi.structural_walk(inner, [(tirx.DeclBuffer, lambda d: declared.append(d.buffer))])
    return KernelParts(chain, stmts, loops[0], guard, outer, frozenset(declared))


def tile_operands(before, body_stmts, after, written) -> tuple[list, list]:
    """(``before`` without them, their TMA boxes): the global -> shared copies before the loop
    whose tile TMA can carry and which no other statement writes, and nothing before or after
    the loop reads: attention's Q, read only by the loop's gemms. A persistent schedule has the
    producer load them once per tile (warp_specialize)."""
    keep, boxes = [], []
    reads_writes = [(s, *accesses(s)) for s in before + after]
    loop_writes = set().union(*(accesses(s)[1] for s in body_stmts)) if body_stmts else set()
    for stmt in before:
        try:
            box = load_box(stmt) if _is_producer(stmt) else None
        except NotSpecialized:
            box = None
        dst = box.op.dst.source if box else None
        if box is None or dst in written or dst in loop_writes or \
                any(dst in reads | writes for s, reads, writes in reads_writes if s is not stmt):
            keep.append(stmt)
        else:
            boxes.append(box)
    return keep, boxes


def split_producers(body_stmts, in_place, declared) -> tuple[list, list, list]:
    """(the loop body's copies the producer takes, their TMA boxes, the other statements): every
    TMA-loadable global -> shared copy (FlashAttention's V copy sits mid-body), unless the body
    touches its tile before it; NotSpecialized(why) for a copy TMA cannot carry. ``in_place``:
    names bound in the loop to memory the kernel writes; ``declared``: tensors the kernel declares."""
    producers, boxes, rest, touched_tiles = [], [], [], set()
    for stmt in body_stmts:
        if _is_producer(stmt):
            box = load_box(stmt)  # a copy TMA cannot carry: the cp.async pipeline takes the loop
            if box.tensor in declared:
                raise NotSpecialized(f"copy from {box.tensor.name}: a tensor the kernel declares (T.make_tensor); "
                                     f"TMA encodes its address on the host")
            if box.op.dst.source in touched_tiles:
                raise NotSpecialized(f"{box.op.dst.source.name} is used in the loop before its copy")
            if uses_any(stmt, in_place):
                raise NotSpecialized(f"the copy into {box.op.dst.source.name} uses a name bound in the loop "
                                     f"to a value read from memory the kernel writes")
            producers.append(stmt)
            boxes.append(box)
            continue
        rest.append(stmt)
        reads, writes = accesses(stmt)
        touched_tiles |= reads | writes
    return producers, boxes, rest


def mark_tma_tiles(written, tile_boxes, body_stmts, hopper_layouts: dict, tma_loaded) -> set:
    """The TMA-loaded tiles take wgmma_shared_layout (what a swizzled box writes), 1-D ones their
    row-major order from a 128-byte aligned base (a linear box, tma.py); those only TMA
    writes go into ``tma_loaded`` (wgmma reading them needs no proxy fence). Returns the tiles the
    consumers also write in place."""
    rewritten = set()
    for stmt in body_stmts:
        rewritten |= accesses(stmt)[1]
    for buf in written + [b.op.dst.source for b in tile_boxes]:
        shape = [int(n) for n in buf.ty.shape]
        hopper_layouts[str(buf.name)] = replace(Layout.row_major(shape), align_bytes=LINEAR_ALIGN) if len(shape) == 1 \
            else wgmma_shared_layout(*shape, element_bits(str(buf.ty.dtype)))
        if tma_loaded is not None and buf not in rewritten:
            tma_loaded.add(str(buf.name))
    return rewritten


def fence_once(before, body_stmts, written, rewritten, fenced_once) -> list:
    """Shared operands the consumers write before the loop and never in it (attention's Q): one
    proxy fence after those writes serves every wgmma of the loop (``fenced_once``)."""
    before_writes = set().union(*(accesses(s)[1] for s in before)) if before else set()
    gemms = [op for op in (TileOp.from_stmt(s) for s in body_stmts if is_tile_op(s)) if isinstance(op, Gemm)]
    once = {str(x.source.name) for op in gemms for x in (op.A, op.B)
            if x.source in before_writes and x.source not in rewritten and x.source not in written}
    if once and fenced_once is not None:
        fenced_once |= once
        return before + [I.call("tl_fence_proxy_async")]
    return before


PERSISTENT_MODES = ("off", "tile_operands", "always")


def warp_specialize(body, st, hopper_layouts: dict, tma_loaded: set | None = None, pingpong: bool = False,
                    persistent: str = "off", overlap: bool = True, is_wgmma=None, notes: list | None = None,
                    fenced_once: set | None = None, tma_store: bool = False, shared_limit: int | None = None,
                    overlap_block: bool = False, conditional_mask: bool = True, cluster: bool = False,
                    two_blocks: bool = False, shared_per_sm: int | None = None, widest_n: int = 0,
                    fragment_regs: int = 0, stream_k: str = "off", tma_reduce: bool = False,
                    early_issue: bool = False):
    """The body rewritten as in the module docstring; NotSpecialized(why) when the kernel does not
    fit (no or several pipelined loops, a copy TMA cannot carry, thread counts that are not
    warpgroups): the caller keeps the cp.async pipeline and can tell the user why."""
    consumers = st.num_threads
    if consumers % WARPGROUP or consumers + WARPGROUP > 1024:
        raise NotSpecialized(f"{consumers} threads are not whole warpgroups with room for a producer")
    parts = kernel_parts(body, st.thread_var)
    chain, stmts, at, loop = parts.chain, parts.stmts, parts.at, parts.loop
    if parts.guard is not None:
        # one CTA per tile: a persistent CTA, a stream-K piece or a cluster pair would span tiles
        # whose guards differ
        persistent, stream_k, cluster = "off", "off", False
        if notes is not None:
            notes.append("the pipeline runs under the kernel's block-uniform `if` (one CTA per tile)")
    stages = max(1, num_stages(loop))
    binds, values, body_stmts = leading_bindings(loop, body)
    in_place = bound_vars(seq(body_stmts))  # bound to memory the kernel writes: not hoisted
    producers, boxes, rest = split_producers(body_stmts, in_place, parts.declared)
    body_stmts = fold_zero_fill(rest, loop, conditional=(is_wgmma or (lambda op: False)) if conditional_mask
                                else None)
    if not producers or not body_stmts:
        raise NotSpecialized("the loop has no global -> shared copies, or nothing else")
    written = [b.op.dst.source for b in boxes]
    if len(set(written)) != len(written):
        raise NotSpecialized("one shared tile filled twice in the loop")
    allocs = [s for s in stmts[:at] + stmts[at + 1:] if isinstance(s, tirx.AllocBuffer)]
    top_binds = [s for s in stmts if isinstance(s, tirx.Bind)]
    before = [s for s in stmts[:at] if not isinstance(s, (tirx.AllocBuffer, tirx.Bind))]
    after = [s for s in stmts[at + 1:] if not isinstance(s, (tirx.AllocBuffer, tirx.Bind))]
    n = loop.extent
    ring_bytes = shared_bytes(body, {buf: stages for buf in written}) + 8 * 2 * stages * len(written)
    if shared_limit is not None and ring_bytes > shared_limit:
        # every tile of a specialized kernel lives throughout it (producer and consumers run at
        # once); the cp.async pipeline lets later tiles reuse dead ones' bytes (shared_pool.py)
        raise NotSpecialized(f"its shared memory with the TMA ring ({ring_bytes} bytes) is more than "
                             f"the {shared_limit} a block may have")
    if persistent not in PERSISTENT_MODES:
        raise ValueError(f"persistent={persistent!r} must be one of {PERSISTENT_MODES}")
    # "tile_operands" (the default): persistent only where the producer can take over a per-tile
    # operand and the kernel does not run two blocks per SM instead (measured better for one
    # consumer warpgroup); a cluster pair takes precedence too
    two_fit = two_blocks and two_blocks_per_sm(consumers, ring_bytes, shared_per_sm, False, cluster, widest_n,
                                               fragment_regs)[0] is not None
    sk_declined = stream_k_declined(stream_k, persistent, two_fit, cluster)
    wanted = persistent == "always" or (persistent == "tile_operands" and not cluster and not two_fit) or \
        not sk_declined
    # tiles of different lengths (causal attention) take the dynamic scheduler
    # (the trip count through the kernel's names, nested ones too: whether it reads memory)
    tiles = persistent_tiles(chain, n, substitute_nested(n, {b.var: b.value for b in top_binds}), wanted,
                             consumers=consumers)
    # persistent: tiles the consumers copied in before the loop (attention's Q) come from the
    # producer, one load per tile issued under the previous tile's epilogue (tile_operands)
    before, tile_boxes = tile_operands(before, body_stmts, after, written) if tiles else (before, [])
    # loops whose state combines (GEMM, attention): the tail shared along K (stream_k.py)
    tiles = with_stream_k(tiles, stream_k, sk_declined, before, body_stmts, after, n, loop.loop_var, st.layouts, notes)
    if persistent == "tile_operands" and not tile_boxes and not isinstance(tiles, StreamKTiles):
        tiles = None  # other kernels without a per-tile operand: one CTA per tile
    stream = isinstance(tiles, StreamKTiles)
    trip = tiles.trip if stream else n  # iterations of this tile's loop (a stream-K piece: its k-range)

    mixed = mixed_staging(body_stmts, set(written))
    if mixed:
        raise NotSpecialized(mixed)
    staged = {buf: (_staged_buffer(buf, stages), stages) for buf in written}
    # tiles the consumers also write in place: wgmma then needs a proxy fence
    rewritten = mark_tma_tiles(written, tile_boxes, body_stmts, hopper_layouts, tma_loaded)
    if notes is not None and tile_boxes:
        notes.append("persistent: " + ", ".join(str(b.op.dst.source.name) for b in tile_boxes)
                     + " loaded by the producer once per tile, under the previous tile's epilogue")
    before = fence_once(before, body_stmts, written, rewritten, fenced_once)
    groups = tile_groups(body_stmts, written)
    group_of = {tile: g for g, tiles in enumerate(groups) for tile in tiles}
    ngroups = len(groups)
    ring = RingBarriers(stages, ngroups, bool(tile_boxes))

    # two resident blocks per SM (occupancy.py): each gets half the SM's shared memory
    half, why_not_two = two_blocks_per_sm(consumers, ring_bytes, shared_per_sm, bool(tiles), cluster, widest_n,
                                          fragment_regs) if two_blocks else (None, "")
    if notes is not None and two_blocks and consumers == WARPGROUP:  # wider blocks fill an SM alone
        notes.append("two blocks per SM: __launch_bounds__(threads, 2), setmaxnreg {}/{}".format(*register_split(1, 2))
                     if half else f"one block per SM ({why_not_two})")
    limit = half if half else shared_limit
    body_stmts, after, store_allocs, maps, host = tma_writes(
        body_stmts, after, boxes + tile_boxes, hopper_layouts, None if limit is None else limit - ring_bytes,
        notes, st.thread_var, tma_store, tma_reduce)
    allocs += store_allocs

    k, start = loop.loop_var, (loop.min + tiles.k0 if stream else loop.min)

    tx = st.thread_var
    plan, lazy, why, body_stmts = consumer_plan(body_stmts, groups, stages, is_wgmma or (lambda op: False), overlap,
                                                early_issue)
    # ping-pong turns only on top of the overlap (alone they serialize issue and wait: slower)
    pingpong = pingpong and plan is not None and wants_pingpong(body_stmts, consumers)
    if notes is not None and (note := plan_note(plan, lazy, why, pingpong)):
        notes.append(note)

    done = tiles.done if tiles else tirx.const(0, "int32")  # ring iterations of earlier tiles
    pair, multicast = _cluster_choice(chain, boxes, values, n, top_binds, cluster, tiles, notes)
    pit = tirx.Var("k_load", "int32")
    loads = ProducerLoads(ring, boxes, tile_boxes, group_of, staged, maps, values, k, start, multicast)
    producer_loop = tirx.For(pit, tirx.const(0, "int32"), trip, tirx.ForKind.SERIAL, loads.iteration(pit, done + pit))
    if tile_boxes:  # issued with the tile's first ring loads, under the last tile's epilogue
        producer_loop = seq([loads.tile_operands(tiles.t), producer_loop])
    consume = ConsumerIteration(ring, body_stmts, groups, binds, values, staged, k, start, tx, plan, lazy, pingpong,
                                overlap_block, multicast)
    consumer_loop = consumer_iterations(plan, consume, tirx.Var(str(k.name), "int32"), trip, done, pingpong)
    init = if_then(tx == 0, seq([
        *ring.init(consumers + (consumers // 32 if multicast else 0), consumers if tile_boxes else 0),
        *(tiles.init if tiles else []),
        I.call("tl_fence_barrier_init")]))
    per_tile = top_binds if tiles else []  # bindings of block indices move into the tile loop
    if tile_boxes:  # wait for this tile's operands last (the fills run under the load); release
        # them once the loop is done, so the producer loads the next tile's under this epilogue
        before = before + [I.call("tl_mbar_wait", ring.tile_full, tirx.floormod(tiles.t, 2))]
        consumer_loop = seq([consumer_loop, I.call("tl_mbar_arrive", ring.tile_empty)])
    if stream:  # a piece that ends inside its tile stores partial sums instead of the epilogue
        after = [tiles.epilogue(seq(after), tx)]
    consumer_work = insert_barriers(tiles.loop(seq(per_tile + before + [consumer_loop] + after), "consumer", n)
                                    if tiles else seq(before + [consumer_loop] + after))
    producer_work = if_then(tx == consumers, tiles.loop(seq(per_tile + [producer_loop]), "producer", n)
                            if tiles else producer_loop)
    split = _roles(producer_work, consumer_work, consumers, bool(half), tx)
    region = _pipeline_region(init, split, pair if multicast else None, bool(half), stages)
    allocs = allocs + [tirx.AllocBuffer(ring.buffer)]
    if parts.guard is not None:  # bindings from inside the `if` stay there (they may read memory)
        outer = [b for b in top_binds if any(b.same_as(s) for s in stmts[:parts.outer])]
        inner = [b for b in top_binds if not any(b.same_as(s) for s in outer)]
        new_inner = seq(allocs + outer + [if_then(parts.guard, seq(inner + [region]))])
    else:
        new_inner = seq(allocs + (tiles.allocs if tiles else top_binds) + [region])
    _check_no_stale_uses(seq(before + after), staged)
    new_inner = _restage_allocs(new_inner, staged)
    # The launch keeps C threads until finalize (with_producer_threads): the lowering proves
    # bounds with tx < C, which holds everywhere it looks (the producer branch has no tile ops).
    if tiles:
        return seq(host + tiles.host + [tiles.launch(chain, new_inner, tx)] + tiles.after)
    device = _rebuild_chain(chain, new_inner)
    return seq(host + [device])


def _cluster_choice(chain, boxes, values, n, top_binds, cluster: bool, tiles, notes):
    """(the cluster pair or None, the tiles multicast to both CTAs) where
    ``tl.enable_cluster_multicast`` asks for one (cluster.py); never with a persistent walk."""
    pair, why_not = cluster_pair(chain, boxes, values, n, top_binds) if cluster and not tiles else \
        (None, "tl.enable_persistent" if cluster else "")
    if notes is not None and pair:
        notes.append(f"cluster of 2 along {pair[0]}: " + ", ".join(str(b.op.dst.source.name) for b in pair[1])
                     + " loaded half by each CTA, multicast to both")
    elif notes is not None and cluster:
        notes.append(f"no cluster ({why_not})")
    return pair, set(pair[1]) if pair else set()


def _roles(producer_work, consumer_work, consumers: int, two_blocks: bool, tx):
    """The producer warpgroup (thread ``consumers`` on) and the consumer region, each with its
    register share where the split pays (occupancy.register_split)."""
    rebalance = (consumers >= 2 * WARPGROUP or two_blocks) and consumers % WARPGROUP == 0
    producer_regs, consumer_regs = register_split(consumers // WARPGROUP, 2 if two_blocks else 1)
    producer = seq([I.call(f"tl_setmaxnreg_dec<{producer_regs}>") if rebalance else None, producer_work])
    consumer = tirx.AttrStmt(tirx.const(0, "int32"), CONSUMER_REGION, tirx.const(consumers, "int32"), seq([
        I.call(f"tl_setmaxnreg_inc<{consumer_regs}>") if rebalance else None,
        pingpong_overlap(consumer_work, tx, OVERLAP_REGION)]))
    return tirx.IfThenElse(tx >= consumers, producer, consumer)


def _pipeline_region(init, split, pair, two_blocks: bool, stages: int):
    """The barriers' initialization, then both roles, marked as the pipeline region; a cluster
    pair syncs around them, two blocks per SM say so to the launch bounds."""
    if pair:
        # the peer multicasts into this CTA's slots and arrives on its barriers: neither CTA may
        # start before both have initialized them, nor exit while the other may still do so
        dims = [tirx.const(2 if f"blockIdx.{d}" == pair[0] else 1, "int32") for d in "xyz"]
        body = [I.call("tl_cluster_dims", *dims), init, I.call("tl_cluster_sync"), split, I.call("tl_cluster_sync")]
    else:
        body = [init, I.syncthreads(), split]
    if two_blocks:
        body.insert(0, I.call("tl_min_blocks_per_sm", tirx.const(2, "int32")))
    return tirx.AttrStmt(tirx.const(0, "int32"), PIPELINE_REGION, tirx.const(stages, "int32"), seq(body))


def tma_writes(body_stmts, after, load_boxes, hopper_layouts: dict, budget, notes, tx, stores: bool,
               reduces: bool):
    """The writes to global memory the TMA unit takes over: where ``stores``, the epilogue's
    fragment -> global copies through shared strips (tma_store.py; ``budget``: shared bytes free
    for them); where ``reduces``, the loop's float32 tile atomic adds from shared memory
    (tma_reduce.py). Returns
    (loop body, statements after the loop, allocations to add, tensor maps of ``load_boxes`` and
    theirs, host statements encoding the maps)."""
    planned, allocs = plan_stores(after, hopper_layouts, budget, notes) if stores else ([], [])
    adds = plan_reduces(body_stmts, hopper_layouts, notes) if reduces else []
    maps, host = tensor_maps(load_boxes + [store.box for store in planned] + [add.box for add in adds])
    after = lower_stores(after, planned, maps, tx)
    body_stmts, after = lower_reduces(body_stmts, after, adds, maps, tx)
    if notes is not None and planned:
        notes.append("epilogue: " + ", ".join(f"{store.op.src.source.name} -> {store.box.tensor.name} by TMA stores "
                                              f"({store.box.cols // store.box.atom} strips)" for store in planned))
    return body_stmts, after, allocs, maps, host


def with_producer_threads(body, thread_var, threads: int):
    """The launch's block size raised to ``threads`` (consumers + the producer warpgroup)."""
    def on_attr(attr):
        if attr.attr_key == "thread_extent" and attr.node.var.same_as(thread_var):
            return tirx.AttrStmt(attr.node, attr.attr_key, tirx.const(threads, str(attr.value.ty)), attr.body)
        return attr

    return tvm_ffi.structural_map(body, [(tirx.AttrStmt, on_attr)])


def named_barriers(body):
    """Barriers inside the consumer region -> ``bar.sync 1, C`` (the producer never arrives)."""
    def visit(node):
        if isinstance(node, tirx.AttrStmt) and node.attr_key == CONSUMER_REGION:
            count = node.value

            def on_eval(ev):
                call = ev.value
                if isinstance(call, tvm.ir.Call) and hasattr(call, "op") and \
                        str(getattr(call.op, "name", "")) == "tirx.tvm_storage_sync":
                    return I.call("tl_named_barrier_sync", tirx.const(1, "int32"), count)
                return ev

            return tvm_ffi.structural_map(node.body, [(tirx.Evaluate, on_eval)])
        if isinstance(node, tirx.AttrStmt) and node.attr_key == PINGPONG_LOOP:
            # A block barrier inside the loop (one a reduction's lowering placed) would deadlock
            # against a warpgroup waiting for its turn: such loops run without turns.
            syncs = []
            tvm_ffi.structural_walk(node.body, [(tvm.ir.Call, lambda c: syncs.append(1) if str(
                getattr(c.op, "name", "")) == "tirx.tvm_storage_sync" else None)])
            return strip_turns(node.body) if syncs else node.body
        return None

    def on_attr(node):
        out = visit(node)
        return node if out is None else out

    return tvm_ffi.structural_map(body, [(tirx.AttrStmt, on_attr)])
