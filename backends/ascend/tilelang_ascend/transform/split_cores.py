"""SplitCores: the merged stream -> one instruction stream per core (Cube, Vector).

Control flow and scalar lets are replicated into both streams (each core's scalar unit computes
its own loop bounds), so loop trip counts agree and every cross-core flag set in one stream has
its wait at the same loop nesting in the other. Loops and ifs left empty on a core are dropped;
``origin`` on the copies points at the merged node (the checker matches cross-core flags by it).
"""

from __future__ import annotations

from .. import isa


def _split(stmts: list, core: str) -> list:
    out = []
    for s in stmts:
        if isinstance(s, isa.Loop):
            body = _split(s.body, core)
            if any(not isinstance(b, isa.Let) for b in body):
                node = isa.Loop(s.var, s.start, s.extent, body, s.stages)
                node.origin = s
                out.append(node)
        elif isinstance(s, isa.If):
            then, orelse = _split(s.then, core), _split(s.orelse, core)
            if then or orelse:
                node = isa.If(s.cond, then, orelse)
                node.origin = s
                out.append(node)
        elif isinstance(s, isa.Let):
            out.append(s)
        elif s.core == core:
            out.append(s)
    return out


def split_cores(prog: isa.Program) -> isa.Program:
    prog.cube = _split(prog.body, isa.CUBE)
    prog.vec = _split(prog.body, isa.VEC)
    return prog
