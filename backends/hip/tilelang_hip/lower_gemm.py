"""T.gemm on AMD matrix cores: MFMA on CDNA (gfx90a, gfx94x; wave64), WMMA on RDNA3 (gfx11;
wave32), fp16/bf16 operands and an fp32 accumulator; other types take the SIMT kit's FMA path.

Waves split the C tile (``layouts.wave_partition``, GemmWarpPolicy); each wave walks K in blocks,
loading its A rows (MI tiles) and B^T rows (NI tiles) from LDS into registers, then issuing
MI x NI instructions per K step with A and B swapped (layouts.py). An operand lane reads row
``lane % S`` of its tile and a run of K values: 16 contiguous bytes (one ds_read_b128) when the
operand is stored K-contiguous (A as M x K, B as N x K) and K allows; stored [k][row] (B as
K x N, A as K x M), lanes l and l ^ 1 (adjacent rows) share 4-byte reads (``tl_read_column_pair``),
else element by element.
With 16-byte runs on MFMA (8 values, two K steps of 4 per lane), the runs of 8 consecutive rows
fall in distinct banks under the kit's 16-byte XOR swizzle (tests/test_layouts.py checks it).
Registers (README, "Register pressure"): element-wise reads go through ``tl_opaque``'s lane row,
and WMMA's B columns are fenced, the next column's reads ahead of this column's instructions.

Which instruction: the wave size of the dialect says which family (64: MFMA, 32: WMMA); on MFMA,
``HipOptions.mfma`` picks 16x16x16 (default) or 32x32x8.
"""

from __future__ import annotations

from tvm import tirx
from tvm.ir import Range

from tilelang_core.errors import LayoutError
from tilelang_core.ir import Gemm, TileOp
from tilelang_core.simt import intrinsics as I
from tilelang_core.simt.lower_gemm_fma import check_gemm_operands, gemm_shape, lower_gemm_fma
from tilelang_core.simt.lowering import FRAGMENT, dtype, region_index, scope, state_of
from tilelang_core.simt.transform.state import loop, seq

from .layouts import CORES, MFMA16, WMMA16, MatrixCore, accumulator_layout, wave_partition

COPY_BYTES = 16  # the widest LDS read per lane (ds_read_b128)


def matrix_core(wave: int, mfma: str = "16x16x16") -> MatrixCore:
    if wave == 32:
        return WMMA16
    return CORES.get(f"mfma_{mfma}", MFMA16)


def uses_matrix_core(op: Gemm, core: MatrixCore) -> bool:
    """fp16/bf16 operands with an fp32 accumulator; anything else takes the FMA path."""
    a, b, c = dtype(op.A), dtype(op.B), dtype(op.C)
    return a == b and core.helper(a) is not None and c == "float32"


