"""T.reduce_* that read or write shared memory (TileLang's s2s, f2s and s2f reductions).

Register reductions (lower_reduce.py) follow the fragment layouts; here one side is a plain tile,
so the work is dealt by output element instead: one thread folds one line of the source (all
indices fixed but ``dim``) in a register and writes the result. A fragment side goes through a
shared workspace (staging.py); the op ends with a barrier, so what it wrote is there for the next.

Per-thread tiles (``T.alloc_local``, ``T.alloc_var``) hold a copy in every thread, so a per-thread
destination gets every output in every thread: from a per-thread source each thread folds its
own copy (no dealing, no barrier); from a shared or fragment source the dealt results go through
a shared workspace that every thread then reads whole. A per-thread source into a shared or
fragment destination is refused: which thread's copy would count is not said.
"""

from __future__ import annotations

import tvm
from tvm import tirx

from tilelang_core.ir import Reduce
from tilelang_core.ir import region as R

from . import intrinsics as I
from .lowering import FRAGMENT, PER_THREAD, cast, dtype, load, scope
from .paired_fold import fold_per_thread, paired_helper, per_thread_pairing
from .staging import flat, fragment_to_shared, shared_to_fragment, size, unflatten
from .transform.state import if_then, loop, seq


def lower_reduce_shared(op: Reduce, st, ctx, identity, combine):
    """The statement for ``op`` whose source or destination is in shared memory; ``identity(kind,
    dtype)`` starts a fold and ``combine(a, b)`` folds (lower_reduce.py's, NaN-propagating or not)."""
    kind, what = op.kind, f"T.reduce_{op.kind}"
    src_ext = [R.as_int(r.extent) for r in op.src.region]
    dst_ext = [R.as_int(r.extent) for r in op.dst.region]
    if None in src_ext or None in dst_ext:
        raise ctx.error("reduce", f"{what} of a shared tile needs constant extents")
    out_ext = [e for d, e in enumerate(src_ext) if d != op.dim]
    outputs = size(out_ext)
    acc_dt, threads, tx = dtype(op.dst), st.num_threads, st.thread_var
    stmts = []

    if scope(op.src) == FRAGMENT:
        staged, src_ws = fragment_to_shared(op.src, st, what, "red_in")
        stmts.append(staged)

        def read(index):
            return tirx.BufferLoad(src_ws, [flat(index, src_ext)])
    else:
        def read(index):
            return load(op.src, [r.min + i for r, i in zip(op.src.region, index)])

    per_thread_src, per_thread_dst = scope(op.src) in PER_THREAD, scope(op.dst) in PER_THREAD
    if per_thread_src and not per_thread_dst:
        raise ctx.error("reduce", f"{what} of '{op.src.source.name}', a per-thread tile ({scope(op.src)}), into "
                        f"'{op.dst.source.name}' ({scope(op.dst)}): every thread holds its own copy of the source "
                        "and which one counts is not said; reduce into a T.alloc_local / T.alloc_var, or "
                        "reduce a shared or fragment tile")
    # the dealt results land in a shared workspace when a fragment, or every thread, takes them
    staged_out = scope(op.dst) == FRAGMENT or (per_thread_dst and not per_thread_src)
    if staged_out:
        dst_ws = st.alloc(f"{op.dst.source.name}_red_out", (outputs,), acc_dt, "shared.dyn")
    # a per-thread source folds two values at a time where it can (paired_fold.py, its own registers)
    helper = paired_helper(st.dialect, kind, op.nan_propagate, acc_dt, dtype(op.src)) if per_thread_src else None
    pairing = per_thread_pairing(op) if helper else None
    if not pairing:
        acc = st.alloc(f"{op.dst.source.name}_red_acc", (1,), acc_dt, "local")

    def dst_index_of(kept):
        # the output's extents equal the destination's but for unit dimensions (Reduce checks it:
        # a keepdim destination, or a source with a stage slot in front, software_pipeline.py):
        # the non-unit dimensions pair up in order, unit ones take index 0
        full = kept[:op.dim] + [0] + kept[op.dim:]
        varying = iter(i for d, i in enumerate(full) if d != op.dim and src_ext[d] != 1)
        dst_index = [next(varying) if e != 1 else 0 for e in dst_ext]
        return [r.min + i for r, i in zip(op.dst.region, dst_index)]

    def store_result(kept, result):
        if not op.clear:
            result = combine(load(op.dst, dst_index_of(kept)), result)
        return tirx.BufferStore(op.dst.source, result, dst_index_of(kept))

    def fold_line(out):
        kept = unflatten(out, out_ext)

        def fold(k):
            value = cast(read(kept[:op.dim] + [k] + kept[op.dim:]), acc_dt)
            if kind in ("abssum", "absmax"):
                value = tvm.tirx.abs(value)
            return tirx.BufferStore(acc, combine(tirx.BufferLoad(acc, [0]), value), [0])

        result = tirx.BufferLoad(acc, [0])
        write = tirx.BufferStore(dst_ws, result, [out]) if staged_out else store_result(kept, result)
        return seq([tirx.BufferStore(acc, identity(kind, acc_dt), [0]),
                    loop("k", src_ext[op.dim], fold, tirx.ForKind.SERIAL), write])

    if per_thread_src:  # each thread folds its own copy, every output
        stmts.append(fold_per_thread(op, st, helper, pairing, identity, combine, store_result) if pairing
                     else loop("o", outputs, fold_line, tirx.ForKind.SERIAL))
        return seq(stmts)

    def line(it):
        out = it * threads + tx
        body = fold_line(out)
        return if_then(out < outputs, body) if outputs % threads else body

    stmts.append(loop("o", (outputs + threads - 1) // threads, line, tirx.ForKind.SERIAL))
    if scope(op.dst) == FRAGMENT:  # (a keepdim layout's unit axis flattens to the same offsets)
        stmts.append(shared_to_fragment(dst_ws, op.dst, st, what,
                                        None if op.clear else lambda new, old: combine(old, new)))
    elif per_thread_dst:  # every thread reads every dealt output
        stmts.append(I.syncthreads())
        stmts.append(loop("o", outputs, lambda o: store_result(unflatten(o, out_ext), tirx.BufferLoad(dst_ws, [o])),
                          tirx.ForKind.SERIAL))
    stmts.append(I.syncthreads())  # the workspaces (and a shared result) are read after this
    return seq(stmts)
