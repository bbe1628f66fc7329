"""SIMT vector functions: ``with T.SimtVF(threads=N):`` runs T.Parallel bodies thread by element.

The Vector core of Ascend 950 (dav-3510) also runs SIMT code: a vector function launched over N
threads, each taking elements ``tid, tid + N, ...`` of the iteration space, with scalar loads and
stores into the Unified Buffer. That is what a T.Parallel body needs when it cannot become SIMD
(a gather ``x[idx[i]]``, a shifted index ``x[i, j + 1]``, a transposed access, an ``if`` on
data). A2/A3 (dav-c220) Vector cores are SIMD only, so the region is refused there.

One T.Parallel nest in the region becomes one ``SimtLoop`` instruction on pipe V. Its body is kept
as statements over UB buffers where every buffer load is a named scalar (``ld<k>``, inner loads
first, so ``x[idx[i]]`` reads ``idx`` then ``x``); that keeps the instruction made of plain
PrimExprs, which the simulator evaluates, the codegen prints and the artifact stores.

Reads and writes are whole buffers for the sync pass (a SIMT function may touch any element).
The simulator runs the elements in order; a body whose elements read what other elements of the
same loop write is a data race on the hardware (the threads run concurrently) and is the author's
to avoid, as in CUDA.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from tvm import ir, tirx

from tilelang_core.transform.structural import structural_map

from . import isa
from .scalar import C_TYPES, evaluate, to_c
from .sim_memory import SimulatorError

@dataclass(eq=False)
class Load:
    var: object          # the tirx.Var the value is bound to
    buf: isa.Buffer
    indices: list

    def __repr__(self):
        return f"{self.var}={self.buf.name}[{', '.join(map(str, self.indices))}]"


def _loads(loads) -> str:
    return "".join(f"{ld!r}; " for ld in loads)


@dataclass(eq=False)
class Store:
    buf: isa.Buffer
    indices: list
    value: object
    loads: list = field(default_factory=list)

    def __repr__(self):
        return f"{_loads(self.loads)}{self.buf.name}[{', '.join(map(str, self.indices))}] = {self.value}"


@dataclass(eq=False)
class Guard:
    cond: object
    loads: list
    then: list
    orelse: list

    def __repr__(self):
        return f"{_loads(self.loads)}if {self.cond}: {self.then} else: {self.orelse}"


@dataclass(eq=False, repr=False)
class SimtLoop(isa.Instr):
    """Vector core, SIMT: ``threads`` threads run ``body`` for every point of ``vars`` x
    ``extents`` (row-major), the body's UB buffers at their stage ``slots``."""

    threads: int
    vars: list
    extents: list
    body: list
    bufs: list
    written: list
    slots: dict
    pipe = "V"
    core = isa.VEC

    def _tiles(self, bufs):
        return [isa.Tile(b, b.rows, b.cols, slot=self.slots.get(b.name)) for b in bufs]

    def reads(self):
        return self._tiles(self.bufs)

    def writes(self):
        return self._tiles(self.written)

    def operands(self):
        space = " x ".join(f"{v}<{e}" for v, e in zip(self.vars, self.extents))
        return f"threads={self.threads}, {space}: {self.body}"


