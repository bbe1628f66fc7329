"""T.gemm without matrix instructions: each thread computes its own accumulator elements with
scalar multiply-adds, reading A and B from shared memory.

The kit's gemm rule for a backend that has no matrix-instruction rule (or for element types its
instructions lack: CUDA's mma.sync path takes fp16/bf16/tf32 with an fp32 accumulator and int8
with an int32 one, and falls back to ``lower_gemm_fma`` for the rest). The accumulator gets a
plain spread layout (``fma_accumulator_layout``), so any thread count and tile shape work.
"""

from __future__ import annotations

from tvm import tirx

from tilelang_core.ir import Gemm, TileOp
from tilelang_core.ir import region as R
from tilelang_core.layout import Fragment

from .lowering import FRAGMENT, SHARED, dtype, region_index, scope, state_of
from .transform.state import loop, seq


def gemm_shape(op: Gemm) -> tuple[int, int, int]:
    return tuple(int(R.as_int(x)) for x in op.mnk)


def fma_accumulator_layout(op: Gemm, num_threads: int) -> Fragment:
    """The accumulator's layout on the FMA path: its elements spread over the block's threads."""
    m, n, _ = gemm_shape(op)
    return Fragment.spread((m, n), num_threads, 1, name=str(op.C.source.name))


def check_gemm_operands(op: Gemm, ctx) -> None:
    if scope(op.A) not in SHARED + (FRAGMENT,) or scope(op.B) not in SHARED:
        raise ctx.error("gemm", f"A must be in shared memory or a fragment and B in shared memory "
                        f"(A in '{scope(op.A)}', B in '{scope(op.B)}'); copy them to "
                        f"T.alloc_shared buffers")
    if scope(op.C) != FRAGMENT:
        raise ctx.error("gemm", "the accumulator must be a T.alloc_fragment buffer")


def lower_gemm(call, ctx):
    """The kit's gemm rule: every gemm on the FMA path."""
    op: Gemm = TileOp.from_stmt(call)
    check_gemm_operands(op, ctx)
    return lower_gemm_fma(op, state_of(ctx), ctx)


def lower_gemm_fma(op: Gemm, st, ctx):
    """The FMA fallback: the accumulator has a plain spread layout; thread ``tx`` computes its
    elements (i, j) as sum_k A[i, k] * B[k, j] in the accumulator's type, reading shared memory."""
    if scope(op.A) == FRAGMENT:
        raise ctx.error("gemm", f"A in registers needs the tensor-core path (fp16/bf16 operands, fp32 "
                        f"accumulator); got A={dtype(op.A)}, C={dtype(op.C)}")
    _, _, k = gemm_shape(op)
    layout = st.layouts[op.C.source]
    c_regs = st.local_buffer(op.C.source)
    acc = dtype(op.C)

    def update(kk, l):
        i, j = (st.simplify(e) for e in layout.index_of(st.thread_var, l))
        a = region_index(op.A, [kk, i] if op.transpose_A else [i, kk])
        b = region_index(op.B, [j, kk] if op.transpose_B else [kk, j])
        product = tirx.Cast(acc, tirx.BufferLoad(op.A.source, a)) * \
            tirx.Cast(acc, tirx.BufferLoad(op.B.source, b))
        return tirx.BufferStore(c_regs, tirx.BufferLoad(c_regs, [l]) + product, [l])

    stmts = []
    if op.clear_accum:
        stmts.append(loop("l", layout.local_size, lambda l: tirx.BufferStore(
            c_regs, tirx.const(0, acc), [l]), tirx.ForKind.UNROLLED))
    # k outermost, the thread's elements unrolled inside: each element still sums k in order (the
    # same values as one k loop per element), while an operand value the thread's elements share
    # (a spread layout's column of B) is read once per k, and nvcc compiles one loop, not one per
    # element (128 of them took it a minute and more)
    stmts.append(loop("k", k, lambda kk: loop("l", layout.local_size, lambda l: update(kk, l),
                                              tirx.ForKind.UNROLLED), tirx.ForKind.SERIAL))
    return seq(stmts)
