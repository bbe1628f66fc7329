"""The consumers' side of a warp-specialized loop: when each group of TMA tiles is awaited and
released, and FlashAttention-3's intra-warpgroup overlap for bodies with two wgmma gemms.

Tiles are grouped by the statement that first reads them (attention: K by the first gemm, V by
the second); each group has its own full/empty mbarrier pair per ring slot, so the consumers wait
for V only where V is read and hand K's slot back as soon as its gemm is done.

Overlap. A body ``pre, G1, middle, G2`` (G1 and G2 wgmma gemms; attention: mask, S = Q K^T,
softmax, O += P V) runs the tail D of iteration j-1 (G2 and the statements that can move with it:
the rescale of O) right after G1 of iteration j has been issued::

    prologue  (j = 0):   pre(0), issue G1(0), middle(0)
    for j in 1 .. n-1:   pre(j), issue G1(j), D(j-1): ..., issue G2(j-1)
                         middle(j): waits for G1(j) (wgmma.wait_group 1) before touching S,
                                    for G2(j-1) (wait_group 0) before touching P or O
    epilogue (n > 0):    D(n-1), wait_group 0

so the softmax of iteration j runs while the tensor cores compute P V of iteration j-1. A statement
joins D only when moving it there reorders nothing it depends on (``plan_overlap``).

Chain. A body whose only gemm accumulates across iterations (GEMM's main loop, a ring of at least
CHAIN_MIN_SLOTS slots) keeps one wgmma batch in flight: iteration j issues its gemm, then waits for
j-1's (wait_group 1) and only then hands j-1's tiles back, so the tensor cores never drain between
k-tiles. The price is a slot: the batch in flight holds one the producer could refill. With fewer
slots each batch is awaited right after it is issued (the two consumer warpgroups still keep the
tensor cores busy between each other's batches)::

    prologue: issue G(0)    for j in 1 .. n-2: issue G(j), wait G(j-1), release
    last (j = n-1): issue G(n-1), wait for both, release both          (n = 1: issue G(0), wait)

Lazy waits. A body neither plan fits still runs its wgmma gemms asynchronously within the
iteration (``lazy_gemms``): a gemm followed by statements that do not touch its operands or
accumulator is issued, those statements run under it, and it is awaited (wait_group counting the
batches issued since) just before the first statement that does touch them, or at the end of the
iteration. FP8 with block scales promotes one slab while the next slab's wgmma runs::

    issue G(slab0)    acc += slab1 * s1    issue G(slab1)    wait_group 1    acc += slab0 * s0    wait_group 0

Issue order (opt-in, ``tl.enable_early_gemm_issue``: not yet measured). In a plain iteration a
wgmma gemm that needs nothing computed between it and the gemm before it is issued right after
that gemm, and adjacent independent gemms are issued in the order their results are first read
(``issue_order``). FlashAttention backward, written S = K Q^T; exp; dP = V dO^T; ...;
dK += dS^T Q; dQ = dS K; store dQ::

    issue S, issue dP    wait_group 1    exp (under dP)    ...    issue dQ, issue dK    wait_group 1    store dQ (under dK)

The last iteration is peeled (LAST) so that the final wait_group 0 sits in the same basic block as
the batch it waits for: with the wait after the loop instead, ptxas 13.0 moved the epilogue's
reads of the accumulator above it (H200: a quarter of a GEMM's output wrong, sass showed F2FP
before WARPGROUP.DEPBAR.LE gsb0, 0x0).

Everything here is a plan of ``Event`` s over the body's statement indices; ring_loops.py turns
them into statements (mbarrier waits and arrives, gemm issues and waits).
"""

from __future__ import annotations

from dataclasses import dataclass

from tvm import tirx

from tilelang_core.errors import LoweringError
from tilelang_core.ir import Gemm, TileOp, is_tile_op
from tilelang_core.simt.transform.insert_barriers import conflict, touched
from tilelang_core.simt.transform.shared_races import is_shared
from tilelang_core.transform.bindings import calls_above, uses_any

PROLOGUE, STEADY, EPILOGUE, PLAIN, LAST = "prologue", "steady", "epilogue", "plain", "last"


