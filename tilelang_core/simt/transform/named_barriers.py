"""TileLang's named barriers, ``T.sync_threads(barrier_id, arrive_count)``, checked and lowered.

A named barrier waits until ``arrive_count`` threads reached barrier ``barrier_id`` (CUDA's
``bar.sync id, count``, counted in whole warps). Used as TileLang's kernels use it, inside a
branch that selects those threads::

    if tx < 256:
        for i in T.serial(8):
            T.sync_threads(3, 256)      # the 256 threads of the branch, not the block
            ...

The count has to be exactly the threads that reach it, or the barrier hangs (too many) or lets
threads through early (too few: a race, a silent wrong answer). So the enclosing ``if``
conditions on the thread index must select one range of threads (``lo <= tx < hi``, the
transform/thread_ranges.py rule) whose size is the count and that starts on a warp; outside any
such condition the count must be the block size. Refused at the user's line: any other count, a
condition that is not one range, a named barrier inside ``T.Parallel`` or ``T.Pipelined`` (the
kit decides who runs those bodies), and a barrier over part of the block on a backend without
named barriers (``SimtDialect.named_barriers``). A barrier over the whole block becomes the
block's ordinary barrier on every backend.
"""

from __future__ import annotations

from tvm import tirx

from tilelang_core.ir import intrinsics as I
from tilelang_core.lowering import user_span
from tilelang_core.transform.thread_ranges import range_of, region_lo, selected_range

from .. import intrinsics as SI
from .insert_barriers import branch_barrier_error, group_barrier_error
from .state import KernelState, uses_var

def _intersect(a, b):
    if a is None or b is None:
        return None
    return (max(a[0], b[0]), min(a[1], b[1]))


def check_named_barriers(body, st: KernelState, error) -> None:
    """Raise ``error(intrinsic, stmt, message)`` for a named barrier the module docstring refuses."""
    ws, threads = st.dialect.warp_size, st.block_threads or st.num_threads

    def check(leaf, where, selected, inside: str | None):
        stmt = where if where is not None else leaf  # the error names the nearest line
        for call in I.calls_in(leaf):
            intrinsic = I.intrinsic_of(call)
            if intrinsic.name != "named_barrier":
                continue
            count = int(call.args[1].value)
            if inside is not None:
                raise error(intrinsic, stmt, f"a named barrier inside {inside}, whose body the backend "
                                             "may run on other threads than the branch's; put it outside")
            if selected is None:
                raise error(intrinsic, stmt, "the 'if' conditions around it do not select one range of "
                                             "threads (write them as 'tx >= lo and tx < hi' with constant "
                                             "bounds), so the threads that reach it cannot be counted")
            lo, hi = selected
            if count != hi - lo:
                where = ("the whole block" if (lo, hi) == (0, threads)
                         else f"the threads {lo} <= tx < {hi} its 'if' conditions select")
                raise error(intrinsic, stmt, f"arrive_count={count}, but {where} ({hi - lo}) reach it; "
                                             "the count must be exactly those threads")
            if count == threads:
                continue
            if lo % ws or count % ws:
                raise error(intrinsic, stmt, f"the threads {lo} <= tx < {hi} are not whole {ws}-lane warps "
                                             "(a named barrier counts warps)")
            if not st.dialect.named_barriers:
                raise error(intrinsic, stmt, f"the {st.dialect.kind} backend has no barrier over part of the "
                                             "block; synchronize the whole block with T.sync_threads() "
                                             "outside the branch")

    def visit(node, selected, inside, where=None):
        if user_span(node) is not None:
            where = node
        if isinstance(node, tirx.SeqStmt):
            for s in node.seq:
                visit(s, selected, inside, where)
        elif isinstance(node, tirx.For):
            ann = node.annotations or {}
            inner = inside or ("a T.Parallel loop" if "tl.parallel" in ann else
                               "a T.Pipelined loop" if "tl.num_stages" in ann else None)
            visit(node.body, selected, inner, where)
        elif isinstance(node, tirx.IfThenElse):
            then_sel = else_sel = selected
            if uses_var(node.condition, st.thread_var):
                then_sel = _intersect(selected, selected_range(node.condition, st.thread_var, threads)[0])
                else_sel = _intersect(selected, selected_range(tirx.Not(node.condition), st.thread_var,
                                                               threads)[0])
            visit(node.then_case, then_sel, inside, where)
            if node.else_case is not None:
                visit(node.else_case, else_sel, inside, where)
        elif isinstance(node, tirx.While):
            visit(node.body, None if uses_var(node.condition, st.thread_var) else selected, inside, where)
        elif isinstance(node, tirx.AttrStmt):
            visit(node.body, selected, inside, where)
        else:
            check(node, where, selected, inside)

    if any(I.intrinsic_of(c).name == "named_barrier" for c in I.calls_in(body)):
        visit(body, (0, threads), None)


