"""InsertSync: order the pipes and cores of the merged stream with paired set/wait flags.

Every pipe (MTE2, MTE1, M, FIX on the Cube core; MTE2, V, MTE3 on the Vector core) runs its
instructions in order but independently of the others. When an instruction on pipe P touches a
buffer that another pipe Q wrote (RAW), or writes one that Q read or wrote (WAR, WAW), P must wait
for Q. The pass tracks, in program order, which instructions of Q each pipe is already ordered
after (a vector clock per pipe) and inserts, right before the instruction that needs it:

- same core:      SetFlag(Q, P, ev) ; WaitFlag(Q, P, ev)     (Ascend C SetFlag/WaitFlag<HardEvent>)
- across cores:   CrossSet(flag) on Q's core and pipe ; CrossWait(flag) on P's core

A set issued on Q fires once every earlier Q instruction has completed, so the pair placed just
before the consumer covers the producer and everything Q issued before it; placing pairs together
keeps every flag balanced by construction (the checker verifies it anyway).

Loops: accesses of the previous iteration are modelled as happening just before the loop body, so
loop-carried dependencies (e.g. the next K tile overwriting L1 that MTE1 still reads) get a pair
inside the body. Ifs: both branches from the same state, joined conservatively.

Multi-buffered tiles (``T.Pipelined``, stage = (k - start) % S) use the hand-written Ascend C
ping-pong instead: the writer (MTE2) may refill stage s as soon as its one reader pipe released
it S iterations ago, so the next tile's load overlaps the current tile's work:

    SetFlag(R, W, ev+s) for every stage s           (before the loop: all stages free)
    loop: WaitFlag(R, W, ev+slot) ; write ... read ; SetFlag(R, W, ev+slot)
    WaitFlag(R, W, ev+s) for every stage s           (after the loop: drain)

Event ids 1.. go to ping-pong buffers, event 0 to the back-to-back pairs, so a set flag is never
set again before its wait (hardware events are single bits). Everything else is one resource per
whole buffer or global tensor.
"""

from __future__ import annotations

import copy

from tvm import tirx

from .. import isa
from ..target import EVENT_IDS

#: cross-core flag id per (producer core, producer pipe)
_CROSS_FLAG = {("cube", "FIX"): 0, ("cube", "MTE2"): 1, ("cube", "MTE1"): 2, ("cube", "M"): 3,
               ("vec", "MTE3"): 4, ("vec", "MTE2"): 5, ("vec", "V"): 6}


def resource_of(operand):
    return operand.tensor if isinstance(operand, isa.GmTile) else operand.buf


def accesses(instr) -> list:
    """[(resource, is_write)] of an instruction (read-modify-write counts as a write)."""
    out = {}
    for op in instr.reads():
        out.setdefault(resource_of(op), False)
    for op in instr.writes():
        out[resource_of(op)] = True
    return list(out.items())


def cross_flag(core: str, pipe: str) -> int:
    return _CROSS_FLAG.get((core, pipe), len(_CROSS_FLAG))  # any other producer pipe: 7


class SyncState:
    """Vector clocks per pipe and the unordered accesses per resource."""

    def __init__(self):
        self.now = 0
        self.vis: dict = {}      # pipe key -> {pipe key: id it is ordered after}
        self.records: dict = {}  # resource -> [(pipe key, id, is_write)]

    def tick(self) -> int:
        self.now += 1
        return self.now

    def clock(self, key) -> dict:
        return self.vis.setdefault(key, {})

    def covered(self, key, rec) -> bool:
        return rec[0] == key or self.clock(key).get(rec[0], -1) >= rec[1]

    def conflicts(self, key, resource, is_write) -> list:
        return [r for r in self.records.get(resource, [])
                if (is_write or r[2]) and not self.covered(key, r)]

    def order(self, src_key, dst_keys) -> None:
        """dst pipes now see everything src issued so far (and what src itself saw)."""
        token = dict(self.clock(src_key))
        token[src_key] = self.now
        for k in dst_keys:
            clock = self.clock(k)
            for q, n in token.items():
                if clock.get(q, -1) < n:
                    clock[q] = n

    def record(self, key, resource, is_write, ident) -> None:
        recs = self.records.setdefault(resource, [])
        if is_write:
            recs[:] = [(key, ident, True)]
        else:
            recs[:] = [r for r in recs if not (r[0] == key and not r[2])] + [(key, ident, False)]

    def join(self, other: "SyncState") -> None:
        """Conservative merge of two control-flow paths into self."""
        self.now = max(self.now, other.now)
        for key in set(self.vis) | set(other.vis):
            a, b = self.vis.get(key, {}), other.vis.get(key, {})
            self.vis[key] = {q: min(a.get(q, -1), b.get(q, -1)) for q in set(a) & set(b)}
        for res, recs in other.records.items():
            mine = self.records.setdefault(res, [])
            for r in recs:
                if r not in mine:
                    mine.append(r)


def _core_pipes(core: str) -> list:
    return [(core, p) for p in isa.PIPES]


def _slot_of_loop(operand, loop) -> bool:
    """Is ``operand`` addressed by the stage of ``loop`` ((var - start) % S from lower_to_isa)?"""
    slot = getattr(operand, "slot", None)
    if slot is None or type(slot).__name__ != "FloorMod":
        return False
    diff = slot.a  # (var - start), or var itself once a zero start folded away
    if type(diff).__name__ == "Sub":
        diff = diff.a
    return diff.same_as(loop.var)


