"""A barrier in a ``T.Parallel`` body splits the loop there.

The iterations of a ``T.Parallel`` loop are independent and are dealt over the block's threads. A
barrier in the body (``T.sync_threads()``, ``T.sync_grid()``, a cluster barrier, ``T.sync_warp``)
then separates two phases: every iteration's statements before it happen before any iteration's
statements after it, which is what a kernel author means by it (TileLang's cooperative-launch
example reverses an array across blocks this way)::

    for i in T.Parallel(n):              for i in T.Parallel(n):
        S[i] = A[bx * n + i]                 S[i] = A[bx * n + i]
        T.sync_threads()           ==>   T.sync_threads()
        B[bx * n + i] = S[n - 1 - i]     for i in T.Parallel(n):
                                             B[bx * n + i] = S[n - 1 - i]

Left as one loop, the barrier gave wrong answers without a word: with more iterations than threads
each thread's first iteration read slots its second had not written yet, the cpu backend (which
runs the iterations one after another) read shared memory before anything was stored, and with
fewer iterations than threads the barrier stood under a branch on the thread index. Split, every
thread reaches it once, on every backend.

A name bound before the barrier and used after it is bound again in the later loop when its value
is index arithmetic. A value read from memory would be read again after the barrier, when it may
have changed, so that is refused, as is a buffer allocated before the barrier and used after it,
and a barrier nested deeper in the body (under an ``if`` or in a serial loop: some iterations would
skip it, or reach it several times). Nested ``T.Parallel`` loops split from the inside out.
"""

from __future__ import annotations

import tvm_ffi
from tvm import tirx

from ..ir import intrinsics as I
from ..ir.atomic_calls import is_parallel_loop
from ..lowering import frontend_error_at as _error
from .bindings import is_pure, unique_bindings, uses_any
from .structural import seq, structural_map

#: our intrinsics that are barriers among threads, blocks or warps
_BARRIERS = ("named_barrier", "sync_grid", "sync_warp", *I.CLUSTER_BARRIERS)


def is_barrier(stmt) -> bool:
    """Whether ``stmt`` is a barrier statement (``T.sync_threads()`` and its kin)."""
    if not isinstance(stmt, tirx.Evaluate) or not isinstance(stmt.value, tirx.Call):
        return False
    if str(getattr(stmt.value.op, "name", "")) == "tirx.tvm_storage_sync":
        return True
    intrinsic = I.intrinsic_of(stmt.value)
    return intrinsic is not None and intrinsic.name in _BARRIERS


def split_parallel_at_barriers(func: tirx.PrimFunc, kernel: str) -> tirx.PrimFunc:
    """``func`` with every ``T.Parallel`` loop whose body has barriers at its top level written as
    one loop per phase with the barriers between them (see the module doc)."""
    if _barrier_in(func.body) is None:
        return func

    def on_for(loop):
        if not is_parallel_loop(loop):
            return loop
        return _split(loop, kernel)

    body = structural_map(func.body, [(tirx.For, on_for)])  # post-order: inner loops first
    return func if body.same_as(func.body) else func.with_body(unique_bindings(body))


def _flat(stmt) -> list:
    if isinstance(stmt, tirx.SeqStmt):
        return [s for child in stmt.seq for s in _flat(child)]
    return [stmt]


def _split(loop, kernel: str):
    stmts = _flat(loop.body)
    if not any(is_barrier(s) for s in stmts):
        for s in stmts:
            nested = _barrier_in(s)
            if nested is not None:
                raise _error(nested, kernel, "a barrier inside a T.Parallel loop must stand at the top level of the "
                             "loop's body, where the loop is split in two (every iteration before it happens "
                             "before every iteration after it); under an if or in a nested serial loop some "
                             "iterations would skip it or reach it several times. Move it out of the "
                             "if / loop, or end the T.Parallel loop there and start another after the barrier")
        return loop
    phases, barriers = [[]], []
    for s in stmts:
        if is_barrier(s):
            barriers.append(s)
            phases.append([])
        else:
            phases[-1].append(s)
    out, earlier = [], []
    for k, phase in enumerate(phases):
        carried = _carried_bindings(earlier, phase, kernel)
        if phase:
            out.append(tirx.For(loop.loop_var, loop.min, loop.extent, loop.kind, seq(carried + phase),
                                loop.thread_binding, loop.annotations, step=loop.step, span=loop.span))
        earlier += phase
        if k < len(barriers):
            out.append(barriers[k])
    return seq(out)


def _carried_bindings(earlier: list, phase: list, kernel: str) -> list:
    """The Binds of ``earlier`` phases that ``phase`` (or a Bind it needs) uses, in their order;
    refuses one whose value reads memory, and a buffer allocated earlier and used here."""
    for s in earlier:
        if isinstance(s, tirx.AllocBuffer) and any(uses_any(p, [s.buffer]) for p in phase):
            raise _error(s, kernel, f"'{s.buffer.name}' is allocated inside a T.Parallel body before a barrier and "
                         f"used after it; the loop is split at the barrier, so allocate it before the loop")
    needed, users = [], list(phase)
    for s in reversed(earlier):
        if isinstance(s, tirx.Bind) and any(uses_any(u, [s.var]) for u in users):
            if not is_pure(s.value):
                raise _error(s, kernel, f"'{s.var.name}' is bound before a barrier inside a T.Parallel body and used "
                             f"after it, but its value ({s.value}) reads memory: the loop is split at the barrier, "
                             f"and the value would be read again after it. Store it in a fragment indexed by "
                             f"the loop variables (or read it again after the barrier, if that is what you mean)")
            needed.insert(0, s)
            users.append(s.value)
    return needed


def _barrier_in(stmt):
    found = []
    tvm_ffi.structural_walk(stmt, [(tirx.Evaluate, lambda e: found.append(e) if is_barrier(e) else None)])
    return found[0] if found else None


__all__ = ["is_barrier", "split_parallel_at_barriers"]
