"""PrefetchFragments: a pipelined gemm loads the next stage's first operand fragments before its
last k-step's matrix instructions (the CUTLASS multistage mainloop order).

software_pipeline's steady loop waits and synchronizes at the top of each iteration, so every
warp stalls there and the matrix units idle until the first fragments of the new stage arrive
from shared memory (``wait, barrier, fragment loads, mma`` in a row). When the gemm that ends the
loop body was lowered in marked k-steps (state.FRAGMENT_STEPS, see software_pipeline's
``_mark_fragment_prefetch``), the loop is rotated::

    wait<s-2>; barrier; if 0 < n: load(0) of stage 0            # new, before the loop
    for k in range(n):
        if k + s - 1 < n: producers(k + s - 1); commit           # as before
        load(1); mma(0); load(2); mma(1) ... load(K-1); mma(K-2)
        wait<s-2>; barrier                                       # stage k+1 has landed
        if k + 1 < n: load(0) of stage k+1                       # registers of step 0
        mma(K-1)                                                 # covers the barrier and load

Same waits and one barrier per iteration. Why it is safe: the slot refilled at iteration k held
stage k-1, whose last fragments were loaded before iteration k-1's barrier; stage k+1 is read only
after a wait that counts the same committed groups as the top-of-loop wait did. The guard on
the next stage's load is needed: its slot index was simplified for k < n (with n <= s, ``k % s``
is printed as ``k``), so k + 1 = n would read past the pool. Loops with other consumers, fewer
than two k-steps or another shape are left in order (the marks are removed either way).
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from .state import FRAGMENT_COMPUTE, FRAGMENT_LOAD, FRAGMENT_STEPS, if_then, seq, substitute


def prefetch_fragments(body):
    """``body`` with every marked pipelined loop rotated (module docstring) and no marks left."""
    body = tvm_ffi.structural_map(body, [(tirx.For, _rotate)])
    return _strip_marks(body)


def _strip_marks(body):
    def on_attr(attr):
        if attr.attr_key in (FRAGMENT_STEPS, FRAGMENT_LOAD, FRAGMENT_COMPUTE):
            return attr.body
        return attr

    return tvm_ffi.structural_map(body, [(tirx.AttrStmt, on_attr)])


def _is_call(stmt, prefix: str) -> bool:
    if not isinstance(stmt, tirx.Evaluate) or not isinstance(stmt.value, tvm.ir.Call):
        return False
    call = stmt.value
    if call.op.name == "tirx.tvm_storage_sync":
        return prefix == "barrier"
    return call.op.name == "tirx.call_extern" and str(call.args[0].value).startswith(prefix)


def _steps(marked) -> list | None:
    """[(load, compute)] per k-step of a FRAGMENT_STEPS mark, or None if it is not in order."""
    parts = list(marked.body.seq) if isinstance(marked.body, tirx.SeqStmt) else [marked.body]
    count = int(marked.value.value)
    expect = [(key, kk) for kk in range(count) for key in (FRAGMENT_LOAD, FRAGMENT_COMPUTE)]
    if len(parts) != len(expect) or any(not isinstance(p, tirx.AttrStmt) or p.attr_key != key
                                        or int(p.value.value) != kk for p, (key, kk) in zip(parts, expect)):
        return None
    return [(parts[2 * kk].body, parts[2 * kk + 1].body) for kk in range(count)]


def _rotate(loop):
    if loop.annotations is None or "tl.pipelined" not in loop.annotations:
        return loop
    stmts = list(loop.body.seq) if isinstance(loop.body, tirx.SeqStmt) else [loop.body]
    if len(stmts) < 3 or not (isinstance(stmts[-1], tirx.AttrStmt) and stmts[-1].attr_key == FRAGMENT_STEPS):
        return loop
    steps = _steps(stmts[-1])
    binds = []
    rest = stmts[:-1]
    while rest and isinstance(rest[-1], tirx.Bind):
        binds.insert(0, rest.pop())
    wait, barrier, head = rest[0], rest[1], rest[2:]
    if steps is None or len(steps) < 2 or not _is_call(wait, "tl_cp_async_wait") \
            or not _is_call(barrier, "barrier"):
        return loop
    k = loop.loop_var
    values = {}
    for bind in binds:  # the next stage's loads see the names bound at the top of the body
        values[bind.var] = substitute(bind.value, values)

    end = loop.min + loop.extent

    def first_load(iteration):
        # only for iterations of the loop: index arithmetic was simplified for k in its range
        return if_then(iteration < end, substitute(substitute(steps[0][0], values), {k: iteration}))

    rotated = head + binds
    for kk in range(1, len(steps)):
        rotated += [steps[kk][0], steps[kk - 1][1]]
    rotated += [wait, barrier, first_load(k + 1), steps[-1][1]]
    body = seq(rotated)
    new_loop = tirx.For(k, loop.min, loop.extent, loop.kind, body, loop.thread_binding, loop.annotations)
    return seq([wait, barrier, first_load(loop.min), new_loop])