def _pingpong_candidates(loop) -> dict:
    """Staged buffers of ``loop`` with one writer pipe and one (other) reader pipe:
    buffer -> (writer key, reader key, first writer instr, last reader instr)."""
    info: dict = {}
    for instr in isa.instructions(loop.body):
        key = (instr.core, instr.pipe)
        for op in instr.reads() + instr.writes():
            if isinstance(op, (isa.Tile, isa.Mat)) and op.buf.stages > 1 and _slot_of_loop(op, loop):
                entry = info.setdefault(op.buf, {"w": set(), "r": set(), "first_w": None,
                                                 "last_r": None})
                if any(o is op for o in instr.writes()):
                    entry["w"].add(key)
                    entry["first_w"] = entry["first_w"] or instr
                else:
                    entry["r"].add(key)
                    entry["last_r"] = instr
    out = {}
    for buf, e in info.items():
        if len(e["w"]) == 1 and len(e["r"]) == 1 and e["w"] != e["r"] and e["first_w"] is not None:
            (w,), (r,) = e["w"], e["r"]
            if w[0] == r[0] and isa.instructions(loop.body).index(e["first_w"]) < \
                    isa.instructions(loop.body).index(e["last_r"]):
                out[buf] = (w, r, e["first_w"], e["last_r"])
    return out


def _contains(stmt, instr) -> bool:
    if stmt is instr:
        return True
    if isinstance(stmt, isa.Loop):
        return any(_contains(s, instr) for s in stmt.body)
    if isinstance(stmt, isa.If):
        return any(_contains(s, instr) for s in stmt.then + stmt.orelse)
    return False


def _first_slot(instr, buf):
    for op in instr.reads() + instr.writes():
        if isinstance(op, (isa.Tile, isa.Mat)) and op.buf is buf:
            return op.slot
    raise AssertionError("ping-pong buffer operand not found")


class SyncInserter:
    def __init__(self):
        self.pairs = 0
        self.next_event: dict = {}  # (core, src pipe, dst pipe) -> next free ping-pong event id

    def run(self, stmts: list, state: SyncState) -> list:
        out = []
        for s in stmts:
            if isinstance(s, isa.Loop):
                self._loop(s, state, out)
            elif isinstance(s, isa.If):
                then_state = copy.deepcopy(state)
                then = self.run(s.then, then_state)
                orelse = self.run(s.orelse, state)
                state.join(then_state)
                out.append(isa.If(s.cond, then, orelse))
            elif isinstance(s, isa.Instr):
                self._instr(s, state, out)
            else:
                out.append(s)
        return out

    def _loop(self, loop: isa.Loop, state: SyncState, out: list) -> None:
        pingpong = _pingpong_candidates(loop) if loop.stages > 1 else {}
        entry = copy.deepcopy(state)
        previous = state.tick()  # the previous iteration, as if it ran just before the body
        for instr in isa.instructions(loop.body):
            key = (instr.core, instr.pipe)
            for res, is_write in accesses(instr):
                if res in pingpong:
                    continue  # stage s of iteration k-1 is not stage s of iteration k
                recs = state.records.setdefault(res, [])
                recs.append((key, previous, is_write))
        body = self.run(loop.body, state)
        state.join(entry)
        pre, post = [], []
        for buf, (w, r, first_w, last_r) in pingpong.items():
            core = w[0]
            base = self.next_event.get((core, r[1], w[1]), 1)
            if base + buf.stages - 1 >= EVENT_IDS:
                continue  # out of event ids: stays ordered by the back-to-back pairs
            self.next_event[(core, r[1], w[1])] = base + buf.stages
            slot = _first_slot(first_w, buf)
            event = tirx.Add(tirx.IntImm("int32", base), slot) if base else slot
            for st in range(buf.stages):
                pre.append(isa.SetFlag(r[1], w[1], base + st, core=core))
                post.append(isa.WaitFlag(r[1], w[1], base + st, core=core))
            wait, set_ = (isa.WaitFlag(r[1], w[1], event, core=core),
                          isa.SetFlag(r[1], w[1], event, core=core))
            wait.line, set_.line = first_w.line, last_r.line
            i = next(n for n, st in enumerate(body) if _contains(st, first_w))
            body.insert(i, wait)
            j = max(n for n, st in enumerate(body) if _contains(st, last_r))
            body.insert(j + 1, set_)
        out += pre
        out.append(isa.Loop(loop.var, loop.start, loop.extent, body, loop.stages))
        out += post

    def _instr(self, instr, state: SyncState, out: list) -> None:
        key = (instr.core, instr.pipe)
        for res, is_write in accesses(instr):
            for rec in state.conflicts(key, res, is_write):
                if state.covered(key, rec):
                    continue  # an earlier pair in this loop covered it
                self._pair(rec[0], key, state, out, instr.line)
        ident = state.tick()
        for res, is_write in accesses(instr):
            state.record(key, res, is_write, ident)
        out.append(instr)

    def _pair(self, src, dst, state: SyncState, out: list, line) -> None:
        self.pairs += 1
        if src[0] == dst[0]:
            set_, wait = (isa.SetFlag(src[1], dst[1], 0, core=src[0]),
                          isa.WaitFlag(src[1], dst[1], 0, core=dst[0]))
            targets = [dst]
        else:
            flag = cross_flag(*src)
            set_, wait = (isa.CrossSet(flag, src[1], core=src[0]), isa.CrossWait(flag, core=dst[0]))
            targets = _core_pipes(dst[0])  # the waiting core stops issuing: all its pipes
        set_.line = wait.line = line
        out += [set_, wait]
        state.tick()
        state.order(src, targets)


def insert_sync(prog: isa.Program) -> isa.Program:
    prog.body = SyncInserter().run(prog.body, SyncState())
    return prog
