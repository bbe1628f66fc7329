"""TileLang's mbarriers (language/barriers.py) in the SIMT kit: their initialization, their waits
and arrivals, and ``T.tma_copy`` as an ordinary copy.

A backend with ``SimtDialect.mbarriers`` defines these helpers (tilelang_core/simt/__init__.py)::

    tl_mbarrier_init(void* bar, unsigned count)     tl_mbarrier_fence_init()
    tl_mbarrier_arrive(void* bar)                   tl_mbarrier_wait(void* bar, int parity)
    tl_mbarrier_track(void* bar)

``tl_mbarrier_arrive`` releases this thread's earlier writes of shared memory to the threads that
wait on the barrier; ``tl_mbarrier_wait`` acquires them, for every way the waiter reads them (on
CUDA also wgmma, the async proxy). ``tl_mbarrier_track`` keeps the barrier's current phase from
completing until this thread's async copies (``tl_cp_async_N``) issued so far have landed, and
publishes them with it; it is not an arrival (CUDA: ``cp.async.mbarrier.arrive`` without ``.noinc``).

* ``T.alloc_barrier`` (an ``mbarrier_init`` call at the kernel's top level) becomes
  ``if tx == 0: init every element; fence`` and a block barrier, before any thread can use it.
  Anywhere else (in a loop, a branch) it is refused: the block barrier would not be reached by all.
* The barriers keep a fixed shared array of their own (not the pooled, swizzled tiles).
* ``T.tma_copy`` is performed as async copies by the threads that reach it, each tracked on the
  barrier: like TMA's bytes, they hold its phase open, whoever arrives. Its rows must be at least
  4-byte aligned (TMA needs 16).
"""

from __future__ import annotations

import tvm_ffi
from tvm import tirx

from tilelang_core.errors import LoweringError
from tilelang_core.ir import intrinsics as I
from tilelang_core.ir import region as R
from tilelang_core.ir.tma_copy import TmaCopy
from tilelang_core.lowering import get_lowering, source_location

from .. import intrinsics as SI
from .leader_scopes import leader_scoped
from .state import KernelState

#: intrinsic name -> (helper, number of operands after the barrier)
MBARRIER_OPS = {"mbarrier_arrive": ("tl_mbarrier_arrive", 0),
                "mbarrier_wait_parity": ("tl_mbarrier_wait", 1),
                # T.alloc_cluster_barrier's: on the barrier of the cluster's block of a rank; a wait
                # that acquires at the cluster's scope (language/cluster.py)
                "mbarrier_arrive_remote": ("tl_mbarrier_arrive_remote", 1),
                "mbarrier_wait_cluster": ("tl_mbarrier_wait_cluster", 1)}


def _inits(body) -> list:
    found = []

    def on_eval(ev):
        intrinsic = I.intrinsic_of(ev.value)
        if intrinsic is not None and intrinsic.name == "mbarrier_init":
            found.append(ev)

    tvm_ffi.structural_walk(body, [(tirx.Evaluate, on_eval)])
    return found


def barrier_buffers(body) -> list:
    """The T.alloc_barrier buffers of a kernel body."""
    return [ev.value.args[0].source for ev in _inits(body)]


def _refuse(st: KernelState, stmt, message: str) -> LoweringError:
    where = source_location(stmt) if stmt is not None else None
    return LoweringError(f"kernel '{st.kernel}': {message}" + (f"\n  --> {where}" if where else ""))


