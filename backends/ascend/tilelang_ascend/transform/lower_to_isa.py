"""LowerToIsa: the tile-IR PrimFunc -> an Ascend-level program (merged Cube + Vector stream).

The walker keeps the control flow (serial/pipelined loops, ifs, scalar lets) and hands every tile
op to its rule in lowering.py and every ``T.Parallel`` nest to vector_lowering.py. Instructions
are emitted in tile-IR order into one merged list, each tagged with its core; insert_sync.py then
orders the pipes and cores, and split_cores.py makes the two streams.

Ascend has no threads: ``T.Kernel(..., threads=n)`` launches are ignored (one block = one AI core)
and per-thread code is refused.
"""

from __future__ import annotations

import tvm
from tvm import tirx

from tilelang_core.errors import LoweringError
from tilelang_core.ir import TileOp, is_tile_op
from tilelang_core.ir.intrinsics import intrinsic_of
from tilelang_core.lowering import source_location

from .. import isa
from ..target import capability
from . import classify_buffers as C

ASCEND_RULES: dict = {}


def ascend_rule(op_name: str):
    """Register ``rule(op, ctx)`` lowering tile op ``op_name`` to Ascend instructions.

    The core table (tilelang_core.lowering) holds rules that return TIRX; ours emit ISA
    instructions through ``ctx``, so they live in this backend's own table.
    """

    def deco(fn):
        ASCEND_RULES[op_name] = fn
        return fn

    return deco


