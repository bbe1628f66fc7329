"""Global accesses a kernel writes itself, outside tile ops and ``T.Parallel``, past a tensor's
edge: the read gives 0 (or the tensor's ``T.annotate_safe_value``) and the write is skipped.

That is TileLang's rule for every global access (its LegalizeSafeMemoryAccess pass, read, not
copied): an index the analyzer cannot prove inside ``0 <= index < extent`` gets that condition.
Tile ops and ``T.Parallel`` loops already follow it in each backend's lowering (simt
LowerParallel, the cpu backend's GuardParallelGlobals); this pass gives it to the rest, the
per-thread code. DeepSeek's TileKernels rely on it: its per-channel cast walks 128-column tiles
over a hidden size of 576 with ``for j in T.vectorized(4): out[r, k_offset + j] = ...``, and the
last tile's columns past 576 must not be written (here they were: another row's data on the GPU,
heap corruption on the cpu backend).

The analyzer knows what TileLang's does at each access: the ranges of the launch indices and of
the enclosing loops, the enclosing ``if`` conditions, the values bound with ``x = expr`` (pure
ones) and the enclosing ``T.assume`` facts, which is how an author says a guard is not needed
(``T.assume(base + i < N)``). Reads under a pointer (``T.address_of``, ``T.access_ptr``, an atomic's
target, ``T.ptx_cp_async``) are left to the op that takes the pointer.

A guard inside a ``T.vectorized`` loop would make the loop scalar (TVM vectorizes no store under
a condition), so the body's guards are lifted out of it when every one of them is affine in the
lane: the loop runs as vectors under the guards' first-and-last-lane conditions and as the
guarded scalar loop otherwise (``_LaneGuards``).

Runs at parse time (language/parser.py), so every backend compiles the guarded kernel.
"""

from __future__ import annotations

import contextlib

import tvm
import tvm_ffi
from tvm import tirx

from ..ir.atomic_calls import is_parallel_loop
from ..ir.conditions import conjuncts
from ..ir.substitute import substitute, substitute_nested
from ..language.assumes import ASSUME
from ..lowering import in_bounds
from .bindings import is_pure
from .func_pass import func_pass
from .safe_values import SAFE_VALUE, padding_for

#: calls whose operands are addresses, not values: their loads are not reads here
_POINTER_CALLS = ("tirx.address_of", "tirx.tvm_access_ptr")
#: atomics: the first operand is the target element (its op guards it); the value is a read
_ATOMIC_CALLS = ("tl.atomic_rmw", "tl.atomic_load")


def _is_global(buffer) -> bool:
    return str(buffer.ty.storage_scope) in ("global", "")


def _call_name(call) -> str:
    op = call.op
    return str(op.name) if isinstance(op, tvm.ir.Op) else ""


def _pointer_loads(node) -> set[int]:
    """Handles of the loads that sit under a pointer-taking call in ``node``."""
    found: set[int] = set()

    def note(node):
        tvm_ffi.structural_walk(node, [(tvm.ir.TensorLoad, lambda ld: found.add(ld.__chandle__()))])

    def on_call(call):
        name = _call_name(call)
        if name in _POINTER_CALLS or "cp_async" in name or "access_ptr" in name:
            note(call)
        elif name in _ATOMIC_CALLS and len(call.args):
            note(call.args[0])

    tvm_ffi.structural_walk(node, [(tvm.ir.Call, on_call)])
    return found


def _lanes(expr) -> int:
    return int(getattr(getattr(expr.ty, "dtype", None), "lanes", 1) or 1)


def _scalar_indices(indices):
    """``indices`` as scalar expressions that bound every lane: a vector index (``A[i:i + 4]``, a
    Ramp) by its first and last lane (linear, so every lane lies between), a Broadcast by its
    value; None for any other vector index (left unguarded, as before this pass)."""
    lows, highs = [], []
    for index in indices:
        if _lanes(index) == 1:
            lows.append(index)
            highs.append(index)
        elif isinstance(index, tirx.Ramp):
            last = index.base + index.stride * (_lanes(index) - 1)
            lows.append(tirx.Min(index.base, last))
            highs.append(tirx.Max(index.base, last))
        elif isinstance(index, tirx.Broadcast):
            lows.append(index.value)
            highs.append(index.value)
        else:
            return None
    return lows, highs


