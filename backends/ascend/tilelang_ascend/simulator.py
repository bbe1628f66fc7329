"""Functional simulator of an Ascend-level program on the CPU (numpy).

Each block runs on a fresh AI core: byte-addressed L1, L0A, L0B, L0C (Cube core) and UB (Vector
core) of the target's sizes, global tensors as numpy arrays. The two cores run as coroutines
interleaved one instruction at a time; a CrossWait on a flag nobody has set yet blocks its core,
and both cores blocked is a deadlock.

Every instruction has a reference implementation that ENFORCES the hardware rules it relies on:
- placement: operands in the memory the instruction reads/writes (Mmad's A in L0A, ...);
- sizes: an access past the buffer's allocation, past its stage count, or past the memory is an
  error (not a silent wrap);
- alignment: buffer starts per target.ALIGNMENT; every row a Vector or UB transfer touches starts
  on a 32-byte block;
- formats: Cube buffers are stored in their fractal format (NZ/ZZ/ZN), so a wrong conversion
  gives wrong numbers.
And it TRACKS pipe synchronization with vector clocks: an instruction on pipe P touching data that
pipe Q wrote (or, for a write, read) is an error unless a SetFlag/WaitFlag chain (or a cross-core
flag) orders Q's access before it. The check does not depend on the interleaving simulated.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import isa
from .scalar import evaluate
from .sim_memory import Memory, SimulatorError, decode, encode, from_fractal, storage_dtype, to_fractal
from .sim_vector import run_vector
from .simt_vf import SimtLoop, run_simt
from .target import ALIGNMENT, CROSS_CORE_FLAG_LIMIT, memory_sizes

__all__ = ["SimulatorError", "SimStats", "simulate_program"]

_GM_ATOMIC = {"add": np.add, "max": np.maximum, "min": np.minimum}


@dataclass
class SimStats:
    instructions: dict = field(default_factory=dict)  # "core.pipe" -> count
    flags: int = 0
    cross_flags: int = 0


class _Clocks:
    """Happens-before between pipes: own counters, vector clocks, flag queues, access records."""

    def __init__(self, kernel: str):
        self.kernel = kernel
        self.own: dict = {}
        self.vis: dict = {}
        self.queues: dict = {}
        self.records: dict = {}

    def issue(self, key) -> int:
        self.own[key] = self.own.get(key, 0) + 1
        return self.own[key]

    def token(self, key) -> dict:
        tok = dict(self.vis.get(key, {}))
        tok[key] = self.own.get(key, 0)
        return tok

    def merge(self, key, token) -> None:
        clock = self.vis.setdefault(key, {})
        for q, n in token.items():
            if clock.get(q, 0) < n:
                clock[q] = n

    def access(self, key, ident, resource, is_write, instr, name) -> None:
        clock = self.vis.get(key, {})
        recs = self.records.setdefault(resource, [])
        for (rkey, rn, rwrite) in recs:
            if rkey != key and (is_write or rwrite) and clock.get(rkey, 0) < rn:
                kind = ("writes" if is_write else "reads") + (" after a write" if rwrite else
                                                             " while a read is in flight")
                raise SimulatorError(
                    f"kernel '{self.kernel}': {key[0]} pipe {key[1]} {kind} of '{name}' by "
                    f"{rkey[0]} pipe {rkey[1]} with no covering wait "
                    f"({'wait_flag ' + rkey[1] + '->' + key[1] if rkey[0] == key[0] else 'CrossCoreWaitFlag'}"
                    f" missing) at {instr!r}" + _line(instr))
        if is_write:
            recs[:] = [(key, ident, True)]
        else:
            recs[:] = [r for r in recs if not (r[0] == key and not r[2])] + [(key, ident, False)]


def _line(instr) -> str:
    return f" (source line {instr.line})" if getattr(instr, "line", None) else ""


class _Block:
    """One AI core running one block of the program."""

    def __init__(self, prog: isa.Program, gm: dict, block_id: int, env: dict, stats: SimStats):
        self.prog, self.gm, self.block_id, self.stats = prog, gm, block_id, stats
        sizes = memory_sizes(prog.arch)
        self.mems = {name: Memory(name, size) for name, size in sizes.items()}
        self.clocks = _Clocks(prog.name)
        self.cross: dict = {}
        self.env = {isa.CUBE: dict(env), isa.VEC: dict(env)}

    # -- addressing -----------------------------------------------------------------------------
    def _slot(self, operand, env) -> int:
        buf = operand.buf
        slot = 0 if operand.slot is None else int(evaluate(operand.slot, env))
        if not 0 <= slot < buf.stages:
            raise SimulatorError(f"kernel '{self.prog.name}': stage {slot} of '{buf.name}' does "
                                 f"not exist (it has {buf.stages})")
        return slot

    def _base(self, buf: isa.Buffer, slot: int, mem: str | tuple, instr) -> int:
        allowed = (mem,) if isinstance(mem, str) else mem
        if buf.mem not in allowed:
            raise SimulatorError(f"kernel '{self.prog.name}': {type(instr).__name__} needs its "
                                 f"operand in {' or '.join(allowed)}, but '{buf.name}' is in "
                                 f"{buf.mem} (placement){_line(instr)}")
        if buf.offset is None or buf.offset % ALIGNMENT[buf.mem]:
            raise SimulatorError(f"kernel '{self.prog.name}': '{buf.name}' starts at {buf.mem} "
                                 f"offset {buf.offset}, not {ALIGNMENT[buf.mem]}-byte aligned")
        return buf.offset + slot * buf.stage_bytes

    def tile_addr(self, tile: isa.Tile, env, instr) -> tuple[int, int]:
        buf = tile.buf
        base = self._base(buf, self._slot(tile, env), "UB", instr)
        row = int(evaluate(tile.row, env))
        if row < 0 or row + tile.rows > buf.rows or tile.col + tile.cols > buf.row_stride:
            raise SimulatorError(f"kernel '{self.prog.name}': tile {tile!r} (row {row}) runs "
                                 f"outside buffer '{buf.name}' ({buf.rows}x{buf.row_stride}){_line(instr)}")
        es = isa.dtype_bytes(buf.dtype)
        start = base + (row * buf.row_stride + tile.col) * es
        if start % 32 or (buf.row_stride * es) % 32:
            raise SimulatorError(f"kernel '{self.prog.name}': tile {tile!r} rows start at UB byte "
                                 f"{start} (stride {buf.row_stride * es}), not on a 32-byte block "
                                 f"(misaligned){_line(instr)}")
        return start, buf.row_stride * es

    def read_tile(self, tile: isa.Tile, env, instr) -> np.ndarray:
        start, stride = self.tile_addr(tile, env, instr)
        es = isa.dtype_bytes(tile.dtype)
        span = (tile.rows - 1) * stride // es + tile.cols
        flat = self.mems["UB"].read(start, span, tile.dtype, repr(instr))
        idx = (np.arange(tile.rows)[:, None] * (stride // es) + np.arange(tile.cols)[None, :])
        return flat[idx]

    def write_tile(self, tile: isa.Tile, values, env, instr) -> None:
        start, stride = self.tile_addr(tile, env, instr)
        values = np.broadcast_to(np.asarray(values), (tile.rows, tile.cols))
        for r in range(tile.rows):
            self.mems["UB"].write(start + r * stride, values[r], tile.dtype, repr(instr))

    def read_mat(self, mat: isa.Mat, mem, env, instr) -> np.ndarray:
        buf = mat.buf
        base = self._base(buf, self._slot(mat, env), mem, instr)
        rp, cp = _padded(buf, mat)
        self._fits(buf, mat, rp * cp, instr)
        flat = self.mems[buf.mem].read(base, rp * cp, buf.dtype, repr(instr))
        return from_fractal(flat, buf.fmt, buf.mem, buf.dtype, mat.rows, mat.cols)

    def write_mat(self, mat: isa.Mat, values: np.ndarray, mem, env, instr) -> None:
        buf = mat.buf
        base = self._base(buf, self._slot(mat, env), mem, instr)
        if values.shape != (mat.rows, mat.cols):
            raise SimulatorError(f"kernel '{self.prog.name}': {type(instr).__name__} writes a "
                                 f"{values.shape} matrix into {mat!r}{_line(instr)}")
        flat = to_fractal(values, buf.fmt, buf.mem, buf.dtype)
        self._fits(buf, mat, flat.size, instr)
        self.mems[buf.mem].write(base, flat, buf.dtype, repr(instr))

    def _fits(self, buf, mat, elems, instr) -> None:
        if elems * isa.dtype_bytes(buf.dtype) > buf.stage_bytes:
            raise SimulatorError(f"kernel '{self.prog.name}': the {mat.rows}x{mat.cols} matrix does "
                                 f"not fit '{buf.name}' ({buf.stage_bytes} bytes){_line(instr)}")

    # -- global memory --------------------------------------------------------------------------
    def _gm_box(self, g: isa.GmTile, env):
        arr = self.gm[g.tensor.name]
        if g.block_slice:
            arr = arr[self.block_id]
        mins = [int(evaluate(m, env)) for m in g.mins]
        sel, valid = [], [1, g.cols]
        for d, (lo, ext, size) in enumerate(zip(mins, g.extents, arr.shape)):
            hi = min(lo + int(ext), size)
            n = max(hi - max(lo, 0), 0)
            if lo < 0:
                raise SimulatorError(f"kernel '{self.prog.name}': tile {g!r} starts at negative "
                                     f"index {lo} in dim {d}")
            if d == g.col_dim:
                valid[1] = n
            elif d == g.row_dim:
                valid[0] = n
            elif n == 0:
                valid = [0, 0]
            sel.append(slice(lo, lo + n) if n else slice(0, 0))
        return arr, tuple(sel), valid

    def gm_read(self, g: isa.GmTile, env) -> tuple[np.ndarray, int, int]:
        """The part of the tile inside the tensor, and its (rows, cols)."""
        arr, sel, (vr, vc) = self._gm_box(g, env)
        out = arr[sel].reshape(vr, vc) if vr and vc else np.zeros((0, 0), storage_dtype(g.dtype))
        return decode(out, g.dtype), vr, vc

    def gm_write(self, g: isa.GmTile, values, env, atomic: str | None = None) -> None:
        arr, sel, (vr, vc) = self._gm_box(g, env)
        if vr and vc:
            view = arr[sel]
            new = np.asarray(values)[:vr, :vc].reshape(view.shape)
            if atomic:  # the MTE/FIX write unit combines in float32 (SetAtomicAdd/Max/Min)
                old = decode(view, g.dtype).astype(np.float32)
                new = _GM_ATOMIC[atomic](old, new.astype(np.float32))
            view[...] = encode(new, g.dtype).reshape(view.shape)

    def gm_key(self, g: isa.GmTile):
        return (g.tensor.name, self.block_id if g.block_slice else None)

    # -- execution ------------------------------------------------------------------------------
    def run(self) -> None:
        gens = {isa.CUBE: self._stream(isa.CUBE, self.prog.cube),
                isa.VEC: self._stream(isa.VEC, self.prog.vec)}
        blocked = set()
        while gens:
            progressed = False
            for core in list(gens):
                try:
                    status = next(gens[core])
                except StopIteration:
                    del gens[core]
                    progressed = True
                    continue
                if status == "blocked":
                    blocked.add(core)
                else:
                    blocked.discard(core)
                    progressed = True
            if gens and not progressed and blocked >= set(gens):
                raise SimulatorError(f"kernel '{self.prog.name}' deadlocks in block "
                                     f"{self.block_id}: core(s) {sorted(gens)} wait on cross-core "
                                     f"flags nobody sets")
        self._check_drained()

    def _check_drained(self) -> None:
        for key, queue in list(self.clocks.queues.items()) + list(self.cross.items()):
            if queue:
                raise SimulatorError(f"kernel '{self.prog.name}': flag {key} was set {len(queue)} "
                                     f"more time(s) than waited in block {self.block_id} "
                                     f"(unbalanced set_flag/wait_flag)")

    def _stream(self, core: str, stmts):
        env = self.env[core]
        for s in stmts:
            if isinstance(s, isa.Loop):
                start, extent = int(evaluate(s.start, env)), int(evaluate(s.extent, env))
                for v in range(start, start + extent):
                    env[s.var] = v
                    yield from self._stream(core, s.body)
            elif isinstance(s, isa.If):
                yield from self._stream(core, s.then if evaluate(s.cond, env) else s.orelse)
            elif isinstance(s, isa.Let):
                env[s.var] = evaluate(s.value, env)
            else:
                if isinstance(s, isa.CrossWait):
                    while not self.cross.get((core, s.flag)):
                        yield "blocked"
                self._execute(core, s, env)
                yield "step"

    def _execute(self, core: str, instr, env) -> None:
        if instr.core != core:
            raise SimulatorError(f"kernel '{self.prog.name}': {instr!r} belongs to the {instr.core} "
                                 f"core but sits in the {core} stream")
        key = (core, instr.pipe)
        name = f"{core}.{instr.pipe}"
        self.stats.instructions[name] = self.stats.instructions.get(name, 0) + 1
        if self._sync(core, instr, key):
            return
        ident = self.clocks.issue(key)
        seen = {}
        for op in instr.reads():
            seen.setdefault(self._resource(op, env), (False, op))
        for op in instr.writes():
            seen[self._resource(op, env)] = (True, op)
        for res, (is_write, op) in seen.items():
            label = op.tensor.name if isinstance(op, isa.GmTile) else op.buf.name
            self.clocks.access(key, ident, res, is_write, instr, label)
        self._semantics(instr, env)

    def _resource(self, op, env):
        if isinstance(op, isa.GmTile):
            return self.gm_key(op)
        return (id(op.buf), self._slot(op, env))

    def _sync(self, core, instr, key) -> bool:
        c = self.clocks
        if isinstance(instr, (isa.SetFlag, isa.WaitFlag)):
            event = int(evaluate(instr.event, self.env[core]))
        if isinstance(instr, isa.SetFlag):
            c.issue(key)
            queue = c.queues.setdefault((core, instr.src, instr.dst, event), [])
            if queue:
                raise SimulatorError(f"kernel '{self.prog.name}': set_flag {instr.src}->{instr.dst} "
                                     f"event {event} on the {core} core is set again before its "
                                     f"wait (hardware events are single bits){_line(instr)}")
            queue.append(c.token(key))
            self.stats.flags += 1
            return True
        if isinstance(instr, isa.WaitFlag):
            queue = c.queues.get((core, instr.src, instr.dst, event))
            if not queue:
                raise SimulatorError(f"kernel '{self.prog.name}': wait_flag {instr.src}->"
                                     f"{instr.dst} event {event} on the {core} core with no "
                                     f"set_flag before it (it would hang){_line(instr)}")
            c.merge((core, instr.dst), queue.pop(0))
            return True
        if isinstance(instr, isa.CrossSet):
            c.issue(key)
            other = isa.VEC if core == isa.CUBE else isa.CUBE
            queue = self.cross.setdefault((other, instr.flag), [])
            if len(queue) >= CROSS_CORE_FLAG_LIMIT:
                raise SimulatorError(f"kernel '{self.prog.name}': cross-core flag {instr.flag} set "
                                     f"more than {CROSS_CORE_FLAG_LIMIT} times without a wait")
            queue.append(c.token(key))
            self.stats.cross_flags += 1
            return True
        if isinstance(instr, isa.CrossWait):
            token = self.cross[(core, instr.flag)].pop(0)
            for pipe in isa.PIPES:
                c.merge((core, pipe), token)
            return True
        return False

    def _semantics(self, instr, env) -> None:
        if isinstance(instr, isa.CopyGmToL1):
            # DataCopy ND2NZ writes only the valid rows/cols; the rest of L1 keeps its bytes
            part, vr, vc = self.gm_read(instr.src, env)
            mat = self.read_mat(instr.dst, "L1", env, instr)
            if vr and vc:
                mat[:vr, :vc] = part
            self.write_mat(instr.dst, mat, "L1", env, instr)
        elif isinstance(instr, isa.InitL1):
            mat = instr.dst
            self.write_mat(mat, np.zeros((mat.rows, mat.cols), np.float32), "L1", env, instr)
        elif isinstance(instr, isa.LoadL1ToL0):
            src = self.read_mat(instr.src, "L1", env, instr)
            block = src[instr.row0:instr.row0 + instr.rows, instr.col0:instr.col0 + instr.cols]
            if block.shape != (instr.rows, instr.cols):
                raise SimulatorError(f"kernel '{self.prog.name}': {instr!r} reads past its L1 "
                                     f"matrix{_line(instr)}")
            mem = instr.dst.buf.mem
            if mem not in ("L0A", "L0B"):
                self._base(instr.dst.buf, 0, ("L0A", "L0B"), instr)
            self.write_mat(instr.dst, block.T if instr.transpose else block, mem, env, instr)
        elif isinstance(instr, isa.Mmad):
            a = self.read_mat(instr.a, "L0A", env, instr).astype(np.float32)
            b = self.read_mat(instr.b, "L0B", env, instr).astype(np.float32)
            if a.shape != (instr.m, instr.k) or b.shape != (instr.k, instr.n):
                raise SimulatorError(f"kernel '{self.prog.name}': {instr!r} operand shapes "
                                     f"{a.shape} x {b.shape}{_line(instr)}")
            prod = a @ b
            if not evaluate(instr.init, env):
                prod = prod + self.read_mat(instr.c, "L0C", env, instr)
            self.write_mat(instr.c, prod.astype(np.float32), "L0C", env, instr)
        elif isinstance(instr, isa.Fixpipe):
            self.gm_write(instr.dst, self.read_mat(instr.src, "L0C", env, instr), env, instr.atomic)
        elif isinstance(instr, isa.CopyGmToUb):
            _same_dtype(self, instr, instr.src.dtype, instr.dst.dtype)
            part, vr, vc = self.gm_read(instr.src, env)
            if vr and vc:
                sub = isa.Tile(instr.dst.buf, vr, vc, instr.dst.row, instr.dst.col, instr.dst.slot)
                self.tile_addr(instr.dst, env, instr)  # the whole tile must be placeable
                self.write_tile(sub, part, env, instr)
        elif isinstance(instr, isa.CopyUbToGm):
            _same_dtype(self, instr, instr.src.dtype, instr.dst.dtype)
            self.gm_write(instr.dst, self.read_tile(instr.src, env, instr), env, instr.atomic)
        elif isinstance(instr, isa.VectorInstr):
            run_vector(self, instr, env)
        elif isinstance(instr, SimtLoop):
            run_simt(self, instr, env)
        else:
            raise SimulatorError(f"kernel '{self.prog.name}': no reference implementation for "
                                 f"{type(instr).__name__}")


def _padded(buf, mat):
    from .sim_memory import padded_dims
    return padded_dims(buf.mem, buf.dtype, mat.rows, mat.cols)


def _same_dtype(block, instr, a, b):
    if a != b:
        raise SimulatorError(f"kernel '{block.prog.name}': {type(instr).__name__} moves bytes and "
                             f"cannot convert {a} to {b}{_line(instr)}")


def _block_envs(prog: isa.Program):
    extents = [int(e) for _, e in prog.grid]
    for linear in range(prog.num_blocks):
        env, rest = {}, linear
        for (var, _), ext in zip(prog.grid, extents):
            env[var] = rest % ext
            rest //= ext
        yield linear, env


def simulate_program(prog: isa.Program, arrays: dict) -> SimStats:
    """Run every block of ``prog`` on ``arrays`` (tensor name -> numpy array in storage dtype,
    modified in place; workspaces are allocated here). Returns instruction counts."""
    gm = dict(arrays)
    for ws in prog.workspaces:
        gm[ws.name] = np.zeros((prog.num_blocks,) + tuple(ws.shape), dtype=storage_dtype(ws.dtype))
    stats = SimStats()
    for linear, env in _block_envs(prog):
        _Block(prog, gm, linear, env, stats).run()
    return stats