def gemm_waves(op: Gemm, core: MatrixCore, num_threads: int) -> tuple[int, int]:
    if num_threads % core.wave:
        raise LayoutError(f"gemm {op!r}: {num_threads} threads are not whole waves of {core.wave} "
                          f"lanes; use threads= a multiple of {core.wave}")
    m, n, _ = gemm_shape(op)
    return wave_partition(core, m, n, num_threads // core.wave, op.policy.value)


def k_run(op: Gemm, core: MatrixCore) -> int:
    """K values an operand lane holds per K block: 16 on WMMA; on MFMA 4 (one instruction) or 8
    (two instructions, one 16-byte LDS read) when A is in shared memory and K allows it. The
    run's K order only has to agree between A and B: the sum over K does not care."""
    if not core.is_mfma:
        return core.k
    _, _, k = gemm_shape(op)
    wide = COPY_BYTES // 2
    return wide if scope(op.A) != FRAGMENT and k % (wide * core.groups) == 0 else 4


def _vector_ok(region, run: int, st) -> bool:
    """Are ``run`` consecutive K values of a row consecutive in LDS? Always under the kit's
    swizzles (they move whole 16-byte chunks); proved for a T.annotate_layout."""
    from tilelang_core.simt.transform.apply_layouts import shared_layout, vector_contiguous

    layout, _ = shared_layout(region.source, st.annotated, st.views)
    return vector_contiguous(layout, min(run, COPY_BYTES // 2), st.analyzer)


def _pairs_ok(region, st) -> bool:
    """For an operand stored [k][row]: do rows 2i and 2i + 1 of a K row share one aligned 4-byte
    word (tl_read_column_pair)? Under the kit's swizzles whenever the region starts on an even
    row; proved for a T.annotate_layout."""
    from tilelang_core.simt.transform.apply_layouts import shared_layout, vector_contiguous

    layout, _ = shared_layout(region.source, st.annotated, st.views)
    start = region.region[len(region.region) - 1].min
    return vector_contiguous(layout, 2, st.analyzer) and st.analyzer.can_prove(tirx.floormod(start, 2) == 0)


def check_gemm(op: Gemm, core: MatrixCore, ctx) -> None:
    _, _, k = gemm_shape(op)
    if k % core.k:
        raise ctx.error("gemm", f"K={k} must be a multiple of {core.k} for {core.name}; pad K or "
                        f"use a block_K that is a multiple of {core.k}")


def lower_gemm(call, ctx):
    """The hip gemm rule (registered by lowering.py): MFMA/WMMA, or the kit's FMA fallback."""
    op: Gemm = TileOp.from_stmt(call)
    st = state_of(ctx)
    check_gemm_operands(op, ctx)
    core = matrix_core(st.dialect.warp_size, getattr(st.options, "mfma", "16x16x16"))
    if not uses_matrix_core(op, core):
        return lower_gemm_fma(op, st, ctx)
    check_gemm(op, core, ctx)
    return _lower(op, st, core)


def _lower(op: Gemm, st, core: MatrixCore):
    m, n, k = gemm_shape(op)
    m_warp, n_warp = gemm_waves(op, core, st.num_threads)
    s, wave = core.size, core.wave
    mi_count, ni_count = m // m_warp // s, n // n_warp // s
    run = k_run(op, core)
    k_block = run * core.groups if core.is_mfma else core.k  # K covered by one operand load
    steps = run // core.operand_values  # instructions per K block and (mi, ni)
    lane = tirx.floormod(st.thread_var, wave)
    w = tirx.floordiv(st.thread_var, wave)
    wm, wn = tirx.floordiv(w, n_warp), tirx.floormod(w, n_warp)
    row_in_tile = tirx.floormod(lane, s)
    # MFMA: lane group g holds K values g * run .. g * run + run - 1 of the block; WMMA: all of them
    k_lane = tirx.floordiv(lane, s) * run if core.is_mfma else 0
    in_dtype = dtype(op.A)
    c_regs = st.local_buffer(op.C.source)
    a_in_registers = scope(op.A) == FRAGMENT
    a_regs = st.local_buffer(op.A.source) if a_in_registers else st.alloc("A_frag", (mi_count * run,), in_dtype, "local")
    b_regs = st.alloc("B_frag", (ni_count * run,), in_dtype, "local")
    helper = core.helper(in_dtype)
    a_layout = accumulator_layout(core, m, k, m_warp, 1) if a_in_registers else None
    a_vector = a_in_registers or (not op.transpose_A and _vector_ok(op.A, run, st))
    b_vector = op.transpose_B and _vector_ok(op.B, run, st)
    # Element-wise reads (K not contiguous) take the lane's row through tl_opaque, set once per
    # gemm: the swizzle XOR then stays on it and each read's constant folds into the LDS offset,
    # instead of one hoisted (and spilled) address register per read.
    # The pair reads' even row and parity are opaque as well (the parity picks the K row).
    lane_row, pair_row, odd = (tirx.Var(v, "int32") for v in ("lane_row", "lane_pair_row", "lane_odd"))
    parity = tirx.floormod(row_in_tile, 2)
    opaque = {} if a_vector and b_vector else {
        lane_row: (row_in_tile, s), pair_row: (row_in_tile - parity, s), odd: (parity, 2)}
    for var, (_, extent) in opaque.items():  # the ranges, for the swizzle's simplification
        st.analyzer.bind(var, Range.from_min_extent(0, extent))

    def load(region, regs, reg0, row, k0, vector: bool, tile_k: bool):
        """``run`` K values of logical row ``row`` (of A, or of B^T) into regs[reg0 ...]."""
        def index(kk, row=row):
            r, c = (row, kk) if tile_k else (kk, row)  # tile_k: stored [row][k]
            return region_index(region, [st.simplify(r), st.simplify(c)])

        if vector:
            chunk = min(run * 2, COPY_BYTES) // 2
            return loop("v", run // chunk, lambda v: I.call(
                f"tl_copy_{chunk * 2}", I.address_of(regs, reg0 + v * chunk),
                tirx.address_of(tirx.BufferLoad(region.source, index(k0 + v * chunk))),
                tirx.const(True, "bool")), tirx.ForKind.UNROLLED)
        row = st.simplify(row - row_in_tile) + lane_row
        if not tile_k and _pairs_ok(region, st):
            # lanes l and l ^ 1 hold adjacent rows: one 4-byte read each (the even lane K row k,
            # the odd lane k + 1) and one exchange give both lanes two K values
            even_row = st.simplify(row - lane_row) + pair_row
            return loop("t", run // 2, lambda t: I.call(
                "tl_read_column_pair", I.address_of(regs, reg0 + 2 * t),
                tirx.address_of(tirx.BufferLoad(region.source, index(k0 + 2 * t + odd, even_row))),
                odd), tirx.ForKind.UNROLLED)
        return loop("e", run, lambda e: tirx.BufferStore(
            regs, tirx.BufferLoad(region.source, index(k0 + e, row)), [reg0 + e]), tirx.ForKind.UNROLLED)

    def block(kb):
        body = []
        k0 = kb * k_block + k_lane
        if not a_in_registers:
            body.append(loop("mi", mi_count, lambda mi: load(
                op.A, a_regs, mi * run, wm * (m // m_warp) + mi * s + row_in_tile, k0,
                a_vector, not op.transpose_A), tirx.ForKind.UNROLLED))

        def a_operand(mi, step):
            if a_in_registers:  # the accumulator layout: K step kb's values of tile row mi
                return I.address_of(a_regs, a_layout.local_of(mi * s, kb * k_block))
            return I.address_of(a_regs, mi * run + step * core.operand_values)

        name = helper + ("_ra" if a_in_registers and not core.is_mfma else "")

        def b_load(ni):
            return load(op.B, b_regs, ni * run, wn * (n // n_warp) + ni * s + row_in_tile, k0,
                        b_vector, op.transpose_B)

        def issue(ni):
            return loop("step", steps, lambda step: loop("mi", mi_count, lambda mi: I.call(
                name, I.address_of(c_regs, (mi * ni_count + ni) * core.acc_regs), a_operand(mi, step),
                I.address_of(b_regs, ni * run + step * core.operand_values)), tirx.ForKind.UNROLLED),
                tirx.ForKind.UNROLLED)

        if core.is_mfma:  # B^T rows of tile ni, then its instructions: a B tile dies with its column
            body.append(loop("ni", ni_count, lambda ni: seq([b_load(ni), issue(ni)]), tirx.ForKind.UNROLLED))
        else:
            # WMMA operands are 16 values per lane: left to itself LLVM's scheduler hoists every
            # column's reads (FlashAttention at dim 128 spilled). Fenced columns keep two B tiles
            # live: column ni + 1's reads are issued before column ni's instructions.
            body.append(b_load(0))
            for ni in range(ni_count):
                ahead = [b_load(ni + 1)] if ni + 1 < ni_count else []
                body += ahead + [issue(ni), I.call("tl_sched_barrier")]
        return seq(body)

    stmts = []
    for var, (value, _) in opaque.items():
        stmts.append(tirx.Bind(var, I.call("tl_opaque", value, dtype="int32")))
    if op.clear_accum:
        stmts.append(loop("l", mi_count * ni_count * core.acc_regs, lambda l: tirx.BufferStore(
            c_regs, tirx.const(0, "float32"), [l]), tirx.ForKind.UNROLLED))
    stmts.append(loop("kb", k // k_block, block, tirx.ForKind.UNROLLED))
    return seq(stmts)
