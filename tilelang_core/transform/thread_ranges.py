"""Tile ops under a condition on the thread index run on the threads it selects (TileLang's rule).

``if tx < 128: T.copy(A[...], A_shared)`` in a 256-thread block means: threads 0..127 perform the
whole copy. TileLang gets this from its analyzer, which narrows the thread range inside the branch
and hands the narrowed range to every op lowered there. A block-wide lowering that deals the tile
over all 256 threads instead leaves half of it undone, silently (found by TileLang's
``test_tilelang_language_mask_op.py`` on the H200).

So before lowering, :func:`mark_thread_ranges` finds every ``if`` whose condition limits the
thread index to one contiguous range ``[lo, hi)`` (conjunctions of comparisons; terms that do not
involve the thread are kept as they are) and that encloses block-wide code (tile ops other than
per-thread atomics, T.Parallel loops). Each such branch becomes::

    AttrStmt(tx, THREAD_RANGE, hi - lo,
             SeqStmt([Bind(tx_r, tx - lo), <the branch>]))

and lowering (LowerTileOps, the SIMT kit's LowerParallel) deals the ops of the branch over the
``hi - lo`` threads whose index in the group is ``tx_r``. An ``else`` branch gets the complement
when it is a range too. Whatever we could not lower correctly is refused with the user's line:
a thread condition that is not one range (``tx % 2 == 0``), fragments inside such a branch (their
layout spans the whole block), software-pipelined loops in or around one (their barriers are
block-wide).
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from ..errors import LoweringError
from ..ir.atomic_calls import TILE_ATOMIC_OP, is_parallel_loop
from ..ir.substitute import substitute
from ..lowering import source_location, user_span
from .bindings import is_pure
from .structural import stmt_children, structural_map, structural_walk

#: AttrStmt key of a branch that runs on a sub-range of the block's threads (value: its size)
THREAD_RANGE = "tl.thread_range"


def is_block_wide(node) -> bool:
    """Does ``node`` contain code that all threads of the block perform together: a tile op (other
    than a per-thread atomic, ``T.atomic_add(count[0], 1)``) or a T.Parallel loop?"""
    found = []

    def on_call(call):
        per_thread = str(call.op.name) == TILE_ATOMIC_OP and bool(call.config.get("per_thread", False))
        if not per_thread:
            found.append(call)

    def on_for(loop):
        if is_parallel_loop(loop):
            found.append(loop)

    tvm_ffi.structural_walk(node, [(tirx.TilePrimitiveCall, on_call), (tirx.For, on_for)])
    return bool(found)


def region_thread_var(region: tirx.AttrStmt) -> tirx.Var:
    """The group-relative thread index of a THREAD_RANGE region: its body's first Bind. (Read
    from the body, not kept on the attribute: a pass that copies code renames the Bind's variable
    and must not leave the attribute pointing at the old one.)"""
    return _thread_bind(region).var


def _thread_bind(region: tirx.AttrStmt) -> tirx.Bind:
    """A THREAD_RANGE region's first statement, ``Bind(tx_r, tx - lo)``."""
    first = region.body.seq[0] if isinstance(region.body, tirx.SeqStmt) else region.body
    assert isinstance(first, tirx.Bind), "THREAD_RANGE region without its thread binding"
    return first


def group_firsts(body) -> dict:
    """``{group thread index: the block thread index of its first thread}`` (``lo`` of
    ``Bind(tx_r, tx - lo)``) for every THREAD_RANGE region of ``body``, keyed by the group index's
    handle: where a rule must evaluate an expression of the block's thread index at a thread of
    the group (T.tma_copy's leader, simt/transform/leader_scopes.py)."""
    found = {}

    def on_attr(attr):
        if attr.attr_key == THREAD_RANGE:
            bind = _thread_bind(attr)
            found[bind.var.__chandle__()] = tvm.sym.Analyzer().simplify(attr.node - bind.value)

    tvm_ffi.structural_walk(body, [(tirx.AttrStmt, on_attr)])
    return found


