"""T.gemm on sm_90a: wgmma.mma_async from shared memory (or A from registers), fp32 accumulate
(fp16 operands may also accumulate in fp16: the same element layout, two per register).

A warpgroup (4 warps, 128 threads) issues ``wgmma m64nNk16``: 64 rows of C per instruction, N up
to 256. The block's warpgroups split C ``wg_m x wg_n``; each warpgroup covers its ``M/wg_m`` rows
in 64-row slabs and its ``N/wg_n`` columns in instructions of at most 256 columns.

Shared operands live in the 128-byte-swizzle canonical layout (``wgmma_shared_layout``): the stored
``rows x cols`` tile is cut into columns of 128 bytes (64 fp16 values), each a ``rows x 128 B``
block whose 16-byte chunks are XOR-swizzled by ``row % 8``, blocks one after another. That is
exactly what a TMA load with 128-byte swizzle writes for a box of 64 columns, and both operand
majors read it with one descriptor per instruction:

* K-major (A stored M x K, B stored N x K): start at (row0, k0), stride byte offset 1024 (8 rows),
  k0 steps of 16 inside one 128-byte column (+32 bytes);
* MN-major (A stored K x M, B stored K x N; transpose bit set): start at (k0, col0) with col0 a
  multiple of 64, leading byte offset = one block (rows x 128 B), stride byte offset 1024 (8 k-rows).

A K-major tile whose rows are 64 bytes (block_K = 32 for fp16/bf16, 64 for fp8: TileLang's usual
GEMM tiles) takes the 64-byte swizzle instead: rows of 64 bytes one after another, 16-byte chunk
``c`` of row ``i`` stored at ``c ^ (i // 2) % 4`` (what a TMA box of 64-byte rows writes with
CU_TENSOR_MAP_SWIZZLE_64B), descriptor swizzle mode 2, stride byte offset 512 (8 rows), k0 steps of
+32 bytes inside the row (``tile_swizzle``).

The accumulator layout of an m64nN instruction is mma.sync's 16x8 C layout repeated over N/8
column tiles, warp w of the warpgroup owning rows 16w..16w+15 (``wgmma_accumulator_layout``), so
T.Parallel, reductions and the epilogue copy work on it unchanged. Facts checked on the H200 with a
hand-written kernel first (bench/NOTES.md, 2026-11-29).
"""

from __future__ import annotations

from dataclasses import dataclass

import tvm_ffi
from tvm import tirx

from tilelang_core.ir import Gemm
from tilelang_core.layout import LOCAL, THREAD, Digit, Fragment, Layout
from tilelang_core.layout.layout import _xor
from tilelang_core.simt import intrinsics as I
from tilelang_core.simt.lower_gemm_fma import gemm_shape
from tilelang_core.simt.lowering import FRAGMENT, SHARED, dtype, region_index, scope
from tilelang_core.simt.transform.state import seq

from ..layouts import mma_accumulator_layout
from .occupancy import WARPGROUP, widest_wgmma_n

WGMMA_M = 64
ATOM_BYTES = 128  # one swizzle row: 8 chunks of 16 bytes
#: swizzle width (bytes) -> the mode field of a wgmma descriptor (bits 62-63)
DESCRIPTOR_MODE = {128: 1, 64: 2}
DTYPES = {"float16": "f16", "bfloat16": "bf16"}
#: the accumulator types wgmma takes with each 16-bit operand type
ACCUMULATORS = {"float16": ("float32", "float16"), "bfloat16": ("float32",)}
#: 8-bit operands: K-major only, k32 per instruction (QGMMA; e4m3 at 8192^3 on the H200: 1.00x
#: torch._scaled_mm, bench/NOTES.md)
FP8_DTYPES = {"float8_e4m3": "e4m3", "float8_e4m3fn": "e4m3", "float8_e5m2": "e5m2"}


def element_bits(dtype_name: str) -> int:
    """Bits of an element of the types the sm_90a path moves: 16- and 8-bit tiles (fp8 and int8:
    8; an 8-bit tile taken for 16-bit got boxes and swizzles twice its size) and the float32
    tiles TMA adds from (tma_reduce.py)."""
    if dtype_name in ("float32", "int32", "uint32"):
        return 32
    return 8 if dtype_name in FP8_DTYPES or dtype_name in ("int8", "uint8") else 16