def lower_barrier_inits(body, st: KernelState):
    """Every T.alloc_barrier -> its one-thread initialization and a block barrier (module docstring)."""
    inits = _inits(body)
    if not inits:
        return body
    if not st.dialect.mbarriers:
        raise _refuse(st, inits[0], f"T.alloc_barrier: the {st.dialect.kind} backend has no mbarriers "
                                    f"(hand-written warp specialization is NVIDIA's, sm_80 and newer); "
                                    f"synchronize with T.sync_threads() instead")
    top = _top_level(body)
    for ev in inits:
        if not any(ev.same_as(s) for s in top):
            raise _refuse(st, ev, "T.alloc_barrier must be called at the kernel's top level (not in a loop, "
                                  "a branch or a T.ws region): every thread passes the barrier that follows "
                                  "its initialization")

    def on_eval(ev):
        intrinsic = I.intrinsic_of(ev.value)
        if intrinsic is None or intrinsic.name != "mbarrier_init":
            return ev
        first, counts = ev.value.args[0], list(ev.value.args[1:])
        buffer = first.source
        init = [SI.call("tl_mbarrier_init", tirx.address_of(tirx.BufferLoad(buffer, [tirx.const(i, "int32")])),
                        tirx.Cast("uint32", c)) for i, c in enumerate(counts)]
        init.append(SI.call("tl_mbarrier_fence_init"))
        return tirx.SeqStmt([tirx.IfThenElse(st.thread_var == 0, tirx.SeqStmt(init), None), SI.syncthreads()])

    return tvm_ffi.structural_map(body, [(tirx.Evaluate, on_eval)])


def _top_level(body) -> list:
    """The statements of the kernel's outermost statement list (inside its launch attributes and
    allocations)."""
    node = body
    while isinstance(node, tirx.AttrStmt) and node.attr_key in ("thread_extent", "pragma_scope"):
        node = node.body
    seq = list(node.seq) if isinstance(node, tirx.SeqStmt) else [node]
    out = []
    for s in seq:
        if isinstance(s, tirx.SeqStmt):
            out.extend(s.seq)
        else:
            out.append(s)
    return out


def lower_mbarrier(st: KernelState, name: str, args, fail):
    """The helper call of an mbarrier intrinsic (lower_intrinsics.py); ``fail(message)`` raises."""
    if not st.dialect.mbarriers:
        raise fail(f"the {st.dialect.kind} backend has no mbarriers")
    if name in ("mbarrier_arrive_remote", "mbarrier_wait_cluster") and not st.dialect.clusters:
        raise fail(f"a cluster barrier (T.alloc_cluster_barrier) needs thread-block clusters, which the "
                   f"{st.dialect.kind} target here does not have (NVIDIA sm_90 and newer)")
    helper, extra = MBARRIER_OPS[name]
    return tirx.call_extern("void", helper, tirx.address_of(args[0]), *args[1:1 + extra])


def lower_tma_copy(call, ctx):
    """The kit's rule for T.tma_copy: the copy as async copies by the threads of its leader scope
    (leader_scopes.py), each thread then making the barrier's current phase wait for its copies
    (``tl_mbarrier_track``): like TMA's bytes, they complete the phase whoever arrives."""
    from .. import lowering as L  # the copy rule's helpers (simt/lowering.py imports this package)

    op = TmaCopy.from_stmt(call)
    st = ctx.state
    if not st.dialect.mbarriers or not st.dialect.async_copy:
        raise _refuse(st, call, f"T.tma_copy: the {st.dialect.kind} backend has no mbarriers")
    # the scope's lanes perform the copy its leader issues, with the leader's regions (leader_scopes.py)
    copy, barrier, st, prefix = leader_scoped(op, st, ctx, lambda message: _refuse(st, call, message))
    vec = L.copy_vector_width(copy, st)
    if vec * L.elem_bytes(copy.src) < 4:
        raise _refuse(st, call, f"T.tma_copy {R.fmt_region(copy.src)} -> '{copy.dst.source.name}': the rows of "
                                f"the tile are not provably 4-byte aligned in both buffers (TMA itself needs "
                                f"16-byte aligned rows); make the row length a multiple of "
                                f"{max(1, 4 // L.elem_bytes(copy.src))} elements, or use T.copy")
    moves = L.copy_vectorized(copy, st, vec, use_async=True)
    track = SI.call("tl_mbarrier_track", tirx.address_of(
        tirx.BufferLoad(barrier.source, [r.min for r in barrier.region])))
    return tirx.SeqStmt([*prefix, moves, track])


__all__ = ["MBARRIER_OPS", "barrier_buffers", "lower_barrier_inits", "lower_mbarrier", "lower_tma_copy"]