@dataclass(frozen=True)
class Event:
    """``kind``: "run" (statement ``index`` as written), "issue" (gemm ``index`` without waiting),
    "wait" (wgmma.wait_group ``pending`` for gemm ``index``), "acquire"/"release" (tile ``group``:
    wait for its full barrier / arrive on its empty barrier). ``lag`` 1 = of the previous
    iteration."""

    kind: str
    index: int = -1
    lag: int = 0
    group: int = -1
    pending: int = 0
    #: on a "wait": indices of the gemms still in flight after it
    busy: tuple = ()


def _conflict(a, b) -> bool:
    return conflict(*a, *b)


def tile_groups(body: list, tiles: list) -> list[list]:
    """The TMA tiles grouped by the first statement of ``body`` that reads them, in that order."""
    reads = [touched(s)[0] for s in body]
    first = {}
    for tile in tiles:
        first.setdefault(next((i for i, r in enumerate(reads) if tile in r), len(body)), []).append(tile)
    return [first[i] for i in sorted(first)]


def plan_overlap(body: list, is_wgmma, stages: int = 2) -> tuple[tuple[int, tuple[int, ...]] | None, str]:
    """((index of G1, indices of D), "") or (None, why not). ``is_wgmma(op)``: the gemm runs on
    wgmma (only those can be issued and awaited apart). A single gemm accumulating across the
    loop gives (its index, ()): the chain of module docstring."""
    gemms = [i for i, s in enumerate(body) if is_tile_op(s) and isinstance(TileOp.from_stmt(s), Gemm)]
    if len(gemms) == 1:
        return _plan_chain(body, gemms[0], is_wgmma, stages)
    if len(gemms) < 2:
        return None, "no gemm in the loop"
    g1, g2 = gemms[0], gemms[-1]
    if g2 != len(body) - 1:
        return None, "statements after the last gemm"
    if g2 - g1 < 2:
        return None, "no work between the first and the last gemm"
    if not all(is_wgmma(TileOp.from_stmt(body[i])) for i in (g1, g2)):
        return None, "a gemm not on wgmma"
    # Names the body binds in place (to memory the kernel writes; the others were hoisted to the
    # top and are inlined into deferred statements): D(j-1) runs after iteration j bound them
    # again, so neither such a binding nor a statement using its name may be deferred.
    in_place = [s.var for s in body if isinstance(s, tirx.Bind)]
    if uses_any(body[g2], in_place):
        return None, "the last gemm uses a name bound in the loop body"
    access = [touched(s) for s in body]
    pre = [access[i] for i in range(g1 + 1)]
    deferred = [g2]
    # Walking back from G2: D(j-1) will run after pre(j) and G1(j) (still in flight), and after
    # the statements of iteration j-1 that follow it in the body and stay behind.
    for i in range(g2 - 1, g1, -1):
        later = [access[j] for j in range(i + 1, g2) if j not in deferred]
        if any(_conflict(access[i], a) for a in pre + later):
            continue
        if isinstance(body[i], tirx.Bind) or uses_any(body[i], in_place):
            continue
        deferred.append(i)
    if stages < 2:
        # D(j-1) runs after G1(j) is issued, so a tile both read there and acquired by pre(j) or
        # G1(j) (MLA: KV feeds both gemms) needs its slot of j-1 and of j at once: with one slot
        # the consumers would wait for a load the producer cannot start before they release it
        early = set().union(*(access[i][0] for i in range(g1 + 1)))
        late = set().union(*(access[i][0] for i in deferred))
        if any(is_shared(b) for b in early & late):
            return None, "one ring slot, and the last gemm reads a tile the first one reads too"
    return (g1, tuple(sorted(deferred))), ""


#: ring slots a GEMM main loop needs before it keeps a wgmma batch in flight. H200, 128x256x64
#: fp16 in 4 slots: 1.3-1.5% slower than awaiting each batch (five interleaved runs at 4096^3 and
#: 8192^3; ncu 2.31M vs 2.28M cycles at 8192^3); in 2 slots (128x256x128) 519 vs 695 TFLOP/s.
#: Five or more slots (smaller tiles) are not measured yet.
CHAIN_MIN_SLOTS = 5