class IsaContext:
    """Per-kernel lowering state: buffers, workspaces, the stream being emitted, the loops."""

    def __init__(self, func: tirx.PrimFunc, kernel: str, arch: str, options=None):
        self.func = func
        self.kernel = kernel
        self.arch = arch
        self.options = options
        self.analyzer = tvm.sym.Analyzer()
        self.uses = C.collect_uses(func)
        self.params = {}
        for p in func.params:
            ty = p.ty
            self.params[p] = isa.GmTensor(str(p.name), tuple(int(s) if isinstance(s, tirx.IntImm)
                                                              else s for s in ty.shape),
                                          str(ty.dtype))
        self.buffers: dict = {}     # tile-IR buffer var -> isa.Buffer
        self.declared: list = []    # one isa.Buffer per tile-IR allocation
        self.extra: list = []       # staging/temp/scratch buffers
        self.workspaces: list = []
        self.grid: list = []
        self.out: list = []         # the list being emitted into
        self.loops: list = []       # enclosing isa.Loop objects
        self.slots: dict = {}       # multi-stage buffer -> slot expression
        self.stage_loop: dict = {}  # tile-IR loop -> buffers staged by it
        self.pending_init: dict = {}  # L0C buffer -> loop depth of its zero fill
        self.node = None            # tile-IR statement being lowered (for messages)
        self.temp_free: dict = {}
        self.l1_mirror: dict = {}
        self.l0c_scratch: dict = {}
        self.l0_operands: dict = {}
        self.spill_to_ub: dict = {}  # L0C accumulators that move to UB at their first Vector use
        self.counter = 0
        self.scope = None           # "C" / "V" inside an expert-mode T.Scope region
        self.simt_threads = None    # threads of the enclosing T.SimtVF region
        self._refuse_dynamic_shapes()

    # -- messages -------------------------------------------------------------------------------
    def _refuse_dynamic_shapes(self) -> None:
        """T.dynamic sizes are not supported yet: say which tensor dimension, before the grid or a
        stride trips over it somewhere less clear."""
        for tensor in self.params.values():
            for dim, size in enumerate(tensor.shape):
                if not isinstance(size, int):
                    raise self.error(f"T.Tensor '{tensor.name}'", dynamic_advice(
                        f"dim {dim} of '{tensor.name}' {list(tensor.shape)} is the dynamic size "
                        f"{size}"))

    def error(self, what: str, message: str) -> LoweringError:
        where = source_location(self.node) if self.node is not None else None
        text = f"cannot lower {what} in kernel '{self.kernel}' for backend 'ascend': {message}"
        return LoweringError(text + (f"\n  --> {where}" if where else ""))

    @property
    def line(self):
        span = getattr(self.node, "span", None)
        return span.line if span is not None else None

    def emit(self, instr):
        instr.line = self.line
        if self.scope is not None:
            self._check_scope(instr)
        self.out.append(instr)
        return instr

    def _check_scope(self, instr) -> None:
        """Inside T.Scope("C"/"V") only that core's work is allowed; the data the compiler moves
        between the cores through workspaces is not the author's op and is let through."""
        want = isa.CUBE if self.scope == "C" else isa.VEC
        if instr.core == want:
            return
        operands = instr.reads() + instr.writes()
        if any(isinstance(o, isa.GmTile) and o.tensor.workspace for o in operands):
            return
        if isinstance(instr, (isa.CopyUbToGm,)) and self.scope == "C":
            return  # Vector data staged for the Cube on its way to L1
        name = type(self.node).__name__ if self.node is not None else "this op"
        what = "T.Parallel" if name == "For" else ("a tile op" if name == "TilePrimitiveCall"
                                                    else name)
        raise self.error(what, f"it runs on the {instr.core} core ({type(instr).__name__}) but "
                               f"sits in T.Scope(\"{self.scope}\"); move it out of the region "
                               f"or into T.Scope(\"{'C' if instr.core == isa.CUBE else 'V'}\")")

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    # -- buffers --------------------------------------------------------------------------------
    def declare(self, var) -> isa.Buffer:
        ty = var.ty
        shape = [int(s) if isinstance(s, tirx.IntImm) else s for s in ty.shape]
        if not all(isinstance(s, int) for s in shape):
            raise self.error(f"buffer '{var.name}'", f"on-chip shape {shape} is not constant")
        if len(shape) > 2:
            raise self.error(f"buffer '{var.name}'",
                             f"on-chip buffers of rank {len(shape)} are not supported by the "
                             f"Ascend backend yet (it plans 1-D and 2-D tiles; multi-buffering "
                             f"is done for you by T.Pipelined)")
        rows, cols = (1, shape[0]) if len(shape) == 1 else tuple(shape)
        use = self.uses.get(var, C.BufferUse())
        mem = C.memory_of(var, use)
        stages, loop = C.stages_of(use, mem)
        buf = isa.Buffer(str(var.name), mem, str(ty.dtype), rows, cols, stages=stages,
                         origin=str(var.name))
        self.buffers[var] = buf
        self.declared.append(buf)
        if mem == "L0C" and C.spills_after_gemm(use):
            self.spill_to_ub[var] = buf
        if loop is not None:
            self.stage_loop.setdefault(loop, []).append(buf)
        return buf

    def buffer(self, var) -> isa.Buffer:
        try:
            return self.buffers[var]
        except KeyError:
            raise self.error("a buffer access", f"'{var.name}' is not an on-chip buffer of this "
                             f"kernel") from None

    def vector_buffer(self, var) -> isa.Buffer:
        """The buffer the Vector core uses for ``var``; an epilogue accumulator moves from L0C to
        UB here, once (classify_buffers.spills_after_gemm guarantees this point is outside every
        loop and after the last gemm)."""
        l0c = self.spill_to_ub.pop(var, None)
        if l0c is not None:
            from ..lowering import l0c_to_ub
            ub = self.new_buffer(l0c.name + "_ub_", "UB", l0c.dtype, l0c.rows, l0c.cols, l0c.origin)
            if self.pending_init.get(l0c) is not None:
                raise self.error(f"buffer '{var.name}'", "the accumulator is read by the Vector "
                                 "core before any T.gemm wrote it")
            l0c_to_ub(self, isa.Mat(l0c), isa.Tile(ub, ub.rows, ub.cols))
            self.buffers[var] = ub
        return self.buffer(var)

    def new_buffer(self, prefix: str, mem: str, dtype: str, rows: int, cols: int,
                   origin: str = "") -> isa.Buffer:
        buf = isa.Buffer(self.fresh(prefix), mem, dtype, rows, cols, origin=origin or prefix)
        self.extra.append(buf)
        return buf

    def temp(self, rows: int, cols: int, dtype: str) -> isa.Tile:
        """A UB scratch tile; ``release`` puts it back for the next statement."""
        free = self.temp_free.get((rows, cols, dtype))
        buf = free.pop() if free else self.new_buffer("tmp", "UB", dtype, rows, cols, "temp")
        return isa.Tile(buf, rows, cols)

    def release(self, tiles) -> None:
        for t in tiles:
            if t.buf.origin == "temp":
                self.temp_free.setdefault((t.buf.rows, t.buf.cols, t.buf.dtype), []).append(t.buf)

    def workspace(self, rows: int, cols: int, dtype: str) -> isa.GmTile:
        ws = isa.GmTensor(self.fresh("ws"), (rows, cols), dtype, workspace=True)
        self.workspaces.append(ws)
        return isa.GmTile(ws, [0, 0], [rows, cols], 0, 1, block_slice=True)

    def slot(self, buf: isa.Buffer):
        return self.slots.get(buf) if buf.stages > 1 else None

    def cube_dtypes(self):
        return capability(self.arch, "cube_dtypes")

    def capability(self, key: str):
        return capability(self.arch, key)


