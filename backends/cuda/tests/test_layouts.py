"""CUDA fragment layouts against the PTX ISA tables for mma.m16n8k16 (fp16/bf16, f32 accumulate),
mma.m16n8k8 (.tf32) and mma.m16n8k32 (.s8/.u8)."""

import itertools

import pytest

from tilelang_core.errors import LayoutError
from tilelang_cuda.layouts import (mma_a_layout, mma_accumulator_layout, mma_b_layout,
                                   warp_partition)


def ptx_c(lane, r):  # PTX ISA 9.7.14.5.8, figure "MMA .m16n8k16 fragment layout for C/D"
    group, tig = lane // 4, lane % 4
    return group + 8 * (r // 2), tig * 2 + (r & 1)


def ptx_a(lane, r):  # figure "MMA .m16n8k16 fragment layout for matrix A" (.f16/.bf16)
    group, tig = lane // 4, lane % 4
    row = group + 8 * ((r // 2) % 2)
    col = tig * 2 + (r & 1) + 8 * (r // 4)
    return row, col


def ptx_b(lane, r):  # figure "MMA .m16n8k16 fragment layout for matrix B" (.f16/.bf16)
    group, tig = lane // 4, lane % 4
    return tig * 2 + (r & 1) + 8 * (r // 2), group


def ptx_a_tf32(lane, r):  # "Matrix Fragments for mma.m16n8k8", A (.tf32): a0..a3
    group, tig = lane // 4, lane % 4
    return group + 8 * (r % 2), tig + 4 * (r // 2)


def ptx_b_tf32(lane, r):  # B (.tf32): b0 at (k = tig, n = group), b1 at (tig + 4, group)
    group, tig = lane // 4, lane % 4
    return tig + 4 * r, group


def ptx_a_s8(lane, r):  # "Matrix Fragments for mma.m16n8k32", A (.s8/.u8): a0..a15
    group, tig = lane // 4, lane % 4
    row = group if r < 4 or 8 <= r < 12 else group + 8
    col = tig * 4 + (r & 3) + (16 if r >= 8 else 0)
    return row, col


def ptx_b_s8(lane, r):  # B (.s8/.u8): b0..b7
    group, tig = lane // 4, lane % 4
    return tig * 4 + (r & 3) + (16 if r >= 4 else 0), group


@pytest.mark.parametrize("layout,table,regs", [(mma_accumulator_layout(16, 8), ptx_c, 4),
                                               (mma_a_layout(), ptx_a, 8), (mma_b_layout(), ptx_b, 4),
                                               (mma_a_layout(32), ptx_a_tf32, 4), (mma_b_layout(32), ptx_b_tf32, 2),
                                               (mma_a_layout(8), ptx_a_s8, 16), (mma_b_layout(8), ptx_b_s8, 8)])
def test_single_instruction_layouts_match_ptx(layout, table, regs):
    assert layout.num_threads == 32 and layout.local_size == regs
    for lane, r in itertools.product(range(32), range(regs)):
        element = table(lane, r)
        assert tuple(layout.index_of(lane, r)) == element
        assert (layout.thread_of(*element), layout.local_of(*element)) == (lane, r)


def test_block_accumulator_tiles_warps_and_instructions():
    c = mma_accumulator_layout(128, 128, m_warp=2, n_warp=2)
    assert (c.num_threads, c.local_size) == (128, 128)
    # warp 3 = (wm 1, wn 1) holds the bottom-right 64x64; its instruction (mi, ni) = (1, 2)
    # register base is (1 * 8 + 2) * 4
    lane, r = 5, 3
    row, col = ptx_c(lane, r)
    element = (64 + 16 + row, 64 + 16 + col)
    assert c.thread_of(*element) == 3 * 32 + lane
    assert c.local_of(*element) == (1 * 8 + 2) * 4 + r


@pytest.mark.parametrize("m,n,warps,policy,expected", [
    (128, 128, 4, "square", (2, 2)), (128, 128, 4, "full_row", (4, 1)), (128, 128, 4, "full_col", (1, 4)),
    (64, 256, 8, "square", (2, 4)), (16, 128, 4, "square", (1, 4)),
    # TileLang's fallback: full_row with too few rows for every warp puts the rest along N
    # (DeepSeek's sparse MLA: 64x64 on 8 warps), full_col the same with columns
    (64, 64, 8, "full_row", (4, 2)), (32, 128, 4, "full_row", (2, 2)), (16, 128, 4, "full_row", (1, 4)),
    (128, 16, 4, "full_col", (2, 2))])
def test_warp_partition(m, n, warps, policy, expected):
    assert warp_partition(m, n, warps, policy) == expected


def test_warp_partition_that_cannot_fit_says_what_to_change():
    with pytest.raises(LayoutError, match="full_row"):
        warp_partition(8, 128, 4, "full_row")