def _plan_chain(body: list, g: int, is_wgmma, stages: int):
    op = TileOp.from_stmt(body[g])
    if op.clear_accum:
        return None, "the gemm clears its accumulator every iteration"
    if stages < CHAIN_MIN_SLOTS:
        return None, f"{stages} ring slots; a chain, whose batch in flight holds one, needs {CHAIN_MIN_SLOTS}"
    if not is_wgmma(op):
        return None, "the gemm is not on wgmma"
    reads, writes = touched(body[g])
    for i, s in enumerate(body):
        if i != g and _conflict(touched(s), (reads, writes)):
            return None, "other statements of the loop use the gemm's operands or accumulator"
    return (g, ()), ""


def lazy_gemms(body: list, is_wgmma) -> frozenset:
    """The wgmma gemms of a plain iteration worth issuing without waiting (module docstring): those
    the next statement leaves alone, so that it runs under the gemm."""
    access = [touched(s) for s in body]
    return frozenset(i for i, s in enumerate(body[:-1]) if is_tile_op(s) and isinstance(TileOp.from_stmt(s), Gemm)
                     and is_wgmma(TileOp.from_stmt(s)) and not _conflict(access[i], access[i + 1]))


#: TCallEffectKind above which a call has effects a gemm must not be moved across (kUpdateState:
#: barriers, prints, extern calls; up to kReadState: math, address arithmetic)
_READ_STATE = 2


def _is_gemm(stmt) -> bool:
    return is_tile_op(stmt) and isinstance(TileOp.from_stmt(stmt), Gemm)


def _ordered(stmt) -> bool:
    """A statement no gemm moves across whatever the buffers say: a binding (later statements may
    use its name), or one calling something with effects beyond memory (a barrier, an extern)."""
    return isinstance(stmt, tirx.Bind) or calls_above(stmt, _READ_STATE)


def _is_wgmma_gemm(stmt, is_wgmma) -> bool:
    return _is_gemm(stmt) and is_wgmma(TileOp.from_stmt(stmt))


def issue_order(body: list, is_wgmma) -> list[int]:
    """The order a plain iteration runs ``body`` in: a wgmma gemm that depends on none of the
    statements between it and the wgmma gemm before it moves up to be issued right after that one,
    then each run of adjacent gemms is issued in the order their results are first used. The work
    it moved across then runs under both (FlashAttention backward: dP = V dO^T is issued with
    S = K Q^T, and the exp of S runs while dP computes; dQ, which is stored right away, before dK,
    which only the next iteration reads). A gemm with no gemm to join stays where it is written.
    Moves only across statements whose buffers it leaves alone (``touched``) and that neither bind
    a name nor call anything with effects (``_ordered``)."""
    access = [touched(s) for s in body]
    order = list(range(len(body)))
    for g in range(len(body)):
        if not _is_wgmma_gemm(body[g], is_wgmma):
            continue
        start = at = order.index(g)
        while at > 0:
            prev = order[at - 1]
            if _is_gemm(body[prev]) or _ordered(body[prev]) or _conflict(access[prev], access[g]):
                break
            at -= 1
        if at < start and at > 0 and _is_wgmma_gemm(body[order[at - 1]], is_wgmma):
            order[at:start + 1] = [g] + order[at:start]

    def first_use(at):
        g = order[at]
        return next((p for p in range(at + 1, len(order)) if _conflict(access[order[p]], access[g])), len(order))

    at = 0
    while at < len(order):
        end = at
        while end < len(order) and _is_wgmma_gemm(body[order[end]], is_wgmma):
            end += 1
        run = order[at:end]
        if len(run) > 1 and not any(_conflict(access[a], access[b]) for a in run for b in run if a != b):
            uses = {g: first_use(order.index(g)) for g in run}
            order[at:end] = sorted(run, key=lambda g: uses[g])
        at = max(end, at + 1)
    return order


def _same_chain(i: int, pending, body) -> bool:
    """wgmma instructions accumulating into one register tile run in issue order: a gemm's next
    iteration need not wait for its last one."""
    return pending.index == i and not TileOp.from_stmt(body[i]).clear_accum


class _Pending:
    def __init__(self, index, lag, access):
        self.index, self.lag, self.access = index, lag, access


