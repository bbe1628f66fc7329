"""The simulator enforces placement, sizes, alignment, formats and pipe synchronization."""

import numpy as np
import pytest
import torch

from ascend_harness import example, lower_program, rel_err, simulate
from tilelang_ascend import isa
from tilelang_ascend.sim_memory import SimulatorError, from_fractal, to_fractal
from test_ascend_checker import remove_first


def softmax_case():
    softmax = example("softmax/softmax.py")
    return lower_program(softmax.softmax.get_tir(37, 100)), torch.randn(37, 100, dtype=torch.float16)


def gemm_case():
    gemm = example("gemm/gemm.py")
    a, b = torch.randn(100, 70, dtype=torch.float16), torch.randn(70, 72, dtype=torch.float16)
    return lower_program(gemm.gemm.get_tir(100, 72, 70)), a, b


@pytest.mark.parametrize("fmt, mem, dtype", [("NZ", "L1", "float16"), ("ZZ", "L0A", "float16"),
                                             ("ZN", "L0B", "int8"), ("NZ", "L0C", "float32")])
def test_fractal_formats_round_trip_and_really_permute(fmt, mem, dtype):
    mat = np.arange(40 * 50).reshape(40, 50).astype(np.float32)
    flat = to_fractal(mat, fmt, mem, dtype)
    assert not np.array_equal(flat[:50], mat[0])  # not row-major
    np.testing.assert_array_equal(from_fractal(flat, fmt, mem, dtype, 40, 50), mat)


def test_misaligned_buffer_is_refused():
    prog, x = softmax_case()
    buf = next(b for b in prog.buffers if b.name == "x")
    buf.offset += 16
    with pytest.raises(SimulatorError, match="not 32-byte aligned"):
        simulate(None, x, out_idx=[-1], program=prog)


def test_misaligned_vector_row_is_refused():
    prog, x = softmax_case()
    instr = next(i for i in isa.instructions(prog.vec) if isinstance(i, isa.VReduce))
    instr.src.col = 4  # 16 bytes into a row
    with pytest.raises(SimulatorError, match="misaligned|outside buffer"):
        simulate(None, x, out_idx=[-1], program=prog)


def test_access_past_the_memory_is_out_of_memory():
    prog, x = softmax_case()
    buf = next(b for b in prog.buffers if b.name == "x")
    buf.offset = 256 * 1024 - 1024  # the last KiB of a 256 KiB UB; x needs 3.3 KiB
    with pytest.raises(SimulatorError, match="out of memory"):
        simulate(None, x, out_idx=[-1], program=prog)


def test_tile_outside_its_buffer_is_refused():
    prog, x = softmax_case()
    instr = next(i for i in isa.instructions(prog.vec) if isinstance(i, isa.VReduce))
    instr.src.rows = 9  # x has 8 rows
    instr.dst.cols = 9
    with pytest.raises(SimulatorError, match="outside buffer 'x'"):
        simulate(None, x, out_idx=[-1], program=prog)


def test_operand_in_the_wrong_memory_is_refused():
    prog, a, b = gemm_case()
    mmad = next(i for i in isa.instructions(prog.cube) if isinstance(i, isa.Mmad))
    l1 = next(x for x in prog.buffers if x.mem == "L1")
    mmad.a = isa.Mat(l1, rows=64, cols=32)
    with pytest.raises(SimulatorError, match="needs its operand in L0A"):
        simulate(None, a, b, out_idx=[-1], program=prog)


def test_read_without_covering_wait_is_a_sync_error():
    prog, a, b = gemm_case()
    remove_first(prog.cube, lambda s: isinstance(s, isa.WaitFlag) and s.src == "MTE1" and s.dst == "M")
    with pytest.raises(SimulatorError, match="cube pipe M reads after a write of 'l0a_.*' by cube pipe MTE1"):
        simulate(None, a, b, out_idx=[-1], program=prog)


def test_loop_carried_overwrite_without_wait_is_a_sync_error():
    prog, a, b = gemm_case()
    for kind in (isa.SetFlag, isa.WaitFlag):
        remove_first(prog.cube, lambda s: isinstance(s, kind) and s.src == "M" and s.dst == "MTE1")
    with pytest.raises(SimulatorError, match="MTE1 writes while a read is in flight of 'l0a_"):
        simulate(None, a, b, out_idx=[-1], program=prog)


def test_setting_an_event_that_is_still_set_is_an_error():
    prog, a, b = gemm_case()
    remove_first(prog.cube, lambda s: isinstance(s, isa.WaitFlag) and s.src == "M" and s.dst == "MTE1")
    with pytest.raises(SimulatorError, match="event 0 on the cube core is set again before its wait"):
        simulate(None, a, b, out_idx=[-1], program=prog)


def test_double_buffered_load_must_wait_for_its_stage_to_be_released():
    prog, a, b = gemm_case()
    # drop the in-loop release of stage (ko % 2) of A_shared: the refill two iterations later
    # has nothing to wait for
    remove_first(prog.cube, lambda s: isinstance(s, isa.SetFlag) and not isinstance(s.event, int))
    with pytest.raises(SimulatorError, match="wait_flag MTE1->MTE2 event 1 .* no set_flag"):
        simulate(None, a, b, out_idx=[-1], program=prog)


def test_wait_without_set_would_hang():
    prog, a, b = gemm_case()
    remove_first(prog.cube, lambda s: isinstance(s, isa.SetFlag) and s.src == "MTE2")
    with pytest.raises(SimulatorError, match="wait_flag MTE2->MTE1 .* no set_flag"):
        simulate(None, a, b, out_idx=[-1], program=prog)


def test_cross_core_wait_nobody_sets_deadlocks():
    fa = example("attention/flash_attention.py")
    prog = lower_program(fa.flash_attention.get_tir(1, 1, 64, 16, False, block_M=32, block_N=32))
    while remove_first(prog.cube, lambda s: isinstance(s, isa.CrossSet) and s.flag == 0):
        pass
    q, k, v = (torch.randn(1, 64, 1, 16, dtype=torch.float16) for _ in range(3))
    with pytest.raises(SimulatorError, match="deadlocks"):
        simulate(None, q, k, v, out_idx=[3], program=prog)


def test_wrong_format_conversion_gives_wrong_numbers():
    prog, a, b = gemm_case()
    load = next(i for i in isa.instructions(prog.cube) if isinstance(i, isa.LoadL1ToL0))
    load.transpose = True  # a 64x32 block transposed no longer fits its 64x32 L0A matrix
    with pytest.raises(SimulatorError, match="writes a \\(32, 64\\) matrix"):
        simulate(None, a, b, out_idx=[-1], program=prog)


def test_simulation_counts_instructions_per_pipe():
    prog, a, b = gemm_case()
    stats = []
    c = simulate(None, a, b, out_idx=[-1], program=prog, stats=stats)
    assert rel_err(c, a.double() @ b.double()) < 1e-3
    counts = stats[0].instructions
    assert counts["cube.M"] >= 4 * 3 and counts["cube.FIX"] >= 4 and "vec.V" not in counts


def test_ragged_copy_without_zero_fill_reads_stale_data():
    # K = 70 in tiles of 32: the last tile has 6 valid columns and lands in the stage that held
    # tile 0; without InitL1 the stale 26 columns enter the product
    prog, a, b = gemm_case()
    while remove_first(prog.cube, lambda s: isinstance(s, isa.InitL1)):
        pass
    c = simulate(None, a, b, out_idx=[-1], program=prog)
    assert rel_err(c, a.double() @ b.double()) > 0.1