def _bounds(analyzer, indices, shape):
    """The in-bounds condition of an access (every lane of a vector one); None when proven or
    when a vector index has no scalar bounds."""
    scalar = _scalar_indices(indices)
    if scalar is None:
        return None
    lows, highs = scalar
    if all(lo.same_as(hi) for lo, hi in zip(lows, highs)):  # scalar indices only
        return in_bounds(analyzer, lows, shape)
    terms = [c for c in (in_bounds(analyzer, lows, shape), in_bounds(analyzer, highs, shape)) if c is not None]
    return None if not terms else terms[0] if len(terms) == 1 else tirx.And(terms[0], terms[1])


def _padding(load, safe_values):
    pad = padding_for(load, safe_values)
    lanes = _lanes(load)
    if lanes > 1 and _lanes(pad) == 1:
        element = str(load.ty.dtype.with_lanes(1))
        pad = tirx.Broadcast(pad if str(pad.ty) == element else tirx.Cast(element, pad), lanes)
    return pad


class _LaneGuards:
    """The guards of one ``T.vectorized`` loop's body, to be tested once before the loop.

    A guard is a conjunction of ``index >= 0`` and ``index < extent`` terms; when each index is
    affine in the lane (after the pure values bound in the body are put in), a term holds for
    every lane once it holds for the first and the last. Terms the analyzer dropped at the access
    hold wherever the access runs, in either version of the loop. A guard that reads memory, or
    names a variable declared in the body, cannot move out: then nothing is lifted (``ok``)."""

    def __init__(self, loop, analyzer):
        self.lane, self.last = loop.loop_var, int(loop.extent) - 1
        self.analyzer = analyzer
        self.values: dict[int, object] = {}  # pure values bound in the body, by variable handle
        self.declared: set[int] = set()      # other variables declared in the body
        self.conditions: list = []
        self.ok = True

    def lift(self, cond) -> bool:
        """Take ``cond`` (a guard of an access in the body) out of the loop; False when it
        cannot move (the access keeps its guard, and the loop stays scalar)."""
        if not self.ok:
            return False
        cond = substitute_nested(cond, self.values)
        names = []
        tvm_ffi.structural_walk(cond, [(tvm.ir.Var, names.append), (tvm.ir.TensorLoad, lambda _: names.append(None))])
        if any(v is None or v.__chandle__() in self.declared for v in names) or not self._affine(cond):
            self.ok = False
            return False
        for lane in (0, self.last):
            at = self.analyzer.simplify(substitute(cond, {self.lane: lane}))
            if not any(tvm_ffi.structural_equal(at, c) for c in self.conditions):
                self.conditions.append(at)
        return True

    def _affine(self, cond) -> bool:
        if isinstance(cond, tirx.And):
            return self._affine(cond.a) and self._affine(cond.b)
        if not isinstance(cond, (tirx.LT, tirx.LE, tirx.GT, tirx.GE)):
            return False
        diff = cond.a - cond.b
        at0, at1 = (substitute(diff, {self.lane: lane}) for lane in (0, 1))
        return self.analyzer.can_prove(diff - at0 - self.lane * (at1 - at0) == 0)

    def condition(self):
        return tirx.all(*self.conditions)


class _VarSurrogates:
    """``T.alloc_var`` values (a ``local.var`` buffer's one element) as variables the analyzer can
    hold facts about: ``x = l; T.assume(x < N); out[0] = A[x]`` needs no guard, as in TileLang.
    A fact is about the value ``x`` has where it is assumed: a write to ``x`` (:meth:`written`,
    and before a loop, every ``x`` its body writes) gives ``x`` a new surrogate the fact does not
    name, and terms about a variable whose address the scope takes are not facts at all."""

    def __init__(self):
        self.vars: dict[int, tirx.Var] = {}    # buffer handle -> its current surrogate
        self.loads: dict[int, object] = {}     # surrogate handle -> a load of the buffer

    @staticmethod
    def _is_var(load) -> bool:
        return (str(load.source.ty.storage_scope) == "local.var"
                and all(isinstance(i, tirx.IntImm) and i.value == 0 for i in load.indices))

    def replace(self, expr):
        """``expr`` with the loads of ``T.alloc_var`` values replaced by their surrogates."""
        def on_load(load):
            if not self._is_var(load):
                return load
            key = load.source.__chandle__()
            if key not in self.vars:
                self.vars[key] = tirx.Var(f"{load.source.name}_value", str(load.ty.dtype))
                self.loads[self.vars[key].__chandle__()] = load
            return self.vars[key]
        return tvm_ffi.structural_map(expr, [(tvm.ir.TensorLoad, on_load)])

    def restore(self, expr):
        return substitute(expr, self.loads) if expr is not None and self.loads else expr

    def written(self, stmt) -> None:
        """Forget the values of the variables ``stmt`` writes."""
        def forget(store):
            self.vars.pop(store.buffer.__chandle__(), None)

        tvm_ffi.structural_walk(stmt, [(tirx.BufferStore, forget)])

    def fact(self, cond, scope):
        """The terms of the assumption ``cond`` the analyzer may hold in ``scope``, surrogates in:
        all but those reading a ``T.alloc_var`` whose address ``scope`` takes (other loads stay
        loads, as they were before T.alloc_var values had surrogates)."""
        pointed = _pointer_loads(scope)
        taken: set[int] = set()
        tvm_ffi.structural_walk(scope, [(tvm.ir.TensorLoad, lambda ld: taken.add(ld.source.__chandle__())
                                         if ld.__chandle__() in pointed else None)])
        kept = []
        for term in conjuncts(cond):
            reads = []
            tvm_ffi.structural_walk(term, [(tvm.ir.TensorLoad, reads.append)])
            if not any(self._is_var(ld) and ld.source.__chandle__() in taken for ld in reads):
                kept.append(self.replace(term))
        return tirx.all(*kept) if kept else None


