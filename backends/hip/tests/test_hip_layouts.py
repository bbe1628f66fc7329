"""MFMA/WMMA fragment layouts against the ISA operand tables, the A/B swap, and LDS banks."""

import itertools

import pytest

from tilelang_core.layout import make_swizzled_layout
from tilelang_hip.layouts import MFMA16, MFMA32, WMMA16, accumulator_layout, instruction_layouts


def isa_mfma(size, k):  # CDNA3 ISA, MFMA operand layouts (the AMD Matrix Instruction Calculator)
    groups = 64 // size
    a = {(lane, item): (lane % size, 4 * (lane // size) + item) for lane in range(64) for item in range(4)}
    b = {key: (col_k, row) for key, (row, col_k) in a.items()}   # B[k][j]: lane j + S * (k // 4)
    d = {(lane, r): (4 * groups * (r // 4) + 4 * (lane // size) + r % 4, lane % size)
         for lane in range(64) for r in range(size * size // 64)}
    return a, b, d


def isa_wmma():  # RDNA3 ISA, WMMA 16x16x16 f16 wave32 (lanes 16-31 repeat A and B)
    a = {(lane, item): (lane % 16, item) for lane in range(32) for item in range(16)}
    b = {(lane, item): (item, lane % 16) for lane in range(32) for item in range(16)}
    d = {(lane, r): (2 * r + lane // 16, lane % 16) for lane in range(32) for r in range(8)}
    return a, b, d


def mapping(fragment, threads, regs):
    return {(t, r): tuple(int(x) for x in fragment.index_of(t, r)) for t in range(threads) for r in range(regs)}


@pytest.mark.parametrize("core,tables", [(MFMA16, isa_mfma(16, 16)), (MFMA32, isa_mfma(32, 8)), (WMMA16, isa_wmma())])
def test_instruction_layouts_match_the_isa_tables(core, tables):
    ours = instruction_layouts(core)
    for (name, table) in zip("ABD", tables):
        fragment = ours[name]
        regs = max(r for _, r in table) + 1
        assert mapping(fragment, core.wave, regs) == table, f"{core.name} operand {name}"


@pytest.mark.parametrize("core", [MFMA16, MFMA32, WMMA16])
def test_swapped_accumulator_is_the_transpose_of_d(core):
    """The helpers issue B^T A^T: the C tile a lane holds is the instruction's D, transposed."""
    d = instruction_layouts(core)["D"]
    c = accumulator_layout(core, core.size, core.size)
    for lane, r in itertools.product(range(core.wave), range(core.acc_regs)):
        i, j = (int(x) for x in d.index_of(lane, r))
        assert [int(x) for x in c.index_of(lane, r)] == [j, i]


@pytest.mark.parametrize("core", [MFMA16, MFMA32])
def test_mfma_accumulator_rows_are_the_next_gemms_a_operand(core):
    """Lane l holds C[l % S][4 g + r (+ 4 G q)]: exactly A[l % S][k] of the K steps, in order."""
    c = accumulator_layout(core, core.size, core.size)
    a = instruction_layouts(core)["A"]
    for lane in range(64):
        for step in range(core.size // core.k):
            for item in range(4):
                assert [int(x) for x in c.index_of(lane, step * 4 + item)] == \
                    [int(a.index_of(lane, item)[0]), step * core.k + int(a.index_of(lane, item)[1])]


def test_block_layout_tiles_waves_and_instructions():
    c = accumulator_layout(MFMA16, 128, 64, m_warp=2, n_warp=2)
    assert (c.num_threads, c.local_size) == (256, 32)
    assert c.thread_of(64, 0) == 128 and c.thread_of(0, 32) == 64   # wave (1, 0) and (0, 1)
    w = accumulator_layout(WMMA16, 64, 64, m_warp=4, n_warp=1)
    assert (w.num_threads, w.local_size) == (128, 32)


@pytest.mark.parametrize("cols", [32, 64, 128])
def test_16_byte_operand_reads_hit_distinct_banks(cols):
    """ds_read_b128 serves 8 lanes per pass (128 bytes over 32 4-byte banks): the MFMA A reads of
    lanes 0-7 (rows 0-7, the same 8 K values) must not share a bank under the kit's swizzle."""
    layout = make_swizzled_layout(64, cols, 16)
    for k0 in range(0, cols, 8):
        for rows in (range(0, 8), range(8, 16)):
            banks = set()
            for row in rows:
                start = layout.offset(row, k0) * 2
                banks.update((start // 4 + w) % 32 for w in range(4))
            assert len(banks) == 32, f"{cols} columns, k {k0}: bank conflict"
