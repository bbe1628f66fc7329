"""AMD matrix-core fragment layouts: MFMA (CDNA, wave64) and WMMA (RDNA3, wave32), and how a
block's waves split a gemm.

Every instruction is issued with A and B swapped (``D^T = B^T A^T``): each lane then holds a row
of C instead of a column, so a lane's accumulator values are consecutive columns (vector stores),
a row reduction stays inside a lane group, and an accumulator converted to fp16 is already in the
A-operand order of the next gemm (FlashAttention's P @ V from registers).

Instruction facts (AMD CDNA3 ISA "Dependent arithmetic, MFMA"; RDNA3 ISA "WMMA"; the AMD Matrix
Instruction Calculator): with ``S`` the instruction's M = N and ``G = 64 / S`` lane groups,

    MFMA f32_SxSxK f16/bf16 (S=16: K=16; S=32: K=8), wave64, operands 4 values per lane:
        A[i][k] (S x K):  lane i + S * (k // 4),   item k % 4
        B[k][j] (K x S):  lane j + S * (k // 4),   item k % 4
        D[i][j] (S x S):  lane j + S * ((i // 4) % G),  register (i // (4 G)) * 4 + i % 4
    WMMA f32_16x16x16 f16/bf16 (gfx11, wave32), operands 16 values per lane:
        A[i][k]: lane i (and i + 16, a copy), item k;  B[k][j]: lane j (and j + 16), item k
        D[i][j]: lane j + 16 * (i % 2), register i // 2

Swapped, C[m][n] = D[n][m], so lane ``l`` holds row ``m = l % S`` and the columns

    MFMA:  n = 4 G q + 4 g + r   (g = l // S, register 4 q + r)
    WMMA:  n = 2 v + g           (g = l // 16, register v)

and an operand lane holds row ``l % S`` (of A, or of B^T) and ``k = 4 g + i`` (MFMA) or all 16 k
(WMMA). A block tiles these over waves (``m_warp x n_warp``, wave id = wm * n_warp + wn) and each
wave's sub-tiles (``MI x NI`` instructions; registers (mi * NI + ni) * R + r, R = S * S / wave).

Example::

    >>> c = accumulator_layout(MFMA16, 128, 128, m_warp=2, n_warp=2)
    >>> c.num_threads, c.local_size
    (256, 64)
"""

from __future__ import annotations

from dataclasses import dataclass

from tilelang_core.errors import LayoutError
from tilelang_core.layout import LOCAL, THREAD, Digit, Fragment
from tilelang_core.simt.warp_split import warp_partition


@dataclass(frozen=True)
class MatrixCore:
    """One AMD matrix instruction family as the gemm lowering uses it (see the module docstring).

    ``size``: S (the instruction's M = N); ``k``: K per instruction; ``wave``: lanes;
    ``cols_per_group``: consecutive accumulator columns a lane holds per lane group (4 for MFMA,
    1 for WMMA); ``helpers``: operand dtype -> prelude helper (intrinsics.py).
    """

    name: str
    size: int
    k: int
    wave: int
    cols_per_group: int
    helpers: tuple

    @property
    def groups(self) -> int:
        """Lane groups: lanes ``l`` with the same ``l % S`` hold the same row."""
        return self.wave // self.size

    @property
    def acc_regs(self) -> int:
        return self.size * self.size // self.wave

    @property
    def operand_values(self) -> int:
        """Operand values per lane and instruction (4 for MFMA, 16 for WMMA)."""
        return self.size * self.k // self.wave if self.is_mfma else self.k

    @property
    def is_mfma(self) -> bool:
        return self.name.startswith("mfma")

    def helper(self, dtype: str) -> str | None:
        return dict(self.helpers).get(dtype)


MFMA16 = MatrixCore("mfma_16x16x16", 16, 16, 64, 4, (
    ("float16", "tl_mfma_f32_16x16x16_f16"), ("bfloat16", "tl_mfma_f32_16x16x16_bf16")))
MFMA32 = MatrixCore("mfma_32x32x8", 32, 8, 64, 4, (
    ("float16", "tl_mfma_f32_32x32x8_f16"), ("bfloat16", "tl_mfma_f32_32x32x8_bf16")))
WMMA16 = MatrixCore("wmma_16x16x16", 16, 16, 32, 1, (
    ("float16", "tl_wmma_f32_16x16x16_f16"), ("bfloat16", "tl_wmma_f32_16x16x16_bf16")))

CORES = {core.name: core for core in (MFMA16, MFMA32, WMMA16)}


def tile_col_digits(core: MatrixCore) -> tuple[Digit, ...]:
    """The column digits of one instruction's (swapped) accumulator tile, register stride 1."""
    c, g, s = core.cols_per_group, core.groups, core.size
    return (Digit(s // (c * g), LOCAL, c), Digit(g, THREAD, s), Digit(c, LOCAL, 1))


def accumulator_layout(core: MatrixCore, m: int, n: int, m_warp: int = 1, n_warp: int = 1,
                       name: str = "") -> Fragment:
    """Layout of an ``m x n`` fp32 accumulator computed by ``m_warp x n_warp`` waves of ``core``
    instructions (also the layout of a register A operand: n = K, n_warp = 1)."""
    s, wave = core.size, core.wave
    if m % (m_warp * s) or n % (n_warp * s):
        raise LayoutError(f"accumulator {name} {m}x{n} does not tile over {m_warp}x{n_warp} waves "
                          f"of {s}x{s} {core.name} instructions")
    mi, ni, regs = m // m_warp // s, n // n_warp // s, core.acc_regs
    rows = (Digit(m_warp, THREAD, n_warp * wave), Digit(mi, LOCAL, ni * regs), Digit(s, THREAD, 1))
    cols = (Digit(n_warp, THREAD, wave), Digit(ni, LOCAL, regs)) + \
        tuple(Digit(d.extent, d.space, d.stride) for d in tile_col_digits(core))
    return Fragment((m, n), (rows, cols), name=name)


def instruction_layouts(core: MatrixCore) -> dict[str, Fragment]:
    """One wave's operands and accumulator for one instruction, as the hardware sees them (not
    swapped): A (S x K), B (K x S) and D (S x S), for checking against the ISA tables."""
    s, k, g = core.size, core.k, core.groups
    if core.is_mfma:
        a = Fragment((s, k), ((Digit(s, THREAD, 1),), (Digit(g, THREAD, s), Digit(4, LOCAL, 1))), name="A")
        b = Fragment((k, s), ((Digit(g, THREAD, s), Digit(4, LOCAL, 1)), (Digit(s, THREAD, 1),)), name="B")
        d_rows = (Digit(s // (4 * g), LOCAL, 4), Digit(g, THREAD, s), Digit(4, LOCAL, 1))
    else:
        a = Fragment((s, k), ((Digit(s, THREAD, 1),), (Digit(k, LOCAL, 1),)),
                     replica_digits=(Digit(g, THREAD, s),), name="A")
        b = Fragment((k, s), ((Digit(k, LOCAL, 1),), (Digit(s, THREAD, 1),)),
                     replica_digits=(Digit(g, THREAD, s),), name="B")
        d_rows = (Digit(s // g, LOCAL, 1), Digit(g, THREAD, s))
    d = Fragment((s, s), (d_rows, (Digit(s, THREAD, 1),)), name="D")
    return {"A": a, "B": b, "D": d}


def wave_partition(core: MatrixCore, m: int, n: int, num_waves: int, policy: str) -> tuple[int, int]:
    return warp_partition(m, n, num_waves, policy, tile_m=core.size, tile_n=core.size)