def lower_to_isa(func: tirx.PrimFunc, kernel: str, arch: str, options=None) -> isa.Program:
    from .. import lowering, vector_lowering  # noqa: F401  (registers the rules)

    ctx = IsaContext(func, kernel, arch, options)
    lowering.refuse_atomic_calls(func, kernel)  # (return_prev, T.atomic_load: no Ascend form)
    body = _strip_launches(ctx, func.body)
    ctx.out = []
    _lower_stmt(ctx, body)
    buffers = ctx.declared + ctx.extra
    return isa.Program(kernel, arch, list(ctx.params.values()), ctx.workspaces, ctx.grid,
                       buffers, ctx.out)


def dynamic_advice(what: str) -> str:
    return (f"{what}; the Ascend backend needs constant tensor shapes and a constant grid (blocks "
            f"map to AI cores; T.dynamic sizes are not supported yet). Build the kernel in a "
            f"Python function of the size and compile it once per size (the JIT cache keeps one "
            f"kernel each), or run the dynamic kernel on a backend that takes T.dynamic (cpu)")


def _strip_launches(ctx: IsaContext, stmt):
    while isinstance(stmt, tirx.AttrStmt) and stmt.attr_key == "thread_extent":
        iv = stmt.node
        tag = str(iv.thread_tag)
        if tag.startswith("blockIdx"):
            extent = stmt.value
            if not isinstance(extent, tirx.IntImm):
                raise ctx.error("T.Kernel", dynamic_advice(f"the grid extent {extent} of {tag} "
                                                           f"is not a constant"))
            ctx.grid.append((iv.var, int(extent.value)))
            ctx.analyzer.bind(iv.var, tvm.ir.Range.from_min_extent(0, extent))
        stmt = stmt.body
    return stmt