def schedule(body: list, groups: list[list], kind: str, overlap=None, lazy: frozenset = frozenset()) -> list[Event]:
    """The events of one consumer iteration of ``kind`` (module docstring; PLAIN = no overlap:
    every statement in order, the gemms of ``lazy`` awaited where their results are used, the
    others right away; LAST = the chain's last iteration)."""
    access = [touched(s) for s in body]
    g1, deferred = overlap if overlap else (-1, ())
    chain = overlap is not None and not deferred
    if kind == PLAIN or kind == PROLOGUE:
        order = [(i, 0) for i in range(len(body)) if i not in deferred]
    elif kind in (STEADY, LAST):
        order = []
        for i in range(len(body)):
            if i in deferred:
                continue
            order.append((i, 0))
            if i == g1:
                order += [(d, 1) for d in deferred]
    else:
        order = [(d, 1) for d in deferred]
    asynchronous = {g1, deferred[-1]} if deferred else {g1} if chain else set(lazy) if kind == PLAIN else set()
    group_of = [{g for g, tiles in enumerate(groups) if set(tiles) & access[i][0]} for i in range(len(body))]
    last_reader = {g: max(i for i in range(len(body)) if g in group_of[i]) for g in range(len(groups))
                   if any(g in r for r in group_of)}
    events, acquired, pending = [], set(), []
    if asynchronous and kind == PLAIN and not chain:
        # Nothing is in flight here; said as a wait_group 0, ptxas knows the registers the last
        # iteration's gemms wrote are complete. Otherwise, behind the loop's back edge, it takes
        # them for pending and waits for this iteration's first gemm before reading one (C7517).
        events.append(Event("wait", min(asynchronous), pending=0))
    if chain and kind in (STEADY, LAST, EPILOGUE):  # the previous iteration's gemm is still in flight
        pending.append(_Pending(g1, 1, access[g1]))

    def complete(upto):
        """Waits for pending gemm ``upto`` (and, in order, every older one)."""
        at = pending.index(upto)
        events.append(Event("wait", upto.index, upto.lag, pending=len(pending) - at - 1,
                             busy=tuple(p.index for p in pending[at + 1:])))
        for done in pending[:at + 1]:
            release_after(done.index, done.lag)
        del pending[:at + 1]

    def release_after(i, lag):
        for g in sorted(group_of[i]):
            if last_reader.get(g) == i:
                events.append(Event("release", group=g, lag=lag))

    for i, lag in order:
        for g in sorted(group_of[i]):
            if (g, lag) not in acquired:
                acquired.add((g, lag))
                events.append(Event("acquire", group=g, lag=lag))
        clashes = [p for p in pending if _conflict(access[i], p.access) and not _same_chain(i, p, body)]
        if clashes:
            complete(clashes[-1])
        if i in asynchronous:
            events.append(Event("issue", i, lag))
            pending.append(_Pending(i, lag, access[i]))
        else:
            events.append(Event("run", i, lag))
            release_after(i, lag)
    if chain and kind not in (EPILOGUE, LAST) and len(pending) > 1:
        complete(pending[-2])  # the newest batch stays in flight into the next iteration
    elif pending and not (chain and kind == PROLOGUE):
        complete(pending[-1])
    if kind != EPILOGUE:  # tiles no statement reads: their slots go straight back
        for g in range(len(groups)):
            if g not in last_reader:
                events += [Event("acquire", group=g), Event("release", group=g)]
    return events


def consumer_plan(body: list, groups: list[list], stages: int, is_wgmma, overlap: bool = True,
                  early_issue: bool = False):
    """(plan, lazy, why, body): the overlap or chain ``plan_overlap`` finds (None, and why not,
    where none fits or it would hang), the gemms a plain iteration awaits lazily (``lazy_gemms``),
    and the body in the order the iterations run it (with ``early_issue``, a plain one in
    ``issue_order``'s, where the ring allows it; tl.enable_early_gemm_issue). LoweringError where
    even the plain schedule would hang (a bug: it releases every slot it takes)."""
    plan, why = plan_overlap(body, is_wgmma, stages) if overlap else (None, "tl.disable_wgmma_overlap")
    if plan is not None and (hang := ring_deadlock(body, groups, plan, stages)):
        plan, why = None, f"the overlap would hang: {hang}"  # plan_overlap should have said so
    if plan is None and overlap and early_issue:
        order = issue_order(body, is_wgmma)
        moved = [body[i] for i in order]
        lazy = lazy_gemms(moved, is_wgmma)
        if order != sorted(order) and not ring_deadlock(moved, groups, None, stages, lazy=lazy):
            early = [body[i] for at, i in enumerate(order) if i > min(order[at:])]  # overtook a statement
            names = ", ".join(f"gemm({op.A.source.name}, {op.B.source.name} -> {op.C.source.name})"
                              for op in map(TileOp.from_stmt, early))
            return plan, lazy, f"{why}; issued ahead of work they do not depend on: {names}", moved
    lazy = lazy_gemms(body, is_wgmma) if plan is None and overlap else frozenset()
    if hang := ring_deadlock(body, groups, None, stages, lazy=lazy):
        raise LoweringError(f"the warp-specialized pipeline of this T.Pipelined loop would hang ({hang}); "
                            "please report it, and compile with tl.disable_warp_specialized meanwhile")
    return plan, lazy, why, body


