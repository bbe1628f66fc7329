"""A ``T.Parallel`` loop in a ``T.Pipelined`` body that only copies a global tile into shared
memory is that tile's ``T.copy``.

TileLang's hand-written GEMMs (``example_gemm_intrinsics``) and sparse attention load their
tiles this way::

    for ko in T.Pipelined(K // block_K, num_stages=2):
        for i, k in T.Parallel(block_M, block_K):
            A_shared[i, k] = A[by * block_M + i, ko * block_K + k]

TileLang turns such loops into asynchronous, vectorized copies the pipeline overlaps. Here the
software pipeline's producers are T.copy tile ops (simt/transform/software_pipeline.py; TMA on
sm_90a), so the loop becomes ``T.copy(A[by * block_M:, ko * block_K:], A_shared)`` first. The
rewrite applies only where the two mean the same: the nest's body is one store of a global
element into a shared one, of one dtype; each loop variable (from 0, no annotation but the
parallel mark) stands alone (plus loop-invariant terms) in exactly one index on each side, in the
same order on both, the innermost one on both sides among them (a 2-D tile of rows: what TMA
and 16-byte cp.async carry; a column or a 1-D run would turn a pipeline whose other tiles TMA
loads into a cp.async one); every other index is loop-invariant; the tensor has no
``T.annotate_safe_value`` (its reads past the edge give that value; a T.copy's give zeros).
Elements outside the global tensor, which the loop would read past its end, read as zeros (a
T.copy's guard). Anything else stays the loop it was.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from ..ir.substitute import substitute
from .bindings import uses_any
from .structural import seq

_SHARED = ("shared", "shared.dyn")
_GLOBAL = ("global", "")


def _nest(stmt):
    """(loops, innermost statement) of a T.Parallel nest, or None."""
    from ..ir.atomic_calls import is_parallel_loop

    loops = []
    while is_parallel_loop(stmt):
        loops.append(stmt)
        stmt = stmt.body
    return (loops, stmt) if loops else None


def _dims(indices, loop_vars, analyzer):
    """Per index: (the loop variable it walks or None, its value at the loop's start), or None
    where an index is not one variable plus loop-invariant terms."""
    zero = {v: tirx.const(0, v.ty) for v in loop_vars}
    dims = []
    for index in indices:
        used = [v for v in loop_vars if uses_any(index, [v])]
        if len(used) > 1:
            return None
        start = analyzer.simplify(substitute(index, zero)) if used else index
        if used and not analyzer.can_prove_equal(index - used[0], start):
            return None
        dims.append((used[0] if used else None, start))
    return dims


def _as_copy(stmt, padded):
    """The T.copy ``stmt`` is, or None (module docstring). ``padded``: tensors with a
    T.annotate_safe_value, whose reads past the edge give that value, not a copy's zeros."""
    from ..ir import Copy
    from ..ir import region as R

    nest = _nest(stmt)
    if nest is None:
        return None
    loops, store = nest
    if not isinstance(store, tirx.BufferStore) or not isinstance(store.value, tvm.ir.TensorLoad):
        return None
    if any(set(loop.annotations.keys()) != {"tl.parallel"} or R.as_int(loop.min) != 0
           or R.as_int(loop.extent) is None for loop in loops):
        return None
    dst, src = store.buffer, store.value.source
    if str(dst.ty.storage_scope) not in _SHARED or str(src.ty.storage_scope) not in _GLOBAL \
            or str(dst.ty.dtype) != str(src.ty.dtype) or any(src.same_as(b) for b in padded):
        return None
    loop_vars = [loop.loop_var for loop in loops]
    extents = {loop.loop_var: loop.extent for loop in loops}
    analyzer = tvm.sym.Analyzer()
    dst_dims = _dims(store.indices, loop_vars, analyzer)
    src_dims = _dims(store.value.indices, loop_vars, analyzer)
    if dst_dims is None or src_dims is None:
        return None
    walked = [[v for v, _ in dims if v is not None] for dims in (dst_dims, src_dims)]
    if not (len(walked[0]) == len(walked[1]) == len(loop_vars) == len(set(walked[0])) == len(set(walked[1]))) \
            or any(not a.same_as(b) for a, b in zip(*walked)):
        return None
    # a 2-D tile of rows (the innermost dimension walked on both sides): what TMA and 16-byte
    # cp.async carry; a column or a 1-D run stays the loop, so that it does not turn a pipeline
    # whose other tiles TMA loads into a cp.async one (gdn's G_shared[i] = G[b, s0 + i, h])
    if len(loop_vars) < 2 or dst_dims[-1][0] is None or src_dims[-1][0] is None:
        return None

    def region(buffer, dims):
        return R.make_region(buffer, [start for _, start in dims],
                             [extents[v] if v is not None else tirx.const(1, "int32") for v, _ in dims])

    try:
        return Copy(region(src, src_dims), region(dst, dst_dims)).to_stmt()
    except Exception:  # noqa: BLE001 - a region T.copy refuses (out of the shared tile): keep the loop
        return None


def parallel_copies(body):
    """``body`` with the copying T.Parallel nests of T.Pipelined bodies as T.copy (module docstring)."""
    from .safe_values import SAFE_VALUE

    padded = []
    tvm_ffi.structural_walk(body, [(tirx.AttrStmt, lambda a: padded.extend(a.node.keys())
                                    if a.attr_key == SAFE_VALUE else None)])

    def on_for(loop):
        if loop.annotations is None or "tl.num_stages" not in loop.annotations:
            return loop
        stmts = list(loop.body.seq) if isinstance(loop.body, tirx.SeqStmt) else [loop.body]
        copies = [_as_copy(s, padded) for s in stmts]
        if not any(c is not None for c in copies):
            return loop
        new = [c if c is not None else s for c, s in zip(copies, stmts)]
        return tirx.For(loop.loop_var, loop.min, loop.extent, loop.kind,
                        seq(new), loop.thread_binding, loop.annotations,
                        step=loop.step, span=loop.span)

    return tvm_ffi.structural_map(body, [(tirx.For, on_for)])


__all__ = ["parallel_copies"]