def _lower_stmt(ctx: IsaContext, stmt) -> None:
    if isinstance(stmt, tirx.SeqStmt):
        for s in stmt.seq:
            _lower_stmt(ctx, s)
    elif isinstance(stmt, tirx.AllocBuffer):
        ctx.declare(stmt.buffer)
    elif isinstance(stmt, tirx.AttrStmt):
        if stmt.attr_key == "thread_extent":
            raise ctx.error("T.Kernel", "nested launches are not supported")
        if stmt.attr_key == "ascend.scope":
            saved_scope, ctx.scope = ctx.scope, str(getattr(stmt.node, "value", stmt.node))
            _lower_stmt(ctx, stmt.body)
            ctx.scope = saved_scope
            return
        if stmt.attr_key == "ascend.vf":
            _lower_vector_function(ctx, stmt)
            return
        _lower_stmt(ctx, stmt.body)  # layout/swizzle hints mean nothing on Ascend
    elif isinstance(stmt, tirx.Bind):
        ctx.out.append(isa.Let(stmt.var, stmt.value))
    elif isinstance(stmt, tirx.LetStmt) and hasattr(stmt, "body"):
        ctx.out.append(isa.Let(stmt.var, stmt.value))
        _lower_stmt(ctx, stmt.body)
    elif isinstance(stmt, tirx.For):
        _lower_for(ctx, stmt)
    elif isinstance(stmt, tirx.IfThenElse):
        node = isa.If(stmt.condition, [], [])
        saved = ctx.out
        ctx.out = node.then
        _lower_stmt(ctx, stmt.then_case)
        if stmt.else_case is not None:
            ctx.out = node.orelse
            _lower_stmt(ctx, stmt.else_case)
        ctx.out = saved
        ctx.out.append(node)
    elif is_tile_op(stmt):
        ctx.node = stmt
        op = TileOp.from_stmt(stmt)
        rule = ASCEND_RULES.get(op.name)
        if rule is None:
            raise ctx.error(f"tile op '{op.name}'",
                            f"the Ascend backend has no rule for it yet (it lowers "
                            f"{', '.join(sorted(ASCEND_RULES))}); please report this to "
                            f"tilelang-ascend with the kernel")
        rule(op, ctx)
    elif isinstance(stmt, tirx.Evaluate):
        intrinsic = intrinsic_of(stmt.value)
        if intrinsic is not None:  # a thread-level intrinsic (T.print, T.device_assert, ...): never dropped
            ctx.node = stmt
            raise ctx.error(f"T.{intrinsic.spelling}", "the Ascend backend has no lowering for this "
                            "thread-level intrinsic; remove it, or run the kernel on the cpu backend")
        return
    elif isinstance(stmt, tirx.BufferStore):
        ctx.node = stmt
        raise ctx.error("a scalar store", f"'{stmt.buffer.name}[...] = ...' outside T.Parallel "
                        f"would run on the Scalar unit element by element; write it inside "
                        f"T.Parallel so it becomes Vector instructions")
    else:
        ctx.node = stmt
        raise ctx.error(type(stmt).__name__, "this statement kind is not supported yet")


def _lower_vector_function(ctx: IsaContext, stmt) -> None:
    """T.SimdVF / T.SimtVF: a Vector-only region (like T.Scope("V")); under SimtVF its T.Parallel
    nests run SIMT (simt_vf.py), under SimdVF they must become SIMD instructions."""
    kind = str(getattr(stmt.node, "value", stmt.node))
    saved = ctx.scope, ctx.simt_threads
    ctx.scope = "V"
    ctx.simt_threads = int(stmt.value) if kind == "simt" else None
    _lower_stmt(ctx, stmt.body)
    ctx.scope, ctx.simt_threads = saved


def _lower_for(ctx: IsaContext, loop) -> None:
    from ..simt_vf import lower_simt_parallel
    from ..vector_lowering import lower_parallel

    if "tl.parallel" in loop.annotations:
        ctx.node = loop
        if ctx.simt_threads is not None:
            lower_simt_parallel(loop, ctx, ctx.simt_threads)
        else:
            lower_parallel(loop, ctx)
        return
    ctx.analyzer.bind(loop.loop_var, tvm.ir.Range.from_min_extent(loop.min, loop.extent))
    stages = int(loop.annotations.get("tl.num_stages", 1) or 1)
    node = isa.Loop(loop.loop_var, loop.min, loop.extent, [], stages=stages)
    for buf in ctx.stage_loop.get(loop, []):
        ctx.slots[buf] = tirx.FloorMod(loop.loop_var - loop.min, buf.stages)
    saved = ctx.out
    ctx.out = node.body
    ctx.loops.append(node)
    _lower_stmt(ctx, loop.body)
    ctx.loops.pop()
    ctx.out = saved
    ctx.out.append(node)
