"""Static checker of a lowered Ascend program: synchronization and storage.

Checks, without running anything:
1. storage: every buffer placed, aligned per target.ALIGNMENT, inside its memory, not
   overlapping another buffer of the same memory;
2. intra-core flags: along each core's stream every WaitFlag(src, dst, event) has a SetFlag
   before it, no SetFlag is left unwaited at the end, and each loop body leaves the flag counts as
   it found them (so every iteration is balanced);
3. cross-core flags: each flag is set by one core exactly as often (at the same loop nesting) as
   the other core waits on it, and never waited without being set;
4. dependencies: every cross-pipe and cross-core data dependency (RAW, WAR, WAW on a buffer or a
   global tensor) is ordered by a set/wait chain. This walks the program in tile-IR order (the
   merged stream; only instructions still present in the core streams count), executing each loop
   body twice so loop-carried dependencies are seen; it is an independent re-derivation of what
   insert_sync.py inserted, using the flags actually present.

``check_program`` raises SyncCheckError listing every problem; ``find_problems`` returns them.
"""

from __future__ import annotations

import copy
from collections import Counter

from tilelang_core.errors import LoweringError

from . import isa
from .target import ALIGNMENT, CROSS_CORE_FLAGS, memory_sizes
from .scalar import evaluate
from .transform.insert_sync import SyncState, resource_of


class SyncCheckError(LoweringError):
    """The lowered program is missing synchronization or does not fit the target's memories."""


def check_program(prog: isa.Program) -> None:
    problems = find_problems(prog)
    if problems:
        raise SyncCheckError(f"kernel '{prog.name}' failed the Ascend program check "
                             f"({len(problems)} problem(s)); this is a compiler bug, please "
                             f"report it with the kernel:\n  - " + "\n  - ".join(problems))


def find_problems(prog: isa.Program) -> list[str]:
    problems: list[str] = []
    _check_storage(prog, problems)
    for core, stream in ((isa.CUBE, prog.cube), (isa.VEC, prog.vec)):
        _check_stream_cores(core, stream, problems)
        counts: dict = {}
        _check_flags(core, stream, counts, problems)
        for key, n in counts.items():
            if n:
                problems.append(f"{core}: set_flag {key[0]}->{key[1]} event {key[2]} is set {n} "
                                f"time(s) more than waited")
    _check_cross(prog, problems)
    _check_dependencies(prog, problems)
    return list(dict.fromkeys(problems))


def _line(instr) -> str:
    return f" (line {instr.line})" if getattr(instr, "line", None) else ""


def _check_storage(prog, problems) -> None:
    sizes = memory_sizes(prog.arch)
    by_mem: dict = {}
    for buf in prog.buffers:
        if buf.offset is None:
            problems.append(f"buffer '{buf.name}' has no address in {buf.mem}")
            continue
        if buf.offset % ALIGNMENT[buf.mem]:
            problems.append(f"buffer '{buf.name}' at {buf.mem}+{buf.offset} is not "
                            f"{ALIGNMENT[buf.mem]}-byte aligned")
        if buf.offset + buf.nbytes > sizes[buf.mem]:
            problems.append(f"buffer '{buf.name}' ({buf.nbytes} bytes at {buf.offset}) does not fit "
                            f"{buf.mem} ({sizes[buf.mem]} bytes on {prog.arch})")
        by_mem.setdefault(buf.mem, []).append(buf)
    for mem, bufs in by_mem.items():
        bufs.sort(key=lambda b: b.offset)
        for a, b in zip(bufs, bufs[1:]):
            if a.offset + a.nbytes > b.offset:
                problems.append(f"buffers '{a.name}' and '{b.name}' overlap in {mem}")


def _check_stream_cores(core, stream, problems) -> None:
    for instr in isa.instructions(stream):
        if instr.core != core:
            problems.append(f"{instr!r} of the {instr.core} core sits in the {core} stream")


def _event(s, env):
    """The event id of a Set/WaitFlag: an int, or a ping-pong expression of the stage."""
    if isinstance(s.event, int):
        return s.event
    try:
        return int(evaluate(s.event, env))
    except (LoweringError, TypeError):
        return str(s.event)


