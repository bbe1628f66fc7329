"""T.gemm on CUDA: ldmatrix from (swizzled) shared memory + mma.sync m16n8k16, fp32 accumulate;
other element types take the SIMT kit's FMA path (tilelang_core.simt.lower_gemm_fma).

Warps split the C tile by ``layouts.warp_partition`` (GemmWarpPolicy); each warp walks K in steps
of 16, loading its A sub-tiles (MI of 16x16, ldmatrix.x4) and B sub-tiles (NI of 16x8, two per
ldmatrix.x4), then issuing MI x NI mma.sync. Lane addresses follow the PTX ISA fragment tables
(see layouts.py): for A row-major, lane l reads row l % 16 at column 8 * (l // 16).
"""

from __future__ import annotations

from tvm import tirx

from tilelang_core.ir import Gemm, TileOp
from tilelang_core.simt import intrinsics as I
from tilelang_core.simt.lower_gemm_fma import check_gemm_operands, gemm_shape, lower_gemm_fma
from tilelang_core.simt.lowering import FRAGMENT, dtype, region_index, scope, state_of
from tilelang_core.simt.transform.state import loop, seq

from .hopper.wgmma import lower_gemm_wgmma
from .layouts import MMA_K, MMA_M, MMA_N, WARP, warp_partition

MMA_HELPERS = {"float16": "tl_mma_m16n8k16_f16_f32", "bfloat16": "tl_mma_m16n8k16_bf16_f32"}


def gemm_warps(op: Gemm, num_threads: int) -> tuple[int, int]:
    m, n, _ = gemm_shape(op)
    return warp_partition(m, n, num_threads // WARP, op.policy.value)


def uses_mma(op: Gemm) -> bool:
    """fp16/bf16 operands with an fp32 accumulator run on tensor cores; anything else takes the
    FMA path (each thread computes its own accumulator elements from shared memory)."""
    a, b, c = dtype(op.A), dtype(op.B), dtype(op.C)
    return a == b and a in MMA_HELPERS and c == "float32"


def check_gemm(op: Gemm, ctx) -> None:
    check_gemm_operands(op, ctx)
    m, n, k = gemm_shape(op)
    if k % MMA_K:
        raise ctx.error("gemm", f"K={k} must be a multiple of {MMA_K} for mma.sync m16n8k16")


def lower_gemm(call, ctx):
    """The cuda gemm rule (registered by lowering.py): wgmma on sm_90a where it fits (hopper/), else
    mma.sync, else the kit's FMA fallback."""
    op: Gemm = TileOp.from_stmt(call)
    st = state_of(ctx)
    check_gemm_operands(op, ctx)
    plan = st.backend.plan(op, st.num_threads) if st.backend is not None else None
    if plan is not None:
        return lower_gemm_wgmma(op, st, plan, proxy_fence=st.backend.needs_proxy_fence(op))
    check_gemm(op, ctx)
    if not uses_mma(op):
        return lower_gemm_fma(op, st, ctx)
    m, n, k = gemm_shape(op)
    m_warp, n_warp = gemm_warps(op, st.num_threads)
    wm_size, wn_size = m // m_warp, n // n_warp
    mi_count, ni_count = wm_size // MMA_M, wn_size // MMA_N
    tx = st.thread_var
    warp = tirx.floordiv(tx, WARP)
    lane = tirx.floormod(tx, WARP)
    wm, wn = tirx.floordiv(warp, n_warp), tirx.floormod(warp, n_warp)
    in_dtype = dtype(op.A)
    a_in_registers = scope(op.A) == FRAGMENT
    # A from a fragment already sits in mma A-operand order (see pipeline.operand_layout): the
    # 16x16 A tile (mi, kk) is the two 16x8 accumulator tiles (mi, 2kk), (mi, 2kk+1), i.e. eight
    # consecutive registers starting at (mi * K/8 + 2kk) * 4.
    a_regs = st.local_buffer(op.A.source) if a_in_registers else \
        st.alloc("A_frag", (mi_count * 8,), in_dtype, "local")
    a_k_tiles = k // MMA_N
    b_regs = st.alloc("B_frag", (ni_count * 4,), in_dtype, "local")
    c_regs = st.local_buffer(op.C.source)
    mma = MMA_HELPERS[in_dtype]

    def a_address(kk, mi):
        row0 = wm * wm_size + mi * MMA_M
        if not op.transpose_A:  # stored M x K
            r, c = row0 + tirx.floormod(lane, 16), kk * MMA_K + tirx.floordiv(lane, 16) * 8
        else:  # stored K x M, read transposed
            r = kk * MMA_K + tirx.floormod(lane, 8) + tirx.floordiv(lane, 16) * 8
            c = row0 + tirx.floormod(tirx.floordiv(lane, 8), 2) * 8
        return tirx.address_of(tirx.BufferLoad(op.A.source, region_index(op.A, [st.simplify(r), st.simplify(c)])))

    def b_address(kk, col0, pair: bool):
        sel = tirx.floordiv(lane, 16) if pair else 0
        if not op.transpose_B:  # stored K x N, read transposed
            r = kk * MMA_K + tirx.floormod(lane, 8) + tirx.floormod(tirx.floordiv(lane, 8), 2) * 8
            c = col0 + sel * 8
        else:  # stored N x K
            r = col0 + tirx.floormod(lane, 8) + sel * 8
            c = kk * MMA_K + tirx.floormod(tirx.floordiv(lane, 8), 2) * 8
        return tirx.address_of(tirx.BufferLoad(op.B.source, region_index(op.B, [st.simplify(r), st.simplify(c)])))

    def step(kk):
        body = []
        a_op = "tl_ldmatrix_x4_trans" if op.transpose_A else "tl_ldmatrix_x4"
        if not a_in_registers:
            body.append(loop("mi", mi_count, lambda mi: I.call(
                a_op, I.address_of(a_regs, mi * 8), a_address(kk, mi)), tirx.ForKind.UNROLLED))

        def a_operand(mi):
            if a_in_registers:
                return I.address_of(a_regs, (mi * a_k_tiles + 2 * kk) * 4)
            return I.address_of(a_regs, mi * 8)

        b_trans = "" if op.transpose_B else "_trans"
        if ni_count % 2 == 0:
            body.append(loop("nj", ni_count // 2, lambda nj: I.call(
                "tl_ldmatrix_x4" + b_trans, I.address_of(b_regs, nj * 8),
                b_address(kk, wn * wn_size + nj * 2 * MMA_N, True)), tirx.ForKind.UNROLLED))
        else:
            body.append(loop("ni", ni_count, lambda ni: I.call(
                "tl_ldmatrix_x2" + b_trans, I.address_of(b_regs, ni * 4),
                b_address(kk, wn * wn_size + ni * MMA_N, False)), tirx.ForKind.UNROLLED))
        body.append(loop("mi", mi_count, lambda mi: loop("ni", ni_count, lambda ni: I.call(
            mma, I.address_of(c_regs, (mi * ni_count + ni) * 4), a_operand(mi),
            I.address_of(b_regs, ni * 4)), tirx.ForKind.UNROLLED), tirx.ForKind.UNROLLED))
        return seq(body)

    stmts = []
    if op.clear_accum:
        stmts.append(loop("l", mi_count * ni_count * 4, lambda l: tirx.BufferStore(
            c_regs, tirx.const(0, "float32"), [l]), tirx.ForKind.UNROLLED))
    stmts.append(loop("kk", k // MMA_K, step, tirx.ForKind.UNROLLED))
    return seq(stmts)

