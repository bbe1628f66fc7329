"""T.gemm on Metal: simdgroup_matrix 8x8 multiply-accumulates, or the SIMT kit's scalar FMA path.

The simdgroup path (``uses_simdgroup``): fp16 or fp32 operands, an fp32 accumulator (or one of
the operands' type), every simdgroup owning whole 8x8 tiles of C (layouts.simdgroup_partition).
The accumulator stays in registers in simdgroup_matrix order (layouts.py), so T.Parallel
epilogues, reductions and copies use it like any fragment. Each gemm is one call per simdgroup
of the prelude's ``tl_simdgroup_gemm<MI, NI, KS, TA, TB>(c, a, lda, b, ldb)`` (intrinsics.py): it
moves the MI x NI accumulator tiles into simdgroup matrices (``thread_elements``), walks K in
steps of 8 with ``simdgroup_load`` of the A and B tiles from threadgroup memory and
``simdgroup_multiply_accumulate``, and moves the tiles back. A may come from registers instead
(FlashAttention's P @ V): then its registers are already in simdgroup_matrix order.

simdgroup_load reads a plain strided tile, so the shared operands of these gemms get a row-major
layout instead of the kit's XOR swizzle (``row_major_operands``, before the kit's lowering).
"""

from __future__ import annotations

import tvm
from tvm import tirx

from tilelang_core.errors import LayoutError, LoweringError
from tilelang_core.ir import Gemm, TileOp
from tilelang_core.simt import intrinsics as I
from tilelang_core.simt.lower_gemm_fma import (check_gemm_operands, fma_accumulator_layout, gemm_shape,
                                               lower_gemm_fma)
from tilelang_core.simt.lowering import FRAGMENT, SHARED, dtype, region_index, scope, state_of
from tilelang_core.simt.transform.state import loop, seq

from .layouts import SIMDGROUP, TILE, simdgroup_accumulator_layout, simdgroup_partition

#: operand types simdgroup_matrix takes on every Apple family this backend targets (bfloat16
#: storage is legalized to 16-bit integers by TVM's passes, so bf16 gemms take the FMA path)
MATRIX_DTYPES = ("float16", "float32")
GEMM_OP = "tl.tile.gemm"