def _conjuncts(cond) -> list:
    if isinstance(cond, tirx.And):
        return _conjuncts(cond.a) + _conjuncts(cond.b)
    if isinstance(cond, tirx.Not):
        # an else branch's condition: 'not tx < 128' is 'tx >= 128' (the bound analysis below
        # reads comparisons, not their negations); 'not (a and b)' stays one term
        inner = cond.a
        if isinstance(inner, tirx.Or):
            return _conjuncts(tirx.Not(inner.a)) + _conjuncts(tirx.Not(inner.b))
        if isinstance(inner, tirx.Not):
            return _conjuncts(inner.a)
        if isinstance(inner, (tirx.LT, tirx.LE, tirx.GT, tirx.GE, tirx.EQ, tirx.NE)):
            return [tvm.sym.Analyzer().simplify(cond)]
    return [cond]


def _uses(expr, var) -> bool:
    found = []
    tvm_ffi.structural_walk(expr, [(tirx.Var, lambda v: found.append(v) if v.same_as(var) else None)])
    return bool(found)


def _inline_bound(expr, values: dict):
    """``expr`` with every pure bound name (``warp = tx // 32``) replaced by its value."""
    return substitute(expr, values)


def selected_range(cond, tx, num_threads: int) -> tuple[tuple[int, int] | None, list]:
    """Split ``cond`` into the thread range it selects and the terms that do not involve ``tx``.

    Returns ``((lo, hi), uniform_terms)`` when the thread terms hold exactly for ``lo <= tx < hi``
    (``hi <= lo`` when they never hold), ``(None, uniform_terms)`` when they select something that
    is not one range, and ``((0, num_threads), terms)`` when no term involves ``tx``.
    """
    terms = _conjuncts(cond)
    thread_terms = [t for t in terms if _uses(t, tx)]
    uniform = [t for t in terms if not _uses(t, tx)]
    if not thread_terms:
        return (0, num_threads), uniform
    analyzer = tvm.sym.Analyzer()
    analyzer.bind(tx, tvm.ir.Range.from_min_extent(0, num_threads))
    selected = thread_terms[0]
    for term in thread_terms[1:]:
        selected = tirx.And(selected, term)
    with analyzer.constraint_scope(selected):
        bound = analyzer.const_int_bound(tx)
    lo, hi = int(bound.min_value), int(bound.max_value) + 1
    if lo >= hi:
        return (0, 0), uniform
    with analyzer.constraint_scope(tirx.And(tx >= lo, tx < hi)):
        exact = analyzer.can_prove(selected)
    if not exact:  # e.g. an elif's 'not (tx >= 128 and tx < 256)', which the bounds don't read
        return _enumerated_range(selected, tx, num_threads), uniform
    return (lo, hi), uniform


def range_of(conds, tx, num_threads: int) -> tuple[int, int] | None:
    """The one non-empty range ``lo <= tx < hi`` of threads for which all of ``conds`` hold (the
    conditions of nested branches, an else branch's negated), or None (no range, or empty)."""
    cond = conds[0]
    for more in conds[1:]:
        cond = tirx.And(cond, more)
    selected, _ = selected_range(cond, tx, num_threads)
    if selected is None or selected[1] <= selected[0]:
        return None
    return selected


def _enumerated_range(cond, tx, num_threads: int):
    """The range of threads for which ``cond`` (on ``tx`` alone) holds, found by trying each, or
    None when it is not one range or depends on more than ``tx``."""
    if num_threads > 1024:
        return None
    analyzer = tvm.sym.Analyzer()
    holds = []
    for t in range(num_threads):
        value = analyzer.simplify(tvm_ffi.structural_map(
            cond, [(tirx.Var, lambda v: tirx.const(t, v.ty.dtype) if v.same_as(tx) else v)]))
        if not isinstance(value, tirx.IntImm):
            return None
        holds.append(bool(value.value))
    inside = [t for t, h in enumerate(holds) if h]
    if not inside:
        return (0, 0)
    lo, hi = inside[0], inside[-1] + 1
    return (lo, hi) if len(inside) == hi - lo else None


