"""Atomic adds into consecutive elements of a global tensor as one vector atomic (``AtomicAddx2`` /
``AtomicAddx4``), where the backend has them (SimtDialect.vector_atomic_adds).

A thread that adds values into 2 or 4 adjacent elements issues one instruction for them (sm_90's
``red.global.add.v4.f32``, a half2 add) instead of one each: fewer memory transactions for split-K
epilogues, gradient accumulations and scatter-adds. Each element's add stays atomic on its own,
exactly as before; only the instruction that carries it changes, so the values are the same.
The helpers are named as TileLang names its own, so a kernel's source reads as it does there.

Three places make such runs, all checked the same way (``_vector_add``):

- a loop over a thread's registers (``vector_loop``): a fragment's tile atomic, or a T.Parallel
  body that adds per element, split into runs of ``vec`` registers;
- a tile atomic from shared or global memory dealt over the threads (``tile_runs``);
- adjacent statements (``merge_adjacent``): T.atomic_addx2/x4's lanes, written one after another.

A run becomes one vector atomic when lane k's destination is the run's first element plus k along
the tensor's contiguous last axis, and that first element is provably a multiple of the width
(the vector is aligned: the GPU faults otherwise); else the scalar atomics stay. Not vectorized:
shared destinations (the helpers address global memory), values that read a destination (the
vector form reads every lane's value before any lane's add), and return_prev (its previous values
come lane by lane). Lanes whose guards differ (a ragged tile's edge) take the vector atomic when
all are in bounds and their own scalar atomics otherwise. A memory order other than relaxed is
kept by the vector helper (its last argument); lanes of several adds in one body are then not
interleaved differently, the loop is left alone.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from tilelang_core.ir import region as R
from tilelang_core.transform.bindings import calls_above, is_pure, reads_any
from tilelang_core.transform.structural import seq

from . import intrinsics as I
from .lowering import GLOBAL, cast
from .transform.state import substitute

#: prefix of the helpers: ``void AtomicAddx<N>(T* addr, T v0, ..., T v<N-1>[, int order])``
HELPER = "AtomicAddx"
_SCALAR = I.ATOMIC_HELPER + "add"


class _Add:
    """One ``[if (guard)] tl_atomic_add(&buffer[indices], value[, order])`` statement."""

    def __init__(self, stmt, guard, load, value, order):
        self.stmt, self.guard, self.load, self.value, self.order = stmt, guard, load, value, order

    @property
    def buffer(self):
        return self.load.source

    @staticmethod
    def parse(stmt):
        guard, inner = None, stmt
        if isinstance(stmt, tirx.IfThenElse) and stmt.else_case is None:
            guard, inner = stmt.condition, stmt.then_case
        if not I.is_call_of(inner, _SCALAR) or str(inner.value.args[0].value) != _SCALAR:
            return None
        address, *rest = inner.value.args[1:]
        if not (isinstance(address, tvm.ir.Call) and str(address.op.name) == "tirx.address_of"
                and isinstance(address.args[0], tvm.ir.TensorLoad)):
            return None
        order = rest[1] if len(rest) > 1 else None
        return _Add(stmt, guard, address.args[0], rest[0], order)


def widest(st, dt: str) -> int:
    return int(st.dialect.vector_atomic_adds.get(dt, 1))


def _effects(expr) -> bool:
    """Whether evaluating ``expr`` does more than compute and read (an atomic, a helper call):
    the vector form evaluates every lane's value before any lane's add."""
    return calls_above(expr, 1)  # 1: CallEffectKind kPure


def _vector_add(lanes: list, st, vec: int, known: dict | None = None):
    """The vector form of ``lanes`` (the same add, lane k's destination k elements after lane
    0's), or None when they do not make an aligned run the backend can add at once. ``known``:
    values of bound names the indices use (``idx_j = by * 16 + j * 2``), for the proofs only."""
    first = lanes[0]
    buffer, dt = first.buffer, str(first.buffer.ty.dtype)
    if vec < 2 or widest(st, dt) < vec or str(buffer.ty.storage_scope) not in GLOBAL:
        return None
    ana = st.analyzer

    def proof(expr):
        return st.simplify(substitute(expr, known)) if known else expr

    *outer, last = [proof(i) for i in first.load.indices]
    for k, lane in enumerate(lanes):
        if not lane.buffer.same_as(buffer) or reads_any(lane.value, [buffer]) or _effects(lane.value):
            return None
        if (lane.order is None) != (first.order is None) or (
                lane.order is not None and int(lane.order.value) != int(first.order.value)):
            return None
        *o, x = [proof(i) for i in lane.load.indices]
        if not all(ana.can_prove(st.simplify(a - b) == 0) for a, b in zip(o, outer, strict=True)):
            return None
        if not ana.can_prove(st.simplify(x - last) == k):
            return None
    if not ana.can_prove(tirx.floormod(last, vec) == 0):
        return None
    if not ((len(outer) == 0 and not buffer.ty.strides) or R.rows_in_vectors(buffer, vec, ana)):
        return None
    values = [cast(lane.value, dt) for lane in lanes]
    order = [] if first.order is None else [first.order]
    call = I.call(f"{HELPER}{vec}", tirx.address_of(first.load), *values, *order)
    guards = [lane.guard for lane in lanes]
    if all(g is None for g in guards):
        return call
    if all(g is not None and tvm_ffi.structural_equal(g, guards[0]) for g in guards):
        return tirx.IfThenElse(guards[0], call, None)
    # a ragged edge: the vector where every lane is in bounds, each lane's own atomic elsewhere
    every = None
    for g in guards:
        if g is not None:
            every = g if every is None else tirx.And(every, g)
    return tirx.IfThenElse(st.simplify(every), call, tirx.SeqStmt([lane.stmt for lane in lanes]))


def _flatten(stmt) -> list:
    return [s for part in stmt.seq for s in _flatten(part)] if isinstance(stmt, tirx.SeqStmt) else [stmt]


def vector_loop(body, l_var, local_size: int, vec: int, st):
    """``for lo: [AtomicAddx<vec>(...)]`` for ``for l in range(local_size): body`` when ``body`` is
    atomic adds (and bindings their values use) whose lanes ``l = lo * vec + k`` make aligned runs;
    else None. ``vec`` is the widest run to try (the registers' run); narrower ones are tried too."""
    items = _flatten(body)
    adds = [_Add.parse(s) for s in items]
    if not any(adds) or any(a is None and not isinstance(s, tirx.Bind) for a, s in zip(adds, items)):
        return None
    adds = [a for a in adds if a is not None]
    if len(adds) > 1 and any(a.order is not None and int(a.order.value) != 0 for a in adds):
        return None  # several ordered adds: their order across the lanes would change
    destinations = [a.buffer for a in adds]
    binds = [s for s in items if isinstance(s, tirx.Bind)]
    if any(reads_any(x, destinations) or _effects(x) for x in [b.value for b in binds] + [a.value for a in adds]):
        return None  # (each add's run is issued whole, before the next add's: no value may see them)
    vec = min(vec, *(widest(st, str(b.ty.dtype)) for b in destinations))
    vec = 1 << (vec.bit_length() - 1) if vec > 0 else 1
    while vec > 1 and local_size % vec:
        vec //= 2
    while vec > 1:
        lo = tirx.Var("lo", "int32")
        st.analyzer.bind(lo, tvm.ir.Range.from_min_extent(0, local_size // vec))
        lanes = [_lane_adds(items, {l_var: lo * vec + k}) for k in range(vec)]
        vectors = [_vector_add([lane[i] for lane in lanes], st, vec) for i in range(len(adds))]
        if all(v is not None for v in vectors):
            stmt = seq(vectors)
            return tirx.For(lo, tirx.const(0, "int32"), tirx.const(local_size // vec, "int32"),
                            tirx.ForKind.UNROLLED, stmt)
        vec //= 2
    return None


def _lane_adds(items, at: dict) -> list:
    """The adds of one lane, with ``at`` substituted and the bindings before them inlined."""
    values, out = dict(at), []
    for s in items:
        if isinstance(s, tirx.Bind):
            values[s.var] = substitute(s.value, values)
        else:
            out.append(_Add.parse(substitute(s, values)))
    return out


def vector_run(stmts: list, st, vec: int):
    """One vector atomic for the adds ``stmts`` (lane k's destination k elements after lane 0's),
    or the statements as they are."""
    adds = [_Add.parse(s) for s in stmts]
    merged = _vector_add(adds, st, vec) if all(a is not None for a in adds) else None
    return merged if merged is not None else seq(list(stmts))


def tile_runs(st, dst_dtype: str, extents, last_aligned) -> int:
    """Elements per vector atomic for a tile add into ``dst`` dealt over threads: the widest the
    backend has for the type that divides the tile's last extent, leaves no thread idle, and for
    which ``last_aligned(vec)`` (the destination's rows and start are aligned); 1 for none."""
    vec = widest(st, dst_dtype)
    last = R.as_int(extents[-1]) if extents else None
    total = 1
    for e in extents:
        total = total * (R.as_int(e) or 0)
    # (as T.Parallel's vectors: narrower where the wide runs would leave threads idle)
    while vec > 1 and (last is None or last % vec or total // vec < st.num_threads or not last_aligned(vec)):
        vec //= 2
    return vec


def merge_adjacent(body, st):
    """``body`` with runs of adjacent relaxed atomic adds into consecutive elements (T.atomic_addx2
    / x4's lanes) merged into vector atomics (see the module docstring). The bindings between the
    lanes (each lane's value, read first) move before the vector atomic, which reads them all."""
    if not st.dialect.vector_atomic_adds:
        return body
    known = _pure_bindings(body)

    def on_seq(node):
        stmts = _flatten(node)
        out, i, changed = [], 0, False
        while i < len(stmts):
            took = _merge_at(stmts, i, st, known)
            if took is None:
                out.append(stmts[i])
                i += 1
                continue
            merged, binds, i = took
            out.extend(binds)
            out.append(merged)
            changed = True
        return seq(out) if changed else node

    return tvm_ffi.structural_map(body, [(tirx.SeqStmt, on_seq)])


def _pure_bindings(body) -> dict:
    """Every binding of ``body`` whose value reads no memory, by variable, each in terms of the
    variables no binding defines (a bound name means its value wherever it is in scope)."""
    known = {}
    for bind in _binds(body):
        if is_pure(bind.value):
            known[bind.var] = substitute(bind.value, known) if known else bind.value
    return known


def _binds(body) -> list:
    found = []
    tvm_ffi.structural_walk(body, [(tirx.Bind, found.append)], order="pre")
    return found


def _merge_at(stmts: list, i: int, st, known: dict):
    """(vector atomic, bindings to put before it, index after the run) for the run of lanes that
    starts at ``stmts[i]``, or None."""
    adds, binds = [], []
    for j in range(i, len(stmts)):
        if isinstance(stmts[j], tirx.Bind):
            binds.append(stmts[j])
            continue
        add = _Add.parse(stmts[j])
        if add is None:
            break
        adds.append((add, j + 1, len(binds)))
    if not adds or any(a.order is not None for a, _, _ in adds):
        return None
    vec = widest(st, str(adds[0][0].buffer.ty.dtype))
    while vec > 1:
        if len(adds) >= vec:
            lanes = [a for a, _, _ in adds[:vec]]
            end, nbinds = adds[vec - 1][1], adds[vec - 1][2]
            before = binds[:nbinds]
            if not any(reads_any(b.value, [lanes[0].buffer]) or _effects(b.value) for b in before):
                merged = _vector_add(lanes, st, vec, known)
                if merged is not None:
                    return merged, before, end
        vec //= 2
    return None


__all__ = ["HELPER", "merge_adjacent", "tile_runs", "vector_loop", "vector_run", "widest"]