def wgmma_k(dtype_name: str) -> int:
    """K of one instruction: 32 bytes of each operand row (16 fp16 values, 32 fp8 values)."""
    return 256 // element_bits(dtype_name)


@dataclass(frozen=True)
class WgmmaPlan:
    wg_m: int
    wg_n: int
    m_wg: int  # rows of C per warpgroup (a multiple of 64)
    n_wg: int  # columns of C per warpgroup
    n_inst: int  # columns per instruction (<= 256)


def atom_cols(bits: int, swizzle: int = ATOM_BYTES) -> int:
    """Columns of one swizzle row (``swizzle`` bytes) of ``bits``-bit elements."""
    return swizzle * 8 // bits


def tile_swizzle(cols: int, bits: int) -> int | None:
    """The swizzle width (bytes) of a ``cols``-wide shared tile: 128 where its rows are whole
    128-byte strips, 64 where a row is exactly 64 bytes (K-major operands only), else None."""
    row_bytes = cols * bits // 8
    return ATOM_BYTES if row_bytes % ATOM_BYTES == 0 else 64 if row_bytes == 64 else None


def wgmma_shared_layout(rows: int, cols: int, bits: int) -> Layout:
    """The swizzled canonical layout of a ``rows x cols`` operand tile (module docstring): the
    128-byte swizzle (bases 1024-byte aligned, a whole 8-row period), or for 64-byte rows the
    64-byte swizzle (bases 512-byte aligned)."""
    vec = 128 // bits  # elements per 16-byte chunk
    if tile_swizzle(cols, bits) == 64:
        def fn64(i, j):
            return i * cols + _xor(j // vec, (i // 2) % 4) * vec + j % vec

        return Layout((rows, cols), fn64, "wgmma_sw64", align_bytes=512)
    atom = atom_cols(bits)

    def fn(i, j):
        chunk = (j % atom) // vec
        return (j // atom) * (rows * atom) + i * atom + _xor(chunk, i % 8) * vec + j % vec

    return Layout((rows, cols), fn, "wgmma_sw128", align_bytes=1024)


def shared_tile(region) -> tuple[int, int] | None:
    """(rows, cols) of the stored 2-D tile behind a shared operand, if it is one."""
    shape = [int(s) for s in region.source.ty.shape]
    return (shape[-2], shape[-1]) if len(shape) >= 2 else None


def _operand_fits(region, bits: int, k_major: bool) -> bool:
    tile = shared_tile(region)
    if tile is None or tile[0] % 8:
        return False
    swizzle = tile_swizzle(tile[1], bits)
    return swizzle == ATOM_BYTES or (swizzle == 64 and k_major)


def _partition(m: int, n: int, num_wg: int, policy: str, mn_major_b: bool, max_n: int):
    # TileLang's order: full_row prefers the most warpgroups along M and falls back to fewer
    # (a 64-row tile on two warpgroups splits N), full_col the reverse; square tries the most rows
    # first too.
    divisors = sorted({d for d in range(1, num_wg + 1) if num_wg % d == 0}, reverse=True)
    for wg_m in (divisors[::-1] if policy == "full_col" else divisors):
        wg_n = num_wg // wg_m
        if m % (wg_m * WGMMA_M) or n % (wg_n * 8):
            continue
        n_wg = n // wg_n
        if mn_major_b and wg_n > 1 and n_wg % 64:
            continue
        chunks = -(-n_wg // max_n)
        if n_wg % chunks or (n_wg // chunks) % 8 or (mn_major_b and chunks > 1 and (n_wg // chunks) % 64):
            continue
        return WgmmaPlan(wg_m, wg_n, m // wg_m, n_wg, n_wg // chunks)
    return None


def plan_wgmma(op: Gemm, arch: str, num_threads: int, disabled: bool = False,
               annotated: dict | None = None) -> WgmmaPlan | None:
    """How this gemm runs on wgmma, or None when it takes the mma.sync path (``explain_wgmma``
    says why)."""
    return explain_wgmma(op, arch, num_threads, disabled, annotated)[0]


def explain_wgmma(op: Gemm, arch: str, num_threads: int, disabled: bool = False,
                  annotated: dict | None = None) -> tuple[WgmmaPlan | None, str]:
    """(plan, "") or (None, the first reason wgmma cannot run this gemm)."""
    if arch != "sm_90a":
        return None, f"{arch} has no wgmma"
    if disabled:
        return None, "tl.disable_wgmma"
    if num_threads % WARPGROUP:
        return None, f"{num_threads} threads are not whole warpgroups of {WARPGROUP}"
    a, b, c = dtype(op.A), dtype(op.B), dtype(op.C)
    if a in FP8_DTYPES and a == b and c == "float32":
        if op.transpose_A or not op.transpose_B or scope(op.A) not in SHARED:
            return None, ("fp8 wgmma reads K-major operands from shared memory only: store A as "
                          "M x K and B as N x K (transpose_B=True)")
    elif a != b or c not in ACCUMULATORS.get(a, ()):
        return None, (f"operands {a}/{b} with a {c} accumulator (wgmma here: fp16/bf16/fp8 into fp32, "
                      f"fp16 into fp16)")
    m, n, k = gemm_shape(op)
    if k % wgmma_k(a):
        return None, f"K={k} is not a multiple of {wgmma_k(a)}"
    if scope(op.B) not in SHARED or scope(op.A) not in SHARED + (FRAGMENT,):
        return None, "B must be in shared memory and A in shared memory or registers"
    for operand, k_major in ((op.A, not op.transpose_A), (op.B, bool(op.transpose_B))):
        if scope(operand) in SHARED:
            name = str(operand.source.name)
            if name in (annotated or {}):
                return None, f"{name} has a T.annotate_layout layout"
            if not _operand_fits(operand, element_bits(a), k_major):
                rows, cols = shared_tile(operand)
                bits = element_bits(a)
                return None, (f"{name} is {rows}x{cols}: the swizzled layouts need rows in multiples of 8 and "
                              f"columns in multiples of {atom_cols(bits)} (128-byte swizzle), or exactly "
                              f"{atom_cols(bits, 64)} when {name} is K-major (64-byte swizzle)")
    a_regs = scope(op.A) == FRAGMENT
    if a_regs and op.transpose_A:
        return None, "a transposed A in registers"
    # A in registers: the most warpgroups along M (each holds only its rows of A); where M is too
    # short for them (MLA decode's 64 heads on two warpgroups), the warpgroups that split N each
    # hold a copy of A (wgmma_operand_layout)
    policy = "full_row" if a_regs else op.policy.value
    # instructions as wide as ptxas can compile with a producer warpgroup beside these threads
    plan = _partition(m, n, num_threads // WARPGROUP, policy, mn_major_b=not op.transpose_B,
                      max_n=widest_wgmma_n(num_threads + WARPGROUP))
    if plan is None:
        return None, f"C {m}x{n} does not split into 64-row warpgroup slabs with policy {policy}"
    return plan, ""


def wgmma_accumulator_layout(m: int, n: int, plan: WgmmaPlan, name: str = "") -> Fragment:
    """Layout of an ``m x n`` fp32 accumulator computed by wgmma with ``plan``. With one 64-row
    slab per warpgroup and no column split it is mma.sync's layout for warps stacked along M, and
    is built as that one, so a fragment shared by an mma.sync gemm and a wgmma gemm (one's result
    feeding the other's A) gets one layout."""
    slabs = plan.m_wg // WGMMA_M
    if slabs == 1 and plan.wg_n == 1:
        return mma_accumulator_layout(m, n, 4 * plan.wg_m, 1, name=name)
    rows = (Digit(plan.wg_m, THREAD, WARPGROUP * plan.wg_n), Digit(slabs, LOCAL, plan.n_wg // 2),
            Digit(4, THREAD, 32), Digit(2, LOCAL, 2), Digit(8, THREAD, 4))
    cols = (Digit(plan.wg_n, THREAD, WARPGROUP), Digit(plan.n_wg // 8, LOCAL, 4),
            Digit(4, THREAD, 1), Digit(2, LOCAL, 1))
    return Fragment((m, n), (rows, cols), name=name)


def wgmma_operand_layout(m: int, k: int, plan: WgmmaPlan, name: str = "") -> Fragment:
    """The registers of an A operand (m x k) of a gemm that runs with ``plan``: each warpgroup's
    rows of A as an accumulator layout with one warpgroup column (the m64k16 A fragment of wgmma
    is the m64n16 accumulator's), the ``plan.wg_n`` warpgroups that split N holding copies."""
    if plan.wg_n == 1:
        return wgmma_accumulator_layout(m, k, WgmmaPlan(plan.wg_m, 1, plan.m_wg, k, k), name=name)
    # wgmma_accumulator_layout's digits for n_wg = k, the warpgroup digit along M stepping over
    # the copies
    rows = (Digit(plan.wg_m, THREAD, WARPGROUP * plan.wg_n), Digit(plan.m_wg // WGMMA_M, LOCAL, k // 2),
            Digit(4, THREAD, 32), Digit(2, LOCAL, 2), Digit(8, THREAD, 4))
    cols = (Digit(k // 8, LOCAL, 4), Digit(4, THREAD, 1), Digit(2, LOCAL, 1))
    return Fragment((m, k), (rows, cols), replica_digits=(Digit(plan.wg_n, THREAD, WARPGROUP),), name=name)


#: gemm options set by the consumer schedule (consumer_schedule.py): WGMMA_PHASE "issue" (fence,
#: wgmma instructions, commit; no wait) or "wait" (wgmma.wait_group WGMMA_PENDING, then the
#: registers are the program's again)
WGMMA_PHASE, WGMMA_PENDING = "tl_wgmma_phase", "tl_wgmma_pending"
#: on a "wait": the fragments gemms still in flight use (comma-separated names): not tied to it
WGMMA_BUSY = "tl_wgmma_busy"
#: gemm option set by zero_fill.py (conditional mask fills): a condition under which this
#: iteration's gemm starts from zero (scale-d 0 on its first k-step) instead of accumulating
WGMMA_CLEAR_IF = "tl_wgmma_clear_if"
#: named barriers: 0 is __syncthreads, 1 the consumers' block barrier, 2 and 3 the ping-pong turns
PINGPONG_BARRIER, PINGPONG_THREADS = 2, 2 * WARPGROUP
#: gemm option set on the gemms of a ping-pong loop: "acquire" (take the turn before issuing),
#: "release" (hand it over after issuing) or "turn" (both)
PINGPONG = "tl_pingpong"


def take_turn(tx):
    """(wait for this warpgroup's turn, hand the turn to the other warpgroup); a gemm that hands
    over does so right after issuing, before waiting for its results."""
    wg = tirx.floordiv(tx, WARPGROUP)
    return (I.call("tl_named_barrier_sync", PINGPONG_BARRIER + wg, PINGPONG_THREADS),
            I.call("tl_named_barrier_arrive", PINGPONG_BARRIER + 1 - wg, PINGPONG_THREADS))


def register_fence(local):
    """An empty asm that reads and writes every register of a per-thread buffer (None where its
    type does not pack into whole 32-bit registers)."""
    count, bits = int(local.ty.shape[0]), tvm_ffi.dtype(str(local.ty.dtype)).bits
    if str(local.ty.dtype) == "float32":
        return I.call(f"tl_wgmma_fence_operand<{count}>", I.address_of(local, 0))
    if (count * bits) % 32 or bits > 32:
        return None
    return I.call(f"tl_wgmma_fence_regs<{count * bits // 32}>", I.address_of(local, 0))


def lower_gemm_wgmma(op: Gemm, st, plan: WgmmaPlan, proxy_fence: bool = True):
    m, n, k = gemm_shape(op)
    in_dtype = {**DTYPES, **FP8_DTYPES}[dtype(op.A)]
    kstep = wgmma_k(dtype(op.A))
    wg = tirx.floordiv(st.thread_var, WARPGROUP)
    gm, gn = tirx.floordiv(wg, plan.wg_n), tirx.floormod(wg, plan.wg_n)
    slabs, chunks = plan.m_wg // WGMMA_M, plan.n_wg // plan.n_inst
    c_regs = st.local_buffer(op.C.source)
    a_regs = scope(op.A) == FRAGMENT
    a_local = st.local_buffer(op.A.source) if a_regs else None

    def address(region, r, c):
        return tirx.address_of(tirx.BufferLoad(region.source, region_index(region, [st.simplify(r), st.simplify(c)])))

    def block_bytes(region):
        return shared_tile(region)[0] * ATOM_BYTES

    def k_major_desc(region, row0, kk):
        """8-row groups 1024 bytes apart with the 128-byte swizzle, 512 with the 64-byte one."""
        swizzle = tile_swizzle(shared_tile(region)[1], element_bits(dtype(region)))
        name = "tl_wgmma_desc" if swizzle == ATOM_BYTES else f"tl_wgmma_desc<{DESCRIPTOR_MODE[swizzle]}>"
        return I.call(name, address(region, row0, kk * kstep), 16, 8 * swizzle, dtype="uint64")

    def desc_a(sl, kk):
        row0 = gm * plan.m_wg + sl * WGMMA_M
        if not op.transpose_A:  # stored M x K: K-major
            return k_major_desc(op.A, row0, kk)
        return I.call("tl_wgmma_desc", address(op.A, kk * kstep, row0), block_bytes(op.A), 1024, dtype="uint64")

    def desc_b(c, kk):
        col0 = gn * plan.n_wg + c * plan.n_inst
        if op.transpose_B:  # stored N x K: K-major
            return k_major_desc(op.B, col0, kk)
        return I.call("tl_wgmma_desc", address(op.B, kk * kstep, col0), block_bytes(op.B), 1024, dtype="uint64")

    ta, tb = int(bool(op.transpose_A)), int(not op.transpose_B)
    # an fp16 accumulator holds the fp32 one's elements in the same order, two to a register, so
    # an instruction's part of it starts at the same element
    acc_kind = "_f16acc" if dtype(op.C) == "float16" else ""

    def issue(sl, c, kk):
        acc = I.address_of(c_regs, (sl * chunks + c) * (plan.n_inst // 2))
        accumulate = tirx.const(0 if (op.clear_accum and kk == 0) else 1, "int32")
        if kk == 0 and op.options.get(WGMMA_CLEAR_IF) is not None:
            accumulate = tirx.Select(op.options[WGMMA_CLEAR_IF], accumulate * 0, accumulate)
        if a_regs:
            a_op = I.address_of(a_local, sl * (k // 2) + kk * 8)
            return I.call(f"tl_wgmma_rs_{in_dtype}_n{plan.n_inst}{acc_kind}<{tb}>", acc, a_op, desc_b(c, kk),
                          accumulate)
        return I.call(f"tl_wgmma_ss_{in_dtype}_n{plan.n_inst}{acc_kind}<{ta}, {tb}>", acc, desc_a(sl, kk),
                      desc_b(c, kk), accumulate)

    c_fence = register_fence(c_regs)
    # A's registers are read asynchronously too: tied to the issue and to the wait
    a_fence = register_fence(a_local) if a_regs else None
    phase = op.options.get(WGMMA_PHASE)
    if phase == "wait":
        # Every other register fragment is tied to the point before the wait, so the work the
        # program placed between issue and wait (the softmax) is not sunk below it by nvcc.
        busy = set(str(op.options.get(WGMMA_BUSY, "")).split(","))
        before = [register_fence(local) for frag, local in st.locals.items()
                  if str(frag.name) not in busy and not frag.same_as(op.C.source) and not frag.same_as(op.A.source)]
        # (the accumulator of a batch still in flight, the same gemm's next k-tile, stays untied)
        mine = [] if str(op.C.source.name) in busy else [c_fence, a_fence]
        return seq(before + [I.call(f"tl_wgmma_wait<{int(op.options[WGMMA_PENDING])}>")] + mine)
    steps = [issue(sl, c, kk) for kk in range(k // kstep) for sl in range(slabs) for c in range(chunks)]
    # In a ping-pong loop (pingpong.py) the warpgroups take turns issuing; the results are
    # awaited after the turn is handed over, so the other warpgroup's wgmma queue behind ours.
    my_turn, hand_over = take_turn(st.thread_var) if op.options.get(PINGPONG) else (None, None)
    if op.options.get(PINGPONG) == "release":  # the turn was taken by the gemm issued before
        my_turn = None
    elif op.options.get(PINGPONG) == "acquire":  # the turn is kept until the next issue's release
        hand_over = None
    return seq([
        # operands written through the generic proxy (st.shared, cp.async) -> visible to wgmma
        I.call("tl_fence_proxy_async") if proxy_fence else None,
        c_fence,
        a_fence if phase == "issue" else None,
        my_turn,
        I.call("tl_wgmma_fence"),
        *steps,
        I.call("tl_wgmma_commit"),
        hand_over,
        *([] if phase == "issue" else [I.call("tl_wgmma_wait<0>"), c_fence]),
    ])


__all__ = ["WGMMA_BUSY", "WGMMA_PENDING", "WGMMA_PHASE", "WgmmaPlan", "lower_gemm_wgmma", "plan_wgmma", "wgmma_operand_layout",
           "tile_swizzle", "wgmma_accumulator_layout", "wgmma_shared_layout"]