class _Marker:
    def __init__(self, kernel: str, tx, num_threads: int, is_fragment):
        self.kernel, self.tx, self.num_threads = kernel, tx, num_threads
        self.is_fragment = is_fragment
        self.values: dict = {}  # pure bound names -> values with earlier names inlined
        self.count = 0

    def error(self, what: str, node) -> LoweringError:
        where = source_location(node)
        return LoweringError(f"kernel '{self.kernel}': {what}" + (f"\n  --> {where}" if where else ""))

    def note_bind(self, bind):
        if isinstance(bind.value.ty, tvm.ir.PrimType) and is_pure(bind.value):
            self.values[bind.var] = _inline_bound(bind.value, self.values)

    def thread_dependent(self, cond) -> bool:
        return _uses(_inline_bound(cond, self.values), self.tx)

    def region(self, body, lo: int, hi: int, cond_node):
        self._check_region(body, cond_node)
        self.count += 1
        local = tirx.Var(f"tx_{self.count}" if lo else f"tx_g{self.count}", self.tx.ty.dtype)
        inner = tirx.SeqStmt([tirx.Bind(local, self.tx - lo), body])
        return tirx.AttrStmt(self.tx, THREAD_RANGE, tirx.const(hi - lo, "int32"), inner)

    def _check_region(self, body, cond_node):
        def on_for(loop):
            if _is_pipelined(loop):
                raise self.error("a T.Pipelined loop inside a branch on the thread index is not "
                                 "supported (its barriers synchronize the whole block); move the "
                                 "condition inside the loop body or pipeline the whole block", loop)

        structural_walk(body, [(tirx.For, on_for)])

    def visit(self, node, pipelined: bool = False):
        if isinstance(node, tirx.SeqStmt):
            return tirx.SeqStmt([self.visit(s, pipelined) for s in node.seq])
        if isinstance(node, tirx.Bind):
            self.note_bind(node)
            return node
        if isinstance(node, tirx.For):
            if is_parallel_loop(node):
                return node
            if _planned(node) and has_ws_regions(node.body):
                node = _serial(node)  # the author's mbarriers pipeline it (language/barriers.py)
            inside = pipelined or _is_pipelined(node)
            return tirx.For(node.loop_var, node.min, node.extent, node.kind, self.visit(node.body, inside),
                            node.thread_binding, node.annotations, node.step)
        if isinstance(node, tirx.AttrStmt):
            return tirx.AttrStmt(node.node, node.attr_key, node.value, self.visit(node.body, pipelined))
        if isinstance(node, tirx.IfThenElse):
            return self.visit_if(node, pipelined)
        return node

    def visit_if(self, node, pipelined: bool):
        then_case = self.visit(node.then_case, pipelined)
        else_case = self.visit(node.else_case, pipelined) if node.else_case is not None else None
        wide_then = is_block_wide(then_case)
        wide_else = else_case is not None and is_block_wide(else_case)
        if not (wide_then or wide_else) or not self.thread_dependent(node.condition):
            return tirx.IfThenElse(node.condition, then_case, else_case)
        if pipelined:
            raise self.error("tile ops under a condition on the thread index inside a T.Pipelined "
                             "loop are not supported (the pipeline would move them out of the "
                             "branch); use T.serial for this loop", node)
        selected, uniform = selected_range(_inline_bound(node.condition, self.values), self.tx,
                                           self.num_threads)
        if selected is None:
            raise self.error(
                f"tile ops or T.Parallel loops under a condition on the thread index that does not "
                f"select one range of threads ({node.condition}); TileLang runs such ops on the "
                f"selected threads, which must be consecutive: write the condition as "
                f"'tx >= lo and tx < hi' with constant bounds", node)
        lo, hi = selected
        if wide_then and hi > lo:
            then_case = self.region(then_case, lo, hi, node)
        if wide_else:
            if uniform or not (lo <= 0 or hi >= self.num_threads):
                raise self.error(
                    "tile ops or T.Parallel loops in the else branch of a condition on the thread "
                    "index whose complement is not one range of threads; write the else branch as "
                    "an 'if' of its own with a range condition", node)
            if hi <= lo:  # never true: the else branch runs on every thread
                pass
            elif lo <= 0 and hi < self.num_threads:
                else_case = self.region(else_case, hi, self.num_threads, node)
            elif lo > 0 and hi >= self.num_threads:
                else_case = self.region(else_case, 0, lo, node)
        return tirx.IfThenElse(node.condition, then_case, else_case)