# -- lowering ------------------------------------------------------------------------------------
class _Builder:
    def __init__(self, ctx, threads: int):
        self.ctx, self.threads = ctx, threads
        self.bufs: dict = {}
        self.written: dict = {}
        self.count = 0

    def buffer(self, var) -> isa.Buffer:
        if var in self.ctx.params:
            raise self.ctx.error("T.SimtVF", f"global tensor '{var.name}' inside a SIMT vector "
                                             f"function; T.copy the tile into a UB buffer "
                                             f"(T.alloc_shared) before the region")
        buf = self.ctx.vector_buffer(var)
        if buf.mem != "UB":
            raise self.ctx.error("T.SimtVF", f"'{buf.name}' lives in {buf.mem}; SIMT vector "
                                             f"functions see only the Unified Buffer")
        self.bufs.setdefault(buf.name, buf)
        return buf

    def expr(self, e, binds):
        """``e`` with every buffer load replaced by a fresh scalar; (expr, loads in order)."""
        from .vector_lowering import _inline

        loads = []

        def load(node):
            self.count += 1
            var = tirx.Var(f"ld{self.count}", str(node.ty.dtype))
            loads.append(Load(var, self.buffer(node.source), list(node.indices)))
            return var

        out = structural_map(_inline(e, binds), [(ir.TensorLoad, load)])
        return out, loads

    def stmts(self, stmt, binds) -> list:
        if isinstance(stmt, tirx.SeqStmt):
            return [s for part in stmt.seq for s in self.stmts(part, binds)]
        if isinstance(stmt, tirx.Bind):
            from .vector_lowering import _inline
            binds[stmt.var] = _inline(stmt.value, binds)
            return []
        if isinstance(stmt, tirx.BufferStore):
            if getattr(stmt, "span", None) is not None:
                self.ctx.node = stmt
            buf = self.buffer(stmt.buffer)
            self.written.setdefault(buf.name, buf)
            loads, indices = [], []
            for i in stmt.indices:
                idx, more = self.expr(i, binds)
                indices.append(idx)
                loads += more
            value, more = self.expr(stmt.value, binds)
            return [Store(buf, indices, value, loads + more)]
        if isinstance(stmt, tirx.IfThenElse):
            cond, loads = self.expr(stmt.condition, binds)
            orelse = self.stmts(stmt.else_case, dict(binds)) if stmt.else_case is not None else []
            return [Guard(cond, loads, self.stmts(stmt.then_case, dict(binds)), orelse)]
        raise self.ctx.error("T.SimtVF", f"{type(stmt).__name__} in a SIMT T.Parallel body; it "
                                         f"takes stores, lets and ifs")


def lower_simt_parallel(loop, ctx, threads: int) -> None:
    """One T.Parallel nest inside ``T.SimtVF`` -> one SimtLoop on the Vector core."""
    if not ctx.capability("simt_vector"):
        raise ctx.error("T.SimtVF", f"the Vector cores of {ctx.arch} run SIMD only; SIMT vector "
                                    f"functions need dav-3510 (Ascend 950). Write the body so it "
                                    f"becomes SIMD, or compile for ascend:dav-3510")
    loops, stmt = [], loop
    while isinstance(stmt, tirx.For) and "tl.parallel" in stmt.annotations:
        if not (isinstance(stmt.min, tirx.IntImm) and stmt.min.value == 0
                and isinstance(stmt.extent, tirx.IntImm)):
            raise ctx.error("T.Parallel", f"loop '{stmt.loop_var}' must run over a constant "
                                          f"range from 0 in a SIMT vector function")
        loops.append(stmt)
        stmt = stmt.body
    b = _Builder(ctx, threads)
    body = b.stmts(stmt, {})
    bufs = list(b.bufs.values())
    slots = {buf.name: ctx.slot(buf) for buf in bufs if ctx.slot(buf) is not None}
    ctx.emit(SimtLoop(threads, [lp.loop_var for lp in loops], [int(lp.extent) for lp in loops],
                      body, bufs, list(b.written.values()), slots))


# -- reference implementation (simulator) ---------------------------------------------------------
def _element(arrays, buf, indices, env, instr, prog):
    idx = tuple(int(evaluate(i, env)) for i in indices)
    shape = arrays[buf.name].shape if len(indices) == 2 else (buf.cols,)
    if len(idx) != len(shape) or any(not 0 <= i < n for i, n in zip(idx, shape)):
        raise SimulatorError(f"kernel '{prog.name}': SIMT access {buf.name}{list(idx)} is outside "
                             f"the buffer ({'x'.join(map(str, shape))}){_where(instr)}")
    return (0, idx[0]) if len(idx) == 1 else idx


def _where(instr) -> str:
    return f" (line {instr.line})" if instr.line else ""


def _run(stmts, arrays, env, instr, prog) -> None:
    for s in stmts:
        for ld in s.loads:
            env[ld.var] = arrays[ld.buf.name][_element(arrays, ld.buf, ld.indices, env, instr, prog)]
        if isinstance(s, Guard):
            _run(s.then if evaluate(s.cond, env) else s.orelse, arrays, env, instr, prog)
        else:
            arrays[s.buf.name][_element(arrays, s.buf, s.indices, env, instr, prog)] = \
                evaluate(s.value, env)