def _liftable(loop) -> bool:
    """A ``T.vectorized`` loop of a constant extent that touches no shared memory: the versions'
    ``if`` depends on the thread, and a barrier that the loop's shared accesses may need (between
    iterations) cannot sit under such an ``if`` (simt/transform/insert_barriers.py refuses it)."""
    if loop.kind != tirx.ForKind.VECTORIZED or not isinstance(loop.extent, tirx.IntImm):
        return False
    shared = []

    def note(access):
        buffer = access.source if isinstance(access, tvm.ir.TensorLoad) else access.buffer
        if str(buffer.ty.storage_scope).startswith("shared"):
            shared.append(access)

    tvm_ffi.structural_walk(loop.body, [(tvm.ir.TensorLoad, note), (tirx.BufferStore, note)])
    return not shared


def guard_global_accesses(func: tirx.PrimFunc, parallel_only: bool = False,
                          safe_values: list | None = None) -> tirx.PrimFunc:
    """``func`` with TileLang's safe memory access on the global loads and stores of its
    per-thread code (module doc), or, with ``parallel_only``, on those inside ``T.Parallel`` loops
    only (the cpu backend's GuardParallelGlobals, after its own lowering). ``safe_values``:
    [(buffer, value)] when the ``tl.safe_value`` attributes were already taken from the body."""
    analyzer = tvm.sym.Analyzer()
    scalars = _VarSurrogates()
    bound: dict[int, object] = {}  # pure values bound with `x = expr`, by variable handle
    if safe_values is None:
        safe_values = []
        tvm_ffi.structural_walk(func.body, [(tirx.AttrStmt, lambda a: safe_values.extend(a.node.items())
                                             if a.attr_key == SAFE_VALUE else None)])
    added = [0]
    lanes = [None]  # the T.vectorized loop whose guards are being lifted out of it
    guarded = [None]  # the T.vectorized loop being guarded in place (its guards did not lift)
    active = [not parallel_only]  # guarding here: outside T.Parallel, or inside it with parallel_only

    def guard_loads(expr):
        if expr is None or not active[0]:
            return expr
        skip = _pointer_loads(expr)

        def on_load(load):
            if not _is_global(load.source) or load.__chandle__() in skip:
                return load
            cond = scalars.restore(bounds(list(load.indices), load.source.ty.shape))
            if cond is None or lanes[0] is not None and lanes[0].lift(cond):
                return load
            added[0] += 1
            return tirx.if_then_else(cond, load, _padding(load, safe_values))

        return tvm_ffi.structural_map(expr, [(tvm.ir.TensorLoad, on_load)])

    def bounds(indices, shape):
        """``_bounds`` with the T.alloc_var values the author made assumptions about known, in
        terms of their surrogates (``scalars.restore`` gives the condition to test)."""
        return _bounds(analyzer, [scalars.replace(i) for i in indices], shape)

    def bind_range(var, lo, extent):
        with contextlib.suppress(Exception):  # a range the analyzer cannot take stays unknown
            analyzer.bind(var, tvm.ir.Range.from_min_extent(lo, extent))

    def visit(node):
        if isinstance(node, tirx.SeqStmt):
            return tirx.SeqStmt([visit(s) for s in node.seq])
        if isinstance(node, tirx.For):
            if is_parallel_loop(node) and not parallel_only:
                return node  # guarded where T.Parallel is lowered
            if lanes[0] is None and active[0] and _liftable(node) and not node.same_as(guarded[0]):
                return visit_vectorized(node)
            if lanes[0] is not None and not node.loop_var.same_as(lanes[0].lane):  # a loop in its body
                lanes[0].declared.add(node.loop_var.__chandle__())
            lo, extent = guard_loads(node.min), guard_loads(node.extent)
            bind_range(node.loop_var, lo, extent)
            scalars.written(node.body)  # (a later iteration reads what an earlier one wrote)
            outer = active[0]
            active[0] = outer or is_parallel_loop(node)
            body = visit(node.body)
            active[0] = outer
            return tirx.For(node.loop_var, lo, extent, node.kind, body, node.thread_binding,
                            node.annotations, node.step)
        if isinstance(node, tirx.IfThenElse):
            then_case, else_case = node.then_case, node.else_case
            with analyzer.constraint_scope(node.condition):
                then_case = visit(then_case)
            if else_case is not None:
                with analyzer.constraint_scope(tirx.Not(node.condition)):
                    else_case = visit(else_case)
            return tirx.IfThenElse(guard_loads(node.condition), then_case, else_case, node.span)
        if isinstance(node, tirx.AttrStmt):
            if node.attr_key == "thread_extent" and isinstance(node.node, tirx.IterVar):
                bind_range(node.node.var, 0, node.value)
            if node.attr_key == ASSUME:  # the author's fact holds for what follows
                # (in terms of what the analyzer knows: `i = min(j + 8, t); T.assume(i < M)` says t < M)
                fact = scalars.fact(analyzer.simplify(substitute_nested(node.value, bound)), node.body)
                with analyzer.constraint_scope(fact) if fact is not None else contextlib.nullcontext():
                    return tirx.AttrStmt(node.node, node.attr_key, node.value, visit(node.body))
            return tirx.AttrStmt(node.node, node.attr_key, node.value, visit(node.body))
        if isinstance(node, tirx.While):
            scalars.written(node.body)
            return tirx.While(guard_loads(node.condition), visit(node.body), node.span)
        if isinstance(node, tirx.Bind):
            value = guard_loads(node.value)
            pure = isinstance(node.value.ty, tvm.ir.PrimType) and is_pure(node.value)
            if pure:
                bound[node.var.__chandle__()] = node.value
                with contextlib.suppress(Exception):  # a value the analyzer cannot take stays unknown
                    analyzer.bind(node.var, node.value)
            if lanes[0] is not None:
                if pure:
                    lanes[0].values[node.var.__chandle__()] = node.value
                else:
                    lanes[0].declared.add(node.var.__chandle__())
            return node if value.same_as(node.value) else tirx.Bind(node.var, value, node.span)
        if isinstance(node, tirx.BufferStore):
            indices = [guard_loads(i) for i in node.indices]  # (A[idx[i]]: idx read safely first)
            known = bounds(indices, node.buffer.ty.shape) if _is_global(node.buffer) and active[0] else None
            cond = scalars.restore(known)
            lifted = cond is not None and lanes[0] is not None and lanes[0].lift(cond)
            # the value is read only where the store happens: `A[i] += 1` needs one guard
            with analyzer.constraint_scope(known) if known is not None else contextlib.nullcontext():
                store = tirx.BufferStore(node.buffer, guard_loads(node.value), indices)
            scalars.written(node)
            if cond is None or lifted:
                return store
            added[0] += 1
            return tirx.IfThenElse(cond, store, None)
        if isinstance(node, tirx.Evaluate):
            return tirx.Evaluate(guard_loads(node.value))
        return node  # tile ops (guarded by their lowering), allocations, ...

    def visit_vectorized(loop):
        """``loop`` as vectors under its body's lifted guards, else as the guarded (scalar) loop."""
        lifted = lanes[0] = _LaneGuards(loop, analyzer)
        fast = visit(loop)
        lanes[0] = None
        if lifted.ok and not lifted.conditions:
            return fast
        guarded[0] = loop
        slow = visit(loop)
        guarded[0] = None
        if not lifted.ok:
            return slow
        added[0] += 1
        return tirx.IfThenElse(analyzer.simplify(lifted.condition()), fast, slow)

    body = visit(func.body)
    return func.with_body(body) if added[0] else func


def LegalizeSafeMemoryAccess():  # noqa: N802  (a pass factory, named like TileLang's)
    """Pass form of :func:`guard_global_accesses` (the parser runs it on every kernel already)."""
    return func_pass(guard_global_accesses, "tl.LegalizeSafeMemoryAccess")


__all__ = ["LegalizeSafeMemoryAccess", "guard_global_accesses"]
