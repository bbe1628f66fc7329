"""ClassifyBuffers: decide which Da Vinci memory each on-chip buffer of the tile IR lives in.

Placement rule (documented for users in language.py):
- explicit dialect scopes (``ascend.l1`` ...) are kept;
- a shared/fragment buffer whose only uses are Cube operands (``T.gemm`` A/B) and copies from
  global memory goes to L1;
- a ``T.gemm`` accumulator whose only other uses are a zero fill and copies to global memory
  stays in L0C (the Cube accumulates in place across the K loop); if the Vector core uses it only
  after the last gemm (an epilogue), it accumulates in L0C and moves to UB once, at the first
  Vector use (lowering: IsaContext.vector_buffer);
- everything else is Vector data and goes to the Unified Buffer. A UB buffer that also feeds the
  Cube, or an accumulator the Vector core also touches, is moved between the cores through a
  global-memory workspace by the lowering (lowering.py).

Also finds the buffers to multi-buffer: those written only by copies from global memory inside
one ``T.Pipelined`` loop and used nowhere else get ``num_stages`` copies.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import tvm_ffi
from tvm import tirx

from tilelang_core.ir import TileOp
from tilelang_core.ir.region import scope_of

EXPLICIT = {"ascend.l1": "L1", "ascend.l0a": "L0A", "ascend.l0b": "L0B", "ascend.l0c": "L0C",
            "ascend.ub": "UB"}


@dataclass
class BufferUse:
    cube_operand: bool = False
    cube_acc: bool = False
    vector: bool = False
    nonzero_fill: bool = False
    gm_in: bool = False
    loops: set = field(default_factory=set)  # pipelined loops (or None) each access sits in
    gm_in_loops: set = field(default_factory=set)
    last_gemm: int = -1              # statement index of the last gemm accumulating into it
    first_vector: tuple | None = None  # (statement index, serial loop depth) of its first Vector use


def _is_global(region) -> bool:
    return scope_of(region) in ("global", "")


def collect_uses(func: tirx.PrimFunc) -> dict:
    uses: dict = defaultdict(BufferUse)
    loop_stack: list = []
    position = [0, 0]  # statement counter, serial loop depth

    def note(buf, **flags):
        use = uses[buf]
        for k, v in flags.items():
            setattr(use, k, getattr(use, k) or v)
        use.loops.add(loop_stack[-1] if loop_stack else None)
        if flags.get("cube_acc"):
            use.last_gemm = position[0]
        if flags.get("vector") and use.first_vector is None:
            use.first_vector = (position[0], position[1])

    def visit(stmt):
        if isinstance(stmt, tirx.For):
            pipelined = int(stmt.annotations.get("tl.num_stages", 0) or 0) > 1
            parallel = "tl.parallel" in stmt.annotations
            if parallel:
                position[0] += 1
                _visit_parallel(stmt, note)
                return
            if pipelined:
                loop_stack.append(stmt)
            position[1] += 1
            visit(stmt.body)
            position[1] -= 1
            if pipelined:
                loop_stack.pop()
        elif isinstance(stmt, tirx.SeqStmt):
            for s in stmt.seq:
                visit(s)
        elif isinstance(stmt, (tirx.AttrStmt, tirx.LetStmt)) and hasattr(stmt, "body"):
            visit(stmt.body)
        elif isinstance(stmt, tirx.IfThenElse):
            visit(stmt.then_case)
            if stmt.else_case is not None:
                visit(stmt.else_case)
        elif isinstance(stmt, tirx.TilePrimitiveCall):
            position[0] += 1
            _visit_op(TileOp.from_stmt(stmt), note, uses, loop_stack)
        elif isinstance(stmt, tirx.BufferStore):
            note(stmt.buffer, vector=True)

    visit(func.body)
    return uses


def _visit_parallel(loop, note) -> None:
    def on_store(store):
        note(store.buffer, vector=True)

    def on_load(load):
        note(load.source, vector=True)

    tvm_ffi.structural_walk(loop, [(tirx.BufferStore, on_store), (tvm_ffi_load_type(), on_load)])


def tvm_ffi_load_type():
    import tvm
    return tvm.ir.TensorLoad


def _visit_op(op, note, uses, loop_stack) -> None:
    name = op.name
    if name == "gemm":
        note(op.A.source, cube_operand=True)
        note(op.B.source, cube_operand=True)
        note(op.C.source, cube_acc=True)
    elif name == "copy":
        src_g, dst_g = _is_global(op.src), _is_global(op.dst)
        if src_g and not dst_g:
            note(op.dst.source, gm_in=True)
            uses[op.dst.source].gm_in_loops.add(loop_stack[-1] if loop_stack else None)
        elif dst_g and not src_g:
            note(op.src.source)
        elif not src_g and not dst_g:
            note(op.src.source, vector=True)
            note(op.dst.source, vector=True)
    elif name == "fill":
        value = op.value
        zero = type(value).__name__ in ("FloatImm", "IntImm") and float(value.value) == 0.0
        note(op.dst.source, nonzero_fill=not zero)
    elif name == "atomic" and op.src_is_region and _is_global(op.dst) and not _is_global(op.src):
        note(op.src.source)  # read out like a copy to GM: an L0C accumulator may stay there
    else:  # reduce, cumsum, scalar atomics: Vector work
        for region in tuple(op.reads) + tuple(op.writes):
            if hasattr(region, "source") and not _is_global(region):
                note(region.source, vector=True)


def memory_of(buf, use: BufferUse) -> str:
    """The memory ``buf`` lives in (see the module docstring)."""
    scope = str(buf.ty.storage_scope)
    if scope in EXPLICIT:
        return EXPLICIT[scope]
    if use.cube_operand and not use.vector and not use.cube_acc:
        return "L1"
    if use.cube_acc and not use.nonzero_fill and not use.cube_operand and (
            not use.vector or spills_after_gemm(use)):
        return "L0C"
    return "UB"


def spills_after_gemm(use: BufferUse) -> bool:
    """An accumulator the Vector core only touches after its last gemm, first at the top level
    (an epilogue such as ReLU): it accumulates in L0C and moves to UB once, at that first use."""
    return (use.cube_acc and use.vector and use.first_vector is not None
            and use.first_vector[0] > use.last_gemm and use.first_vector[1] == 0)


def stages_of(use: BufferUse, mem: str) -> tuple[int, object]:
    """(stages, loop) for a buffer filled from GM in one pipelined loop and used only there."""
    if mem not in ("L1", "UB") or not use.gm_in or len(use.loops) != 1:
        return 1, None
    (loop,) = tuple(use.loops)
    if loop is None or use.gm_in_loops != {loop}:
        return 1, None
    return int(loop.annotations["tl.num_stages"]), loop