#: AttrStmt key of a T.ws body (language/barriers.py; spelled here too: the core's passes do not
#: import the frontend)
WS_ATTR = "tl.warp_specialize"
#: annotations of a T.Pipelined loop the pipeline planner reads
_PLAN_KEYS = ("tl.num_stages", "tl.order", "tl.stage", "tl.group")


def has_ws_regions(node) -> bool:
    """Does ``node`` contain a ``T.ws`` body?"""
    found = []
    tvm_ffi.structural_walk(node, [(tirx.AttrStmt, lambda a: found.append(a) if a.attr_key == WS_ATTR else None)])
    return bool(found)


def _planned(loop) -> bool:
    return loop.annotations is not None and "tl.num_stages" in loop.annotations


def _serial(loop):
    """A T.Pipelined loop whose body synchronizes its warpgroups itself (``T.ws`` regions and
    mbarriers), as a plain loop: the author wrote the pipeline, and software-pipelining it again
    would move the tile ops out of their regions. (TileLang also multi-buffers such loops for
    ``num_stages > 1``; here they run as written.)"""
    ann = {k: v for k, v in (loop.annotations or {}).items() if str(k) not in _PLAN_KEYS}
    return tirx.For(loop.loop_var, loop.min, loop.extent, loop.kind, loop.body, loop.thread_binding,
                    ann or None, loop.step)


def region_lo(region: tirx.AttrStmt) -> int:
    """The first thread of a THREAD_RANGE region (its Bind is ``tx_r = tx - lo``)."""
    value = (region.body.seq[0] if isinstance(region.body, tirx.SeqStmt) else region.body).value
    return int(value.b) if isinstance(value, tirx.Sub) and isinstance(value.b, tirx.IntImm) else 0


def fragment_groups(body, is_fragment) -> dict:
    """``{fragment: {group: where}}`` over every use of every fragment in ``body``: a group is
    ``(lo, threads)`` of the innermost THREAD_RANGE region around the use, or None outside any;
    ``where`` is the user's line of its first use there (or None)."""
    groups: dict = {}

    def note(buffer, group, where):
        if is_fragment(buffer):
            groups.setdefault(buffer, {}).setdefault(group, source_location(where) if where is not None else None)

    def visit(node, group, where=None):
        where = node if user_span(node) is not None else where
        if isinstance(node, tirx.AttrStmt) and node.attr_key == THREAD_RANGE:
            visit(node.body, (region_lo(node), int(node.value)), where)
            return
        if isinstance(node, tirx.SeqStmt):
            for s in node.seq:
                visit(s, group, where)
            return
        if isinstance(node, (tirx.For, tirx.AttrStmt, tirx.While)):
            visit(node.body, group, where)
            if isinstance(node, tirx.For):
                _visit_expr(node.extent, group, where)
            return
        if isinstance(node, tirx.IfThenElse):
            _visit_expr(node.condition, group, where)
            visit(node.then_case, group, where)
            if node.else_case is not None:
                visit(node.else_case, group, where)
            return
        _visit_expr(node, group, where)

    def _visit_expr(node, group, where):
        tvm_ffi.structural_walk(node, [(tvm.ir.TensorRegion, lambda r: note(r.source, group, where)),
                                       (tvm.ir.TensorLoad, lambda l: note(l.source, group, where)),
                                       (tirx.BufferStore, lambda st: note(st.buffer, group, where))])

    visit(body, None)
    return groups