def lower_named_barrier(st: KernelState, args):
    """The lowered call: ``tl_named_barrier(id, count)``, or the block's barrier for the whole block."""
    count = int(args[1].value)
    if count == (st.block_threads or st.num_threads):
        return tirx.call_intrin("int32", "tirx.tvm_storage_sync", "shared")
    return tirx.call_extern("void", "tl_named_barrier", args[0], args[1])


#: named barrier ids the group barriers take, highest first (0 is the block's; the cuda backend's
#: own warp specialization counts up from 1)
GROUP_BARRIER_IDS = range(15, 0, -1)


class GroupBarriers:
    """The barriers insert_barriers needs over part of the block: among the threads of a
    THREAD_RANGE region (``for_region``) or of an ``if`` on the thread that selects a range
    (``for_branch``, a branch of per-thread code such as a producer warpgroup's gathers), one
    named barrier id per thread range (ids the kernel's own T.sync_threads use are left alone).
    A group of one thread needs none; the whole block gets the block's barrier."""

    def __init__(self, body, st: KernelState):
        self.st = st
        self.taken = {int(c.args[0].value) for c in I.calls_in(body) if I.intrinsic_of(c).name == "named_barrier"
                      and isinstance(c.args[0], tirx.IntImm)}
        self.ids: dict = {}

    def for_region(self, region):
        return self._barrier(region_lo(region), int(region.value), lambda why: group_barrier_error(region, why))

    def for_branch(self, branch, conds):
        st = self.st
        threads = st.block_threads or st.num_threads
        if st.thread_var is None or not isinstance(threads, int):
            return None
        selected = range_of(conds, st.thread_var, threads)
        if selected is None:
            return None
        lo, hi = selected
        return lambda: self._barrier(lo, hi - lo, lambda why: branch_barrier_error(branch, lo, hi, why))

    def _barrier(self, lo: int, count: int, error):
        st = self.st
        if count == 1:
            return tirx.Evaluate(tirx.const(0, "int32"))
        if count == (st.block_threads or st.num_threads):
            return SI.syncthreads()
        ws = st.dialect.warp_size
        if not st.dialect.named_barriers:
            raise error(f"the {st.dialect.kind} backend has no barrier over a group of threads")
        if lo % ws or count % ws:
            raise error(f"the threads {lo} <= tx < {lo + count} are not whole {ws}-lane "
                        f"warps (a barrier over a group counts warps)")
        if (lo, count) not in self.ids:
            free = [i for i in GROUP_BARRIER_IDS if i not in self.taken and i not in self.ids.values()]
            if not free:
                raise error("every named barrier id is taken")
            self.ids[(lo, count)] = free[0]
        return tirx.Evaluate(tirx.call_extern("void", "tl_named_barrier", tirx.const(self.ids[(lo, count)], "int32"),
                                              tirx.const(count, "int32")))


__all__ = ["GROUP_BARRIER_IDS", "GroupBarriers", "check_named_barriers", "lower_named_barrier"]