def _iterations(loop) -> int:
    """How many iterations to walk: enough for every stage to be reused once."""
    return max(2, loop.stages + 1)


def _iteration_env(loop, env: dict, i: int) -> dict:
    env = dict(env)
    try:
        start = int(evaluate(loop.start, env))
    except (LoweringError, TypeError):
        start = 0
        if type(loop.start).__name__ == "Var":
            env[loop.start] = 0  # stages are relative to the start: (var - start) % S
    env[loop.var] = start + i
    return env


def _bind_let(s, env) -> None:
    try:
        env[s.var] = evaluate(s.value, env)
    except (LoweringError, TypeError):
        pass


def _check_flags(core, stmts, counts, problems, env=None) -> None:
    env = {} if env is None else env
    for s in stmts:
        if isinstance(s, isa.Loop):
            before = dict(counts)
            for i in range(_iterations(s)):
                _check_flags(core, s.body, counts, problems, _iteration_env(s, env, i))
                changed = {k: counts.get(k, 0) - before.get(k, 0)
                           for k in set(counts) | set(before)}
                changed = {k: d for k, d in changed.items() if d}
                if changed:
                    what = ", ".join(f"{k[0]}->{k[1]} event {k[2]}: {d:+d} (sets minus waits)"
                                     for k, d in sorted(changed.items(), key=str))
                    problems.append(f"{core}: each iteration of the loop over '{s.var}' leaves "
                                    f"flags unbalanced: {what}")
                    counts.clear()
                    counts.update(before)
                    break
        elif isinstance(s, isa.If):
            then_counts = dict(counts)
            _check_flags(core, s.then, then_counts, problems, env)
            _check_flags(core, s.orelse, counts, problems, env)
            if then_counts != counts:
                problems.append(f"{core}: the branches of 'if {s.cond}' set/wait different flags")
        elif isinstance(s, isa.Let):
            _bind_let(s, env)
        elif isinstance(s, isa.SetFlag):
            key = (s.src, s.dst, _event(s, env))
            if counts.get(key):
                problems.append(f"{core}: set_flag {s.src}->{s.dst} event {key[2]} is set again "
                                f"before its wait{_line(s)} (hardware events are single bits)")
            counts[key] = counts.get(key, 0) + 1
        elif isinstance(s, isa.WaitFlag):
            key = (s.src, s.dst, _event(s, env))
            if not counts.get(key):
                problems.append(f"{core}: wait_flag {s.src}->{s.dst} event {key[2]} with no "
                                f"set_flag before it{_line(s)} (it would hang)")
            else:
                counts[key] -= 1


def _nesting(stmts, path, out: list) -> None:
    for s in stmts:
        if isinstance(s, (isa.Loop, isa.If)):
            origin = id(getattr(s, "origin", s))
            if isinstance(s, isa.Loop):
                _nesting(s.body, path + (origin,), out)
            else:
                _nesting(s.then, path + (origin, "then"), out)
                _nesting(s.orelse, path + (origin, "else"), out)
        elif isinstance(s, (isa.CrossSet, isa.CrossWait)):
            out.append((s, path))


def _check_cross(prog, problems) -> None:
    sets: dict = {}
    waits: dict = {}
    for core, stream in ((isa.CUBE, prog.cube), (isa.VEC, prog.vec)):
        found: list = []
        _nesting(stream, (), found)
        other = isa.VEC if core == isa.CUBE else isa.CUBE
        for instr, path in found:
            if isinstance(instr, isa.CrossSet):
                sets.setdefault((other, instr.flag), Counter())[path] += 1
            else:
                waits.setdefault((core, instr.flag), Counter())[path] += 1
    for key in set(sets) | set(waits):
        if not 0 <= key[1] < CROSS_CORE_FLAGS:
            problems.append(f"cross-core flag id {key[1]} is outside 0..{CROSS_CORE_FLAGS - 1}")
        s, w = sets.get(key, Counter()), waits.get(key, Counter())
        if not s and w:
            problems.append(f"{key[0]}: cross-core flag {key[1]} is waited but never set by the "
                            f"other core (it would hang)")
        elif s != w:
            problems.append(f"cross-core flag {key[1]} towards the {key[0]} core: {sum(s.values())} "
                            f"set(s) and {sum(w.values())} wait(s) do not pair up loop by loop")