def check_fragment_groups(body, is_fragment, kernel: str) -> dict:
    """``{fragment: (lo, threads)}`` for the fragments used inside THREAD_RANGE regions, which
    are then laid out over that group's threads; LoweringError for a fragment used by two groups
    (or by a group and the whole block): its layout can span only one of them."""
    out = {}
    for buffer, groups in fragment_groups(body, is_fragment).items():
        ranges = {g for g in groups if g is not None}
        if not ranges:
            continue
        if len(groups) > 1:
            names = {g: "the whole block" if g is None else f"threads {g[0]}..{g[0] + g[1] - 1}" for g in groups}
            lines = "".join(f"\n  --> {where} ({names[g]})" for g, where in groups.items() if where)
            raise LoweringError(
                f"kernel '{kernel}': fragment '{buffer.name}' is used by different groups of threads "
                f"({', '.join(sorted(names.values()))}); a fragment's registers belong to the threads of one "
                f"group (its layout spans them), so only part of it would be computed. Use it under one "
                f"thread condition (one T.ws), or pass the values through shared memory" + lines)
        out[buffer] = next(iter(ranges))
    return out


def _is_pipelined(loop) -> bool:
    return loop.annotations is not None and "tl.pipelined" in loop.annotations


def _parallel_loops(body) -> list:
    loops = []
    tvm_ffi.structural_walk(body, [(tirx.For, lambda f: loops.append(f) if is_parallel_loop(f) else None)])
    return loops


def mark_thread_ranges(body, tx, num_threads: int, kernel: str, is_fragment=lambda _b: False):
    """``body`` with every block-wide branch on the thread index wrapped in a THREAD_RANGE region
    (module docstring); LoweringError for the branches we cannot lower correctly.
    ``is_fragment(buffer)`` says which buffers have a block-wide register layout."""
    marked = _Marker(kernel, tx, num_threads, is_fragment).visit(body)
    check_fragment_groups(marked, is_fragment, kernel)
    return marked


def in_thread_ranges(body, transform):
    """Apply ``transform(region_body, thread_var, num_threads)`` to the body of every THREAD_RANGE
    region, innermost first (post-order), keeping the regions; the caller then transforms the
    rest with the whole block."""
    def on_attr(attr):
        if attr.attr_key != THREAD_RANGE:
            return attr
        new_body = transform(attr.body, region_thread_var(attr), int(attr.value))
        return tirx.AttrStmt(attr.node, attr.attr_key, attr.value, new_body)

    return structural_map(body, [(tirx.AttrStmt, on_attr)])


def tile_ops_with_threads(body, num_threads: int) -> list:
    """``[(tile op call, threads that perform it)]`` in program order: the innermost THREAD_RANGE
    region's group, else the block's ``num_threads``. What a backend plans per op (a gemm's
    warpgroups) must use these, as its rule, lowered inside the region, does."""
    found = []

    def visit(node, threads):
        if isinstance(node, tirx.AttrStmt) and node.attr_key == THREAD_RANGE:
            threads = int(node.value)
        if isinstance(node, tirx.TilePrimitiveCall):
            found.append((node, threads))
            return
        for child in stmt_children(node):
            visit(child, threads)

    visit(body, num_threads)
    return found


def strip_thread_ranges(body):
    """The regions' markers removed once nothing reads them (the thread Binds stay)."""
    return structural_map(body, [(tirx.AttrStmt, lambda a: a.body if a.attr_key == THREAD_RANGE else a)])


def has_thread_ranges(body) -> bool:
    found = []
    tvm_ffi.structural_walk(body, [(tirx.AttrStmt, lambda a: found.append(a) if a.attr_key == THREAD_RANGE else None)])
    return bool(found)