def simdgroup_split(op: Gemm, num_threads: int):
    m, n, _ = gemm_shape(op)
    if num_threads % SIMDGROUP:
        return None
    return simdgroup_partition(m, n, num_threads // SIMDGROUP, op.policy.value)


def uses_simdgroup(op: Gemm, num_threads: int, options) -> bool:
    """Does this gemm run on simdgroup matrices? (else: the kit's FMA path)."""
    if options is not None and getattr(options, "disable_simdgroup_matrix", False):
        return False
    a, b, c = dtype(op.A), dtype(op.B), dtype(op.C)
    _, _, k = gemm_shape(op)
    return (a == b and a in MATRIX_DTYPES and c in ("float32", a) and k % TILE == 0
            and scope(op.B) in SHARED and simdgroup_split(op, num_threads) is not None)


def accumulator_layout(op: Gemm, num_threads: int, options=None):
    if not uses_simdgroup(op, num_threads, options):
        return fma_accumulator_layout(op, num_threads)
    m, n, _ = gemm_shape(op)
    m_sg, n_sg = simdgroup_split(op, num_threads)
    return simdgroup_accumulator_layout(m, n, m_sg, n_sg, name=str(op.C.source.name))


def operand_layout(op: Gemm, name: str, num_threads: int, options=None):
    """A in registers (the fp16 copy of a previous gemm's accumulator): the accumulator layout of
    an M x K tile over the same simdgroup rows, which is what the simdgroup path reads."""
    m, _, k = gemm_shape(op)
    if not uses_simdgroup(op, num_threads, options):
        raise LayoutError(f"gemm {op!r} takes {name} from registers, which needs the simdgroup_matrix "
                          f"path (fp16/fp32 operands, K a multiple of 8, whole 8x8 tiles per "
                          f"simdgroup); copy it to a T.alloc_shared buffer")
    if name != "A" or op.transpose_A:
        raise LayoutError(f"gemm operand {name} of {op!r} is in registers: only a non-transposed A "
                          f"can be; copy it to a T.alloc_shared buffer")
    m_sg, n_sg = simdgroup_split(op, num_threads)
    if n_sg != 1:
        raise LayoutError(f"gemm {op!r} takes A from registers, so every simdgroup must own whole "
                          f"rows of C: use policy=T.GemmWarpPolicy.FullRow (this split is "
                          f"{m_sg}x{n_sg} simdgroups)")
    return simdgroup_accumulator_layout(m, k, m_sg, 1, name=str(op.A.source.name))


def row_major_operands(func: tirx.PrimFunc, num_threads: int, options) -> tirx.PrimFunc:
    """Give the shared operands of simdgroup gemms a row-major layout (a ``tl.layout_map``
    around the body, as T.annotate_layout writes it; the user's own annotations, inside, win and
    are checked by the rule)."""
    import tvm_ffi

    buffers = {}

    def on_call(call):
        if str(call.op.name) != GEMM_OP:
            return
        op = TileOp.from_stmt(call)
        if uses_simdgroup(op, num_threads, options):
            for region in (op.A, op.B):
                if scope(region) in SHARED:
                    buffers[region.source] = _row_major(int(region.source.ty.shape[-1]))

    tvm_ffi.structural_walk(func.body, [(tirx.TilePrimitiveCall, on_call)])
    if not buffers:
        return func
    return func.with_body(tirx.AttrStmt(tvm_ffi.Map(buffers), "tl.layout_map",
                                        tirx.const(1, "int32"), func.body))


def _row_major(cols: int):
    return tvm.tirx.IndexMap.from_func(lambda i, j: [i * cols + j], ndim=2, index_dtype="int32")


def _require_row_major(region, st, op_name: str) -> int:
    """Row stride of a shared operand whose layout must be plain row-major for simdgroup_load."""
    from tilelang_core.simt.transform.apply_layouts import shared_layout

    layout, _ = shared_layout(region.source, st.annotated, st.views)
    cols = int(region.source.ty.shape[-1])
    i, j = tirx.Var("i", "int32"), tirx.Var("j", "int32")
    if layout.kind != "annotated" or not st.analyzer.can_prove(layout.offset(i, j) == i * cols + j):
        raise LoweringError(f"kernel '{st.kernel}': gemm operand '{region.source.name}' has a "
                            f"T.annotate_layout that is not row-major, but {op_name} reads it with "
                            f"simdgroup_load; drop the annotation, or compile with pass config "
                            f"disable_simdgroup_matrix=True")
    return cols


def lower_gemm(call, ctx):
    """The metal gemm rule (registered by lowering.py)."""
    op: Gemm = TileOp.from_stmt(call)
    st = state_of(ctx)
    check_gemm_operands(op, ctx)
    if not uses_simdgroup(op, st.num_threads, ctx.options):
        return lower_gemm_fma(op, st, ctx)
    m, n, k = gemm_shape(op)
    m_sg, n_sg = simdgroup_split(op, st.num_threads)
    wm_size, wn_size = m // m_sg, n // n_sg
    mi_count, ni_count = wm_size // TILE, wn_size // TILE
    sg = tirx.floordiv(st.thread_var, SIMDGROUP)
    wm, wn = tirx.floordiv(sg, n_sg), tirx.floormod(sg, n_sg)
    row0, col0 = st.simplify(wm * wm_size), st.simplify(wn * wn_size)
    c_regs = st.local_buffer(op.C.source)

    def address(region, r, c):
        return tirx.address_of(tirx.BufferLoad(region.source, region_index(region, [r, c])))

    if scope(op.A) == FRAGMENT:
        a_ptr, lda = I.address_of(st.local_buffer(op.A.source), 0), 0
    else:
        lda = _require_row_major(op.A, st, "T.gemm")
        a_ptr = address(op.A, 0, row0) if op.transpose_A else address(op.A, row0, 0)
    ldb = _require_row_major(op.B, st, "T.gemm")
    b_ptr = address(op.B, col0, 0) if op.transpose_B else address(op.B, 0, col0)
    flag = {False: "false", True: "true"}
    helper = (f"tl_simdgroup_gemm<{mi_count}, {ni_count}, {k // TILE}, {flag[op.transpose_A]}, "
              f"{flag[op.transpose_B]}>")
    stmts = []
    if op.clear_accum:
        stmts.append(loop("l", mi_count * ni_count * 2, lambda l: tirx.BufferStore(
            c_regs, tirx.const(0, dtype(op.C)), [l]), tirx.ForKind.UNROLLED))
    stmts.append(I.call(helper, I.address_of(c_regs, 0), a_ptr, tirx.const(lda, "int32"), b_ptr,
                        tirx.const(ldb, "int32")))
    return seq(stmts)
