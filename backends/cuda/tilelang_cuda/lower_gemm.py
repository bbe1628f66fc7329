"""T.gemm on CUDA: mma.sync with fp32/int32 accumulators (wgmma on sm_90a where hopper/ plans it);
element types without an instruction take the SIMT kit's FMA path
(tilelang_core.simt.lower_gemm_fma).

Instructions (mma.py, chosen through the arch's capability table): m16n8k16 for fp16/bf16,
m16n8k8 tf32 for float32, m16n8k32 for int8/uint8 (int32 accumulator). Warps split the C tile by
``layouts.warp_partition`` (GemmWarpPolicy); each warp walks K in steps of the instruction's K,
loading its A sub-tiles (MI of 16 x K) and B sub-tiles (NI of K x 8), then issuing MI x NI
mma.sync. Lane addresses follow the PTX ISA fragment tables (see layouts.py).

Operand loads: ldmatrix moves 8x8 matrices of 16-bit units, i.e. rows of 16 bytes, which is a
K-contiguous row piece of any element type. So K-major operands (A stored M x K, B stored N x K,
``transpose_B=True``) load with ldmatrix for every type: for A, lane l reads row l % 16 at column
``per_row * (l // 16)`` (``per_row`` = elements in 16 bytes: 8 fp16, 16 int8, 4 fp32). MN-major
operands need a transpose: ldmatrix.trans does it for 16-bit types only, so int8 and tf32
operands stored K x M / K x N are read with plain shared loads, element by element at the
positions of the fragment tables (layouts.mma_a_layout / mma_b_layout). That keeps them on
tensor cores (as TileLang does: CUTLASS's UniversalCopy/DefaultCopy for those majors) at the cost
of more shared load instructions; store B as N x K for the fast path.

float32 -> tf32 matches TileLang: its CUDA gemm template dispatches float operands to
``SM80_16x8x8_F32TF32TF32F32_TN`` (src/tl_templates/cuda/gemm_mma.h in tile-ai/tilelang:
``TL_DISPATCH_MMA(float, float, float, SM80_16x8x8_F32TF32TF32F32_TN)``, and GemmTensorOp maps
``float`` to ``tfloat32_t``); its issues #859 and #2038 report float32 T.gemm running on tf32
with no switch for exact fp32. The operands go to the instruction as stored, which ignores their
low 13 mantissa bits (truncation), as in TileLang (it dropped its rounding in PR #573). Kernels
count on it: TileKernels rounds its tf32 operands itself, adding half a tf32 ulp to the bits
(mhc ``round_to_tf32``), so that the truncation completes a round to nearest; rounding again here
(cvt.rna, as this backend once did) moved half the operands one ulp up, and the mhc pre-norm
fn_grad missed torch's tf32 reference on 3% of its elements on the H100. ``disable_tf32``
(``tl.disable_tf32``) gives exact fp32 FMAs.
"""

from __future__ import annotations

import tvm
from tvm import tirx

from tilelang_core.ir import Gemm, TileOp
from tilelang_core.simt import intrinsics as I
from tilelang_core.simt.lower_gemm_fma import check_gemm_operands, gemm_shape, lower_gemm_fma
from tilelang_core.simt.lowering import FRAGMENT, SHARED, dtype, region_index, scope, state_of
from tilelang_core.simt.transform.apply_layouts import vector_contiguous
from tilelang_core.simt.transform.state import (FRAGMENT_COMPUTE, FRAGMENT_LOAD, FRAGMENT_PREFETCH,
                                                FRAGMENT_STEPS, loop, seq)

from .hopper.wgmma import lower_gemm_wgmma
from .layouts import MMA_M, MMA_N, WARP, mma_a_layout, mma_b_layout, warp_partition
from .mma import MmaInstruction, select_mma