def run_simt(block, instr: SimtLoop, env) -> None:
    tiles = {t.buf.name: t for t in instr.reads()}
    arrays = {name: block.read_tile(t, env, instr).copy() for name, t in tiles.items()}
    local = dict(env)
    for point in np.ndindex(*instr.extents):
        local.update(zip(instr.vars, point))
        _run(instr.body, arrays, local, instr, block.prog)
    for t in instr.writes():
        block.write_tile(t, arrays[t.buf.name], env, instr)


# -- Ascend C ---------------------------------------------------------------------------------
def _free_vars(instr: SimtLoop) -> list:
    bound = set(instr.vars)
    found: dict = {}

    def visit(e):
        if isinstance(e, tirx.Var) and e not in bound:
            found.setdefault(str(e.name), e)
        return e

    def walk(stmts):
        for s in stmts:
            for ld in s.loads:
                bound.add(ld.var)
            exprs = [i for ld in s.loads for i in ld.indices]
            exprs += [s.cond] if isinstance(s, Guard) else list(s.indices) + [s.value]
            for e in exprs:
                structural_map(e, [(tirx.Var, visit)])
            if isinstance(s, Guard):
                walk(s.then)
                walk(s.orelse)

    walk(instr.body)
    for slot in instr.slots.values():
        structural_map(slot, [(tirx.Var, visit)])
    return [v for name, v in sorted(found.items()) if v not in bound]


def _c_body(stmts, depth: int, out: list) -> None:
    pad = "  " * depth
    for s in stmts:
        for ld in s.loads:
            out.append(f"{pad}const {C_TYPES[ld.buf.dtype]} {ld.var} = "
                       f"{ld.buf.name}[{_c_index(ld.buf, ld.indices)}];")
        if isinstance(s, Guard):
            out.append(f"{pad}if ({to_c(s.cond)}) {{")
            _c_body(s.then, depth + 1, out)
            out.append(f"{pad}}} else {{" if s.orelse else f"{pad}}}")
            if s.orelse:
                _c_body(s.orelse, depth + 1, out)
                out.append(f"{pad}}}")
        else:
            out.append(f"{pad}{s.buf.name}[{_c_index(s.buf, s.indices)}] = "
                       f"({C_TYPES[s.buf.dtype]})({to_c(s.value)});")


def _c_index(buf: isa.Buffer, indices) -> str:
    if len(indices) == 1:
        return to_c(indices[0])
    return f"({to_c(indices[0])}) * {buf.row_stride} + ({to_c(indices[1])})"


def function_c(instr: SimtLoop, name: str) -> list[str]:
    """The ``__simt_vf__`` function of one SimtLoop (UB pointers and scalars as parameters)."""
    params = [f"__ubuf__ {C_TYPES[b.dtype]} *{b.name}" for b in instr.bufs]
    params += [f"{C_TYPES[str(v.ty.dtype)]} {v}" for v in _free_vars(instr)]
    total = math.prod(instr.extents)
    lines = [f"// SIMT vector function (line {instr.line}): {instr.threads} threads over "
             f"{' x '.join(map(str, instr.extents))} elements",
             f"__simt_vf__ __launch_bounds__({instr.threads}) inline void {name}("
             f"{', '.join(params)}) {{",
             f"  for (int32_t tl_e = threadIdx.x; tl_e < {total}; tl_e += blockDim.x) {{"]
    rest = "tl_e"
    for var, ext in reversed(list(zip(instr.vars, instr.extents))):
        lines.append(f"    const int32_t {var} = {rest} % {ext};")
        rest = f"({rest} / {ext})"
    _c_body(instr.body, 2, lines)
    return lines + ["  }", "}", ""]


def launch_c(instr: SimtLoop, name: str, slot_offset) -> str:
    """The call in the Vector stream (UB addresses of this stage, then the scalars)."""
    args = [f"(__ubuf__ {C_TYPES[b.dtype]} *){b.name}[{slot_offset(b, instr.slots.get(b.name))}]"
            f".GetPhyAddr()" for b in instr.bufs]
    args += [str(v) for v in _free_vars(instr)]
    return f"asc_vf_call<{name}>(dim3({instr.threads}), {', '.join(args)});"
