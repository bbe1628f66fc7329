"""PlanStorage: give every on-chip buffer an address in its memory, within capacity.

Bump allocation per memory in declaration order, each buffer aligned to its memory's rule
(target.ALIGNMENT) and sized for all its stages. No lifetime-based reuse yet: temporaries are
already recycled by the lowering, and the examples fit with room to spare. Overflow is a
LoweringError naming the memory, its capacity and the largest buffers, with what to shrink.
"""

from __future__ import annotations

from tilelang_core.errors import LoweringError

from .. import isa
from ..target import ALIGNMENT, memory_sizes


def plan_storage(prog: isa.Program) -> isa.Program:
    sizes = memory_sizes(prog.arch)
    used: dict = {mem: 0 for mem in sizes}
    for buf in prog.buffers:
        if buf.mem not in sizes:
            raise LoweringError(f"kernel '{prog.name}': buffer '{buf.name}' is in unknown memory "
                                f"{buf.mem!r}")
        offset = isa.round_up(used[buf.mem], ALIGNMENT[buf.mem])
        buf.offset = offset
        used[buf.mem] = offset + buf.nbytes
    for mem, total in used.items():
        if total > sizes[mem]:
            mine = sorted((b for b in prog.buffers if b.mem == mem), key=lambda b: -b.nbytes)
            top = ", ".join(f"'{b.origin or b.name}' {b.nbytes} B" for b in mine[:4])
            raise LoweringError(
                f"kernel '{prog.name}' needs {total} bytes of {mem} on {prog.arch}, which has "
                f"{sizes[mem]} (largest: {top}); use smaller tiles (block_M/block_N/block_K) or "
                f"fewer pipeline stages")
    prog.memory_use = {mem: n for mem, n in used.items() if n}
    return prog