def _accesses(instr, env) -> list:
    """Like insert_sync.accesses, but a multi-buffered tile is one resource per stage when the
    stage can be evaluated (it can inside the unrolled iterations)."""
    out = {}
    for ops, is_write in ((instr.reads(), False), (instr.writes(), True)):
        for op in ops:
            res = resource_of(op)
            slot = getattr(op, "slot", None)
            if slot is not None:
                try:
                    res = (res, int(evaluate(slot, env)))
                except (LoweringError, TypeError):
                    pass
            out[res] = out.get(res, False) or is_write
    return list(out.items())


class _Verifier:
    def __init__(self, present: set, problems: list):
        self.present = present
        self.problems = problems

    def run(self, stmts, st: SyncState, queues: dict, env: dict) -> None:
        for s in stmts:
            if isinstance(s, isa.Loop):
                entry = copy.deepcopy(st)
                # walk every stage once more: loop-carried dependencies show in later iterations
                for i in range(_iterations(s)):
                    self.run(s.body, st, queues, _iteration_env(s, env, i))
                st.join(entry)
            elif isinstance(s, isa.If):
                other, other_q = copy.deepcopy(st), copy.deepcopy(queues)
                self.run(s.then, other, other_q, env)
                self.run(s.orelse, st, queues, env)
                st.join(other)
            elif isinstance(s, isa.Let):
                _bind_let(s, env)
            elif isinstance(s, isa.Instr) and id(s) in self.present:
                self.instr(s, st, queues, env)

    def instr(self, s, st: SyncState, queues: dict, env: dict) -> None:
        key = (s.core, s.pipe)
        if isinstance(s, (isa.SetFlag, isa.CrossSet)):
            st.tick()
            token = dict(st.clock(key))
            token[key] = st.now
            qkey = ((s.core, s.src, s.dst, _event(s, env)) if isinstance(s, isa.SetFlag)
                    else ("cross", isa.VEC if s.core == isa.CUBE else isa.CUBE, s.flag))
            queues.setdefault(qkey, []).append(token)
            return
        if isinstance(s, (isa.WaitFlag, isa.CrossWait)):
            qkey = ((s.core, s.src, s.dst, _event(s, env)) if isinstance(s, isa.WaitFlag)
                    else ("cross", s.core, s.flag))
            queue = queues.get(qkey)
            if not queue:
                return  # reported by the flag-balance checks
            token = queue.pop(0)
            targets = [key] if isinstance(s, isa.WaitFlag) else [(s.core, p) for p in isa.PIPES]
            for t in targets:
                clock = st.clock(t)
                for q, n in token.items():
                    if clock.get(q, -1) < n:
                        clock[q] = n
            return
        for res, is_write in _accesses(s, env):
            for rec in st.conflicts(key, res, is_write):
                name = getattr(res[0] if isinstance(res, tuple) else res, "name", res)
                self.problems.append(
                    f"{key[0]}.{key[1]} {'writes' if is_write else 'reads'} '{name}' "
                    f"{'after' if rec[2] else 'while'} {rec[0][0]}.{rec[0][1]} "
                    f"{'wrote' if rec[2] else 'reads'} it, with no set/wait ordering them: "
                    f"{s!r}{_line(s)}")
        ident = st.tick()
        for res, is_write in _accesses(s, env):
            st.record(key, res, is_write, ident)


def _check_dependencies(prog, problems) -> None:
    present = {id(i) for i in isa.instructions(prog.cube) + isa.instructions(prog.vec)}
    merged = {id(i) for i in isa.instructions(prog.body)}
    for instr in isa.instructions(prog.cube) + isa.instructions(prog.vec):
        if id(instr) not in merged:
            problems.append(f"{instr!r} is not part of the program order the checker verifies "
                            f"(added after split_cores?)")
    _Verifier(present, problems).run(prog.body, SyncState(), {}, {})
