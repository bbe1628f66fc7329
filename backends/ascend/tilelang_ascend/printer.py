"""Text form of an Ascend-level program (``kernel.asm["lowered"]``, and for reading tests)."""

from __future__ import annotations

from . import isa


def _stream(lines: list, stmts, indent: int) -> None:
    pad = "  " * indent
    for s in stmts:
        if isinstance(s, isa.Loop):
            extra = f"  # {s.stages} stages" if s.stages > 1 else ""
            lines.append(f"{pad}for {s.var} in range({s.start}, {s.start} + {s.extent}):{extra}")
            _stream(lines, s.body, indent + 1)
        elif isinstance(s, isa.If):
            lines.append(f"{pad}if {s.cond}:")
            _stream(lines, s.then, indent + 1)
            if s.orelse:
                lines.append(f"{pad}else:")
                _stream(lines, s.orelse, indent + 1)
        elif isinstance(s, isa.Let):
            lines.append(f"{pad}{s.var} = {s.value}")
        else:
            where = f"  # line {s.line}" if getattr(s, "line", None) else ""
            lines.append(f"{pad}[{s.core}.{s.pipe}] {s!r}{where}")


def print_program(prog: isa.Program) -> str:
    lines = [f"# Ascend program '{prog.name}' for {prog.arch}",
             "# grid: " + ", ".join(f"{v} < {e}" for v, e in prog.grid)]
    for t in prog.params:
        lines.append(f"# param {t.name}: {list(t.shape)} {t.dtype}")
    for t in prog.workspaces:
        lines.append(f"# workspace {t.name}: {list(t.shape)} {t.dtype} per block")
    for b in prog.buffers:
        lines.append(f"# buffer {b!r} ({b.nbytes} bytes)")
    for mem, used in prog.memory_use.items():
        lines.append(f"# {mem}: {used} bytes used")
    if prog.cube or prog.vec:
        for name, stream in (("cube", prog.cube), ("vec", prog.vec)):
            lines.append(f"core {name}:")
            _stream(lines, stream, 1)
    else:
        _stream(lines, prog.body, 0)
    return "\n".join(lines) + "\n"
