"""CUDA fragment layouts: mma.sync m16n8k16 operands and accumulators, and the gemm warp split.

The per-instruction layouts follow the PTX ISA ("Matrix Fragments for mma.m16n8k16", fp16/bf16):
with ``group = lane // 4`` and ``tig = lane % 4``,

    C/D (16x8, f32):  c[r]  at row group + 8*(r//2),           col 2*tig + r%2
    A   (16x16):      a[r]  at row group + 8*((r//2)%2),       col 2*tig + r%2 + 8*(r//4)
    B   (16x8, k x n): b[r] at row(k) 2*tig + r%2 + 8*(r//2), col(n) group

The other mma.sync shapes keep this register structure, counted in 32-bit registers: A is four
registers (rows group, group+8, then the same rows K/2 further), B two, each holding ``p = 32 /
bits`` consecutive k of one row (column of B). With ``p`` elements per register,

    A   (16 x 8p):    a[r]  at row group + 8*((r//p)%2),       col p*tig + r%p + 4p*(r//2p)
    B   (8p x 8):     b[r]  at row(k) p*tig + r%p + 4p*(r//p), col(n) group

which is "Matrix Fragments for mma.m16n8k8" (.tf32, p = 1) and "for mma.m16n8k32" (.s8/.u8,
p = 4); C/D is the same 16x8 layout for all of them (f32 or s32).

A block's accumulator tile tiles these over warps (``m_warp x n_warp``, warp id = wm * n_warp + wn)
and over each warp's sub-tiles (``MI x NI`` instructions; register index (mi * NI + ni) * 4 + r).

Example::

    >>> c = mma_accumulator_layout(128, 128, m_warp=2, n_warp=2)
    >>> c.num_threads, c.local_size
    (128, 128)
"""

from __future__ import annotations

from tilelang_core.errors import LayoutError
from tilelang_core.layout import LOCAL, THREAD, Digit, Fragment
from tilelang_core.simt.warp_split import warp_partition as split

MMA_M, MMA_N, MMA_K = 16, 8, 16
WARP = 32


def mma_accumulator_layout(m: int, n: int, m_warp: int = 1, n_warp: int = 1,
                           name: str = "") -> Fragment:
    """Layout of an ``m x n`` fp32 accumulator computed by ``m_warp x n_warp`` warps."""
    if m % (m_warp * MMA_M) or n % (n_warp * MMA_N):
        raise LayoutError(f"accumulator {name or ''} {m}x{n} does not tile over {m_warp}x{n_warp} warps "
                          f"of {MMA_M}x{MMA_N} mma.sync instructions")
    mi, ni = m // m_warp // MMA_M, n // n_warp // MMA_N
    rows = (Digit(m_warp, THREAD, n_warp * WARP), Digit(mi, LOCAL, ni * 4),
            Digit(2, LOCAL, 2), Digit(8, THREAD, 4))
    cols = (Digit(n_warp, THREAD, WARP), Digit(ni, LOCAL, 4),
            Digit(4, THREAD, 1), Digit(2, LOCAL, 1))
    return Fragment((m, n), (rows, cols), name=name)


def _digits(*digits: Digit) -> tuple[Digit, ...]:
    return tuple(d for d in digits if d.extent > 1)  # tf32 holds one element per register


def mma_a_layout(bits: int = 16) -> Fragment:
    """One warp's A operand of mma.sync for ``bits``-wide elements (16 x 256/bits, row = m,
    col = k): m16n8k16 for 16 bits, m16n8k8 (tf32) for 32, m16n8k32 for 8."""
    p = 32 // bits
    rows = (Digit(2, LOCAL, p), Digit(8, THREAD, 4))
    cols = _digits(Digit(2, LOCAL, 2 * p), Digit(4, THREAD, 1), Digit(p, LOCAL, 1))
    return Fragment((16, 8 * p), (rows, cols), name="mma_A")


def mma_a_operand_layout(m: int, k: int, m_warp: int, n_warp: int, bits: int, name: str = "") -> Fragment:
    """Registers holding a whole ``m x k`` gemm A operand of ``bits``-wide elements computed by
    ``m_warp x n_warp`` warps: each warp's rows as mma.sync A fragments (mma_a_layout), tile
    (mi, kk) in its registers ``[(mi * K/k_instr + kk) * per_row, ... + per_row)``; the
    ``n_warp`` warps of one row block each hold a copy (replicas), as each needs all of its rows.
    For 16-bit elements and one warp column this is the accumulator layout of ``m x k``."""
    p = 32 // bits
    k_instr, per_row = 8 * p, 4 * p
    if m % (m_warp * MMA_M) or k % k_instr:
        raise LayoutError(f"gemm operand {name or ''} {m}x{k} does not tile over {m_warp} warps of "
                          f"{MMA_M}x{k_instr} mma.sync A fragments")
    mi, ks = m // m_warp // MMA_M, k // k_instr
    rows = (Digit(m_warp, THREAD, n_warp * WARP), Digit(mi, LOCAL, ks * per_row),
            Digit(2, LOCAL, p), Digit(8, THREAD, 4))
    cols = _digits(Digit(ks, LOCAL, per_row), Digit(2, LOCAL, 2 * p), Digit(4, THREAD, 1), Digit(p, LOCAL, 1))
    replicate = (Digit(n_warp, THREAD, WARP),) if n_warp > 1 else ()
    return Fragment((m, k), (rows, cols), replica_digits=replicate, name=name)


def mma_b_layout(bits: int = 16) -> Fragment:
    """One warp's B operand of mma.sync for ``bits``-wide elements (256/bits x 8, row = k,
    col = n)."""
    p = 32 // bits
    rows = _digits(Digit(2, LOCAL, p), Digit(4, THREAD, 1), Digit(p, LOCAL, 1))
    cols = (Digit(8, THREAD, 4),)
    return Fragment((8 * p, 8), (rows, cols), name="mma_B")


def warp_partition(m: int, n: int, num_warps: int, policy: str = "square") -> tuple[int, int]:
    """(m_warp, n_warp) for an ``m x n`` accumulator of m16n8 instructions (the SIMT kit's split,
    tilelang_core.simt.warp_split: full_row, full_col, or closest to square)."""
    return split(m, n, num_warps, policy, tile_m=MMA_M, tile_n=MMA_N)