def plan_note(plan, lazy, why: str, pingpong: bool) -> str | None:
    """The schedule note (``kernel.get_kernel_source()``'s header) saying how the consumers wait."""
    if plan is not None and not plan[1]:
        return "consumers: one wgmma batch stays in flight across iterations (wait_group 1)"
    if plan is not None:
        return ("consumers: the softmax-like work of iteration j overlaps the last gemm of j-1 "
                "(intra-warpgroup wgmma overlap)" + ("; the two warpgroups take turns issuing (ping-pong)"
                                                     if pingpong else ""))
    if lazy:
        return f"consumers: {len(lazy)} wgmma batch(es) awaited where their results are first used ({why})"
    if why != "no gemm in the loop":
        return f"consumers: each wgmma batch awaited right after it is issued ({why})"
    return None


def iteration_kinds(plan, trip: int) -> list[tuple[int, str]]:
    """(iteration, kind) of each consumer iteration ring_loops.consumer_iterations runs for a
    loop of ``trip`` iterations under ``plan`` (plain, the chain, or the overlap)."""
    if plan is None:
        return [(i, PLAIN) for i in range(trip)]
    if not plan[1]:  # the chain: iterations 0 and trip-1 peeled
        if trip <= 1:
            return [(0, PLAIN)] * trip
        return [(0, PROLOGUE)] + [(i, STEADY) for i in range(1, trip - 1)] + [(trip - 1, LAST)]
    if trip == 0:
        return []
    return [(0, PROLOGUE)] + [(i, STEADY) for i in range(1, trip)] + [(trip, EPILOGUE)]


def ring_deadlock(body: list, groups: list[list], plan, stages: int, trips=None,
                  lazy: frozenset = frozenset()) -> str | None:
    """Where the consumers' schedule and the producer's loads would wait for each other forever,
    or None. The producer loads iteration k's groups in order, each into slot k % stages once the
    consumers released iteration k - stages of that group; the consumers acquire and release as
    ``schedule`` plans. Played out for short loops (every kind of iteration and every slot reuse
    occurs within ``stages + 3`` iterations), a plan that needs a slot it holds itself shows."""
    for trip in trips or range(1, stages + 4):
        consumer = [(e.kind, e.group, it - e.lag) for it, kind in iteration_kinds(plan, trip)
                    for e in schedule(body, groups, kind, plan, lazy) if e.kind in ("acquire", "release")]
        producer = [(k, g) for k in range(trip) for g in range(len(groups))]
        loaded, released = [0] * len(groups), [0] * len(groups)
        p = c = 0
        while p < len(producer) or c < len(consumer):
            moved = False
            while p < len(producer) and released[producer[p][1]] >= producer[p][0] - stages + 1:
                loaded[producer[p][1]] += 1
                p, moved = p + 1, True
            while c < len(consumer):
                kind, g, it = consumer[c]
                if kind == "acquire" and loaded[g] <= it:
                    break
                if kind == "release":
                    released[g] += 1
                c, moved = c + 1, True
            if not moved:
                return (f"a loop of {trip} iterations in {stages} ring slots: the consumers wait for tile group "
                        f"{consumer[c][1]} of iteration {consumer[c][2]}, which the producer can only load once "
                        f"they release the slot")
    return None


__all__ = ["EPILOGUE", "LAST", "PLAIN", "PROLOGUE", "STEADY", "Event", "consumer_plan", "issue_order",
           "iteration_kinds", "lazy_gemms", "plan_note", "plan_overlap", "ring_deadlock", "schedule", "tile_groups"]