def gemm_warps(op: Gemm, num_threads: int) -> tuple[int, int]:
    m, n, _ = gemm_shape(op)
    return warp_partition(m, n, num_threads // WARP, op.policy.value)


def check_gemm(op: Gemm, instr: MmaInstruction, ctx) -> None:
    _, _, k = gemm_shape(op)
    if k % instr.k:
        raise ctx.error("gemm", f"K={k} must be a multiple of {instr.k} for mma.sync {instr.shape} "
                        f"({dtype(op.A)} operands); use a block_K that is")


def lower_gemm(call, ctx):
    """The cuda gemm rule (registered by lowering.py): wgmma on sm_90a where it fits (hopper/), else
    mma.sync, else the kit's FMA fallback."""
    op: Gemm = TileOp.from_stmt(call)
    st = state_of(ctx)
    check_gemm_operands(op, ctx)
    plan = st.backend.plan(op, st.num_threads)
    if plan is not None:
        return lower_gemm_wgmma(op, st, plan, proxy_fence=st.backend.needs_proxy_fence(op))
    instr = select_mma(op, st.backend.arch, st.options)
    if instr is None:
        return lower_gemm_fma(op, st, ctx)
    check_gemm(op, instr, ctx)
    return lower_gemm_mma(op, instr, st)


def _ldmatrix_layout_ok(region, st, per_row: int) -> bool:
    """The operand's shared layout keeps each 16-byte row ldmatrix reads whole
    (``vector_contiguous``); fragments and the default swizzles always do."""
    layout = st.annotated.get(str(region.source.name)) if scope(region) in SHARED else None
    return layout is None or (len(layout.shape) == 2 and vector_contiguous(layout, per_row, st.analyzer))


def lower_gemm_mma(op: Gemm, instr: MmaInstruction, st):
    m, n, k = gemm_shape(op)
    m_warp, n_warp = gemm_warps(op, st.num_threads)
    wm_size, wn_size = m // m_warp, n // n_warp
    mi_count, ni_count = wm_size // MMA_M, wn_size // MMA_N
    tx = st.thread_var
    warp = tirx.floordiv(tx, WARP)
    lane = tirx.floormod(tx, WARP)
    wm, wn = tirx.floordiv(warp, n_warp), tirx.floormod(warp, n_warp)
    in_dtype = dtype(op.A)
    mma_k, per_row = instr.k, instr.per_row
    a_size, b_size = per_row, per_row // 2  # elements in 4 (A) and 2 (B) 32-bit registers
    a_in_registers = scope(op.A) == FRAGMENT
    # ldmatrix.trans transposes 16-bit units: MN-major operands of other widths take plain loads
    # and an operand whose annotated layout breaks ldmatrix's 16-byte rows takes them too
    a_ldmatrix = (instr.bits == 16 or not op.transpose_A) and (a_in_registers or _ldmatrix_layout_ok(op.A, st, per_row))
    b_ldmatrix = (instr.bits == 16 or op.transpose_B) and _ldmatrix_layout_ok(op.B, st, per_row)
    k_steps = k // mma_k
    # In a pipelined loop (software_pipeline's mark), each k-step loads into registers of its own
    # and the steps are marked, so that the next stage's first loads can move ahead of the last
    # step's mma (tilelang_core/simt/transform/prefetch_fragments.py).
    # Not with plain shared loads (int8/tf32 MN-major operands): their many scalar registers per
    # step, doubled, spill (tf32 128x128 with B stored K x N: 255 registers and a stack frame).
    prefetch = bool(op.options.get(FRAGMENT_PREFETCH)) and not a_in_registers and k_steps >= 2 \
        and a_ldmatrix and b_ldmatrix
    copies = k_steps if prefetch else 1
    # A from a fragment already sits in mma A-operand order (pipeline.operand_layout,
    # layouts.mma_a_operand_layout): the A tile (mi, kk) is the a_size registers from
    # (mi * k_steps + kk) * a_size (for fp16 the two 16x8 accumulator tiles (mi, 2kk), (mi, 2kk+1)).
    a_regs = st.local_buffer(op.A.source) if a_in_registers else \
        st.alloc("A_frag", (copies * mi_count * a_size,), in_dtype, "local")
    b_regs = st.alloc("B_frag", (copies * ni_count * b_size,), in_dtype, "local")
    c_regs = st.local_buffer(op.C.source)

    def a_address(kk, mi):
        row0 = wm * wm_size + mi * MMA_M
        if not op.transpose_A:  # stored M x K
            r, c = row0 + tirx.floormod(lane, 16), kk * mma_k + tirx.floordiv(lane, 16) * per_row
        else:  # stored K x M, read transposed
            r = kk * mma_k + tirx.floormod(lane, 8) + tirx.floordiv(lane, 16) * 8
            c = row0 + tirx.floormod(tirx.floordiv(lane, 8), 2) * 8
        return tirx.address_of(tirx.BufferLoad(op.A.source, region_index(op.A, [st.simplify(r), st.simplify(c)])))

    def b_address(kk, col0, pair: bool):
        sel = tirx.floordiv(lane, 16) if pair else 0
        if not op.transpose_B:  # stored K x N, read transposed
            r = kk * mma_k + tirx.floormod(lane, 8) + tirx.floormod(tirx.floordiv(lane, 8), 2) * 8
            c = col0 + sel * 8
        else:  # stored N x K
            r = col0 + tirx.floormod(lane, 8) + sel * 8
            c = kk * mma_k + tirx.floormod(tirx.floordiv(lane, 8), 2) * per_row
        return tirx.address_of(tirx.BufferLoad(op.B.source, region_index(op.B, [st.simplify(r), st.simplify(c)])))

    def at(base, offset):  # base + offset, printed as before where base is 0
        return offset if isinstance(base, int) and base == 0 else base + offset

    def plain_loads(region, regs, base, frag, transposed, row0, col0):
        """regs[base + r] = element r of this lane's fragment ``frag`` (rows x cols of the
        instruction operand) at (row0, col0) of the operand, stored transposed or not."""
        stores = []
        for r in range(frag.local_size):
            i, j = frag.index_of(lane, r)
            index = [col0 + j, row0 + i] if transposed else [row0 + i, col0 + j]
            value = tirx.BufferLoad(region.source, region_index(region, [st.simplify(x) for x in index]))
            stores.append(tirx.BufferStore(regs, value, [base + r]))
        return seq(stores)

    def load_a(kk, base):
        if a_ldmatrix:
            a_op = "tl_ldmatrix_x4_trans" if op.transpose_A else "tl_ldmatrix_x4"
            return loop("mi", mi_count, lambda mi: I.call(
                a_op, I.address_of(a_regs, at(base, mi * a_size)), a_address(kk, mi)), tirx.ForKind.UNROLLED)
        frag = mma_a_layout(instr.bits)  # 16 x K: (m, k) at [k, m] when stored K x M
        return loop("mi", mi_count, lambda mi: plain_loads(
            op.A, a_regs, at(base, mi * a_size), frag, op.transpose_A, wm * wm_size + mi * MMA_M, kk * mma_k),
            tirx.ForKind.UNROLLED)

    def load_b(kk, base):
        b_trans = "" if op.transpose_B else "_trans"
        if not b_ldmatrix:  # the fragment's (k, n) at [k, n], or at [n, k] when stored N x K
            frag = mma_b_layout(instr.bits)
            return loop("ni", ni_count, lambda ni: plain_loads(
                op.B, b_regs, at(base, ni * b_size), frag, op.transpose_B, kk * mma_k, wn * wn_size + ni * MMA_N),
                tirx.ForKind.UNROLLED)
        if ni_count % 2 == 0:
            return loop("nj", ni_count // 2, lambda nj: I.call(
                "tl_ldmatrix_x4" + b_trans, I.address_of(b_regs, at(base, nj * (2 * b_size))),
                b_address(kk, wn * wn_size + nj * 2 * MMA_N, True)), tirx.ForKind.UNROLLED)
        return loop("ni", ni_count, lambda ni: I.call(
            "tl_ldmatrix_x2" + b_trans, I.address_of(b_regs, at(base, ni * b_size)),
            b_address(kk, wn * wn_size + ni * MMA_N, False)), tirx.ForKind.UNROLLED)

    def a_base(kk):  # kk is a Python int where copies > 1 (the steps are unrolled here)
        return kk * mi_count * a_size if copies > 1 else 0

    def b_base(kk):
        return kk * ni_count * b_size if copies > 1 else 0

    def load(kk):
        return seq(([] if a_in_registers else [load_a(kk, a_base(kk))]) + [load_b(kk, b_base(kk))])

    def compute(kk):
        def a_operand(mi):
            if a_in_registers:
                return I.address_of(a_regs, (mi * k_steps + kk) * a_size)
            return I.address_of(a_regs, at(a_base(kk), mi * a_size))

        return loop("mi", mi_count, lambda mi: loop("ni", ni_count, lambda ni: I.call(
            instr.helper, I.address_of(c_regs, (mi * ni_count + ni) * 4), a_operand(mi),
            I.address_of(b_regs, at(b_base(kk), ni * b_size))), tirx.ForKind.UNROLLED), tirx.ForKind.UNROLLED)

    stmts = []
    if op.clear_accum:
        stmts.append(loop("l", mi_count * ni_count * 4, lambda l: tirx.BufferStore(
            c_regs, tirx.const(0, dtype(op.C)), [l]), tirx.ForKind.UNROLLED))
    if prefetch:
        def mark(key, value, body):
            return tirx.AttrStmt(tirx.const(0, "int32"), key, tirx.const(value, "int32"), body)

        steps = [mark(key, kk, part(kk)) for kk in range(k_steps)
                 for key, part in ((FRAGMENT_LOAD, load), (FRAGMENT_COMPUTE, compute))]
        stmts.append(mark(FRAGMENT_STEPS, k_steps, tirx.SeqStmt(steps)))
    else:
        stmts.append(loop("kk", k_steps, lambda kk: seq([load(kk), compute(kk)]), tirx.ForKind.UNROLLED))
    return seq(stmts)
