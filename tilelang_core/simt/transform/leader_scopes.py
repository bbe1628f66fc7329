"""Who issues a ``T.tma_copy``, and with whose regions (TileLang's leader scopes).

TileLang issues a TMA load from one elected thread per *leader scope*: by default the threads
that reach the copy (the block, or a ``T.ws`` group), with ``leader_scope_threads=S`` every group
of S consecutive threads. The leader is the scope's first thread, and the regions are the ones it
computes. A per-warp copy therefore reads its warp's row::

    warp = tid // 32
    T.tma_copy(A[pid * 8 + warp, 0:K], s[warp, 0:K], barrier=bars[warp], leader_scope_threads=32)

Here the scope's threads perform the copy together (mbarriers.py), lane ``tid % S`` of the
scope taking its share, so every thread must use the leader's regions: the region expressions
are evaluated at ``tid = tid // S * S`` (in a thread group's branch, ``T.ws(1)``, the scope counts
from the group's first thread, 128). A region that depends on a value read from memory
(``row = rows[tid]``) or held in a per-thread variable (``T.alloc_var``) cannot be evaluated at
another thread, so one that may differ between the threads of a scope is refused; one the same
for all of them (``e = experts[tid // 32]`` with S = 32, a tile counter every thread steps alike)
is used as it stands.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from tilelang_core.ir import region as R
from tilelang_core.ir.ops import Copy
from tilelang_core.transform.bindings import uses_any

from .state import KernelState, substitute


class _Scope:
    """The leader scope of one copy: ``size`` threads indexed by ``st.thread_var``."""

    def __init__(self, st: KernelState, size: int, ctx, fail):
        self.st, self.size, self.fail = st, size, fail
        self.memory = {v.__chandle__(): value for v, value in (getattr(ctx, "memory_bindings", None) or {}).items()}
        self.stores = getattr(ctx, "register_stores", None) or {}
        # inside a thread group (T.ws, `if tx >= 128`): the block's index is the group's plus its first
        first = (getattr(ctx, "group_firsts", None) or {}).get(st.thread_var.__chandle__())
        block = st.block_thread_var
        self.block = {} if first is None or block is None or block.same_as(st.thread_var) else {
            block: st.thread_var + first}
        tx = st.thread_var
        self.group, self.lane = tirx.Var("scope_group", "int32"), tirx.Var("scope_lane", "int32")
        st.analyzer.bind(self.group, tvm.ir.Range.from_min_extent(0, max(1, st.num_threads // size)))
        st.analyzer.bind(self.lane, tvm.ir.Range.from_min_extent(0, size))
        self.split = {tx: self.group * size + self.lane}  # a thread as (its scope, its lane)
        self.leader = {tx: tirx.floordiv(tx, size) * size}

    def _sources(self, expr) -> list:
        """(name, values) of the per-thread values ``expr`` reads that the analyzer cannot see
        through: names bound from memory (their value), per-thread variables (every value stored
        into them; None for a register no statement stores, a fragment a tile op fills)."""
        out = [(str(v.name), [self.memory[v.__chandle__()]]) for v in tirx.analysis.undefined_vars(expr)
               if v.__chandle__() in self.memory]
        loads = []
        tvm_ffi.structural_walk(expr, [(tvm.ir.TensorLoad, loads.append)])
        for load in loads:
            if str(load.source.ty.storage_scope).startswith("local"):
                out.append((str(load.source.name), self.stores.get(load.source.__chandle__())))
        return out

    def varies(self, expr, seen: frozenset = frozenset()) -> bool:
        """Whether ``expr`` may differ between two threads of one scope: through the thread index,
        or through a per-thread value whose values may (followed a few levels deep; a variable's
        own earlier value, ``x = x + 1``, counts as the same for all)."""
        if len(seen) > 6:
            return True
        expr = substitute(self.st.simplify(expr), self.block)
        if uses_any(self.st.simplify(self.st.simplify_indices(substitute(expr, self.split))), [self.lane]):
            return True
        for name, values in self._sources(expr):
            if name in seen:
                continue
            if values is None or any(self.varies(v, seen | {name}) for v in values):
                return True
        return False

    def at_leader(self, expr):
        """``expr`` as the scope's first thread computes it."""
        st = self.st
        expr = st.simplify(substitute(expr, self.block))
        block = st.block_thread_var
        if block is not None and not block.same_as(st.thread_var) and uses_any(expr, [block]):
            raise self.fail("T.tma_copy inside a branch on the thread index (a thread range) uses the block's "
                            "thread index in its regions; compute them from values the same for the branch's threads")
        varying = sorted({name for name, values in self._sources(expr)
                          if values is None or any(self.varies(v, frozenset([name])) for v in values)})
        if varying:
            raise self.fail(f"T.tma_copy: its regions use {', '.join(varying)}, per-thread values (read from memory or "
                            f"held in a register) which may differ between the {self.size} threads that issue one "
                            f"copy (TileLang uses its leader thread's value); compute them from values the same for "
                            f"those threads, or set leader_scope_threads= to groups of threads that agree on them "
                            f"(each group issues its own copy)")
        return self.st.simplify(substitute(expr, self.leader))

    def region(self, region):
        return R.make_region(region.source, [self.at_leader(m) for m in R.mins_of(region)],
                             [self.at_leader(e) for e in R.extents_of(region)])


def leader_scoped(op, st: KernelState, ctx, fail):
    """``(copy, barrier, lanes, prefix)`` for the TmaCopy ``op``: the copy and barrier with the
    leader's regions, the state whose ``thread_var``/``num_threads`` are the lanes of one scope that
    perform the copy, and the statements that bind those lanes (put before the copy)."""
    size = op.leader_scope or st.num_threads
    if size > st.num_threads or st.num_threads % size:
        raise fail(f"T.tma_copy: leader_scope_threads={size} does not divide the {st.num_threads} threads that "
                   f"reach the copy; pass a divisor of it (a multiple of 32)")
    scope = _Scope(st, size, ctx, fail)
    copy = Copy(scope.region(op.src), scope.region(op.dst))
    barrier = scope.region(op.barrier)
    if size == st.num_threads:
        return copy, barrier, st, []
    lane = tirx.Var("scope_tx", "int32")
    st.analyzer.bind(lane, tvm.ir.Range.from_min_extent(0, size))
    return copy, barrier, st.for_group(lane, size), [tirx.Bind(lane, tirx.floormod(st.thread_var, size))]


__all__ = ["leader_scoped"]
