"""Lowering decisions: placement, multi-buffering, sync patterns, the dialect, and the errors for
what cannot become Vector code."""

import pytest
import torch

import ascend_kernels as K
from ascend_harness import example, lower_program, rel_err, simulate
from tilelang_ascend import isa
from tilelang_ascend.transform.lower_to_isa import ASCEND_RULES
from tilelang_core.errors import LoweringError


def buffers(prog):
    return {b.name: b for b in prog.buffers}


def flags(stream):
    return [(s.src, s.dst) for s in isa.instructions(stream) if isinstance(s, isa.SetFlag)]


def test_gemm_places_operands_in_l1_double_buffered_and_accumulates_in_l0c():
    prog = lower_program(example("gemm/gemm.py").gemm.get_tir(100, 72, 70))
    b = buffers(prog)
    assert (b["A_shared"].mem, b["A_shared"].stages, b["A_shared"].fmt) == ("L1", 2, "NZ")
    assert (b["C_local"].mem, b["C_local"].fmt) == ("L0C", "NZ")
    assert prog.vec == []  # a plain GEMM never touches the Vector core
    mmad = next(i for i in isa.instructions(prog.cube) if isinstance(i, isa.Mmad))
    assert str(mmad.init) == "ko == 0"  # T.clear folded into the first K step
    # the canonical Cube pipeline: MTE2 -> MTE1 -> M -> FIX, and WAR back-edges M -> MTE1 -> MTE2
    assert set(flags(prog.cube)) == {("MTE2", "MTE1"), ("MTE1", "M"), ("M", "FIX"),
                                     ("M", "MTE1"), ("MTE1", "MTE2")}


def test_pipelined_tiles_use_ping_pong_events_so_the_next_load_overlaps():
    prog = lower_program(example("gemm/gemm.py").gemm.get_tir(100, 72, 70))
    top = prog.cube
    pre = [s for s in top[:4] if isinstance(s, isa.SetFlag)]
    post = [s for s in top if isinstance(s, isa.WaitFlag) and s.src == "MTE1" and s.dst == "MTE2"]
    # every stage of A_shared and B_shared starts free and is drained after the loop
    assert sorted(s.event for s in pre) == sorted(s.event for s in post) == [1, 2, 3, 4]
    loop = next(s for s in top if isinstance(s, isa.Loop))
    first = loop.body[0]
    assert isinstance(first, isa.WaitFlag) and str(first.event) == "1 + ko % 2"
    # no back-to-back MTE1 -> MTE2 pair is left inside the loop: MTE2 never waits for the tile
    # MTE1 is reading now, only for the stage it is about to overwrite
    assert not any(isinstance(s, isa.SetFlag) and (s.src, s.dst, s.event) == ("MTE1", "MTE2", 0)
                   for s in isa.instructions(loop.body))


def test_attention_splits_work_between_cube_and_vector_with_cross_core_flags():
    fa = example("attention/flash_attention.py")
    prog = lower_program(fa.flash_attention.get_tir(1, 2, 100, 32, True, block_M=32, block_N=32))
    b = buffers(prog)
    assert b["Q_shared"].mem == "L1" and b["K_shared"].stages == 2
    assert b["acc_s"].mem == "UB" and b["acc_o"].mem == "UB" and b["logsum"].mem == "UB"
    cube = isa.instructions(prog.cube)
    vec = isa.instructions(prog.vec)
    assert {type(i).__name__ for i in cube} >= {"CopyGmToL1", "LoadL1ToL0", "Mmad", "Fixpipe", "CrossSet"}
    assert {type(i).__name__ for i in vec} >= {"VReduce", "VSelect", "VArange", "CrossWait", "CrossSet"}
    sets = sum(isinstance(i, isa.CrossSet) for i in cube + vec)
    waits = sum(isinstance(i, isa.CrossWait) for i in cube + vec)
    assert sets == waits > 0
    assert len(prog.workspaces) == 3  # S to Vector, P to Cube, PV to Vector


def test_dialect_allocations_place_buffers_explicitly():
    prog = lower_program(K.explicit_memories())
    b = buffers(prog)
    assert (b["a"].mem, b["b"].mem, b["c"].mem) == ("L1", "L1", "L0C")
    a, bb = torch.randn(64, 64, dtype=torch.float16), torch.randn(64, 64, dtype=torch.float16)
    c = simulate(None, a, bb, out_idx=[-1], program=prog)
    assert rel_err(c, a.double() @ bb.double()) < 1e-4


def test_vector_computed_gemm_operand_goes_through_a_workspace_to_l1():
    prog = lower_program(K.ub_gemm_operand())
    assert buffers(prog)["a"].mem == "UB"
    assert any(b.mem == "L1" and b.origin == "staging" for b in prog.buffers)
    a, b = torch.randn(32, 32, dtype=torch.float16), torch.randn(32, 32, dtype=torch.float16)
    c = simulate(None, a, b, out_idx=[-1], program=prog)
    assert rel_err(c, (a.double() * 2) @ b.double()) < 1e-3


def test_shifted_index_is_not_simd_and_names_the_line():
    with pytest.raises(LoweringError, match=r"cannot become SIMD.*index 'j \+ 1' of 'x'(.|\n)*ascend_kernels.py:32"):
        lower_program(K.shifted_index())


def test_transposed_read_is_not_simd():
    with pytest.raises(LoweringError, match="accessed transposed"):
        lower_program(K.transposed_read())


def test_strided_global_read_inside_parallel_is_not_simd():
    with pytest.raises(LoweringError, match=r"global 'X' at index 'j \* 2': only 'base \+ loop "
                                            r"variable' indices"):
        lower_program(K.strided_global_read())


def test_data_dependent_if_is_not_simd_and_points_at_the_if():
    with pytest.raises(LoweringError, match=r"the if condition .* is not a bounds check"
                                            r"(.|\n)*ascend_kernels.py:\d+"):
        lower_program(K.data_dependent_if())


def test_unsupported_tile_op_names_the_op_and_what_is_supported(monkeypatch):
    monkeypatch.delitem(ASCEND_RULES, "cumsum")  # every op has a rule now; take one away
    with pytest.raises(LoweringError, match=r"tile op 'cumsum'.*atomic, copy, fill, gemm, reduce"
                                            r"(.|\n)*ascend_kernels.py:\d+"):
        lower_program(K.row_cumsum())


@pytest.mark.parametrize("intrinsic", ["print", "device_assert"])
def test_a_thread_level_intrinsic_is_refused_not_dropped(intrinsic):
    """T.print and T.device_assert have no Ascend lowering: refused at the line (a check that
    was silently dropped before)."""
    import tilelang_core.language as T

    @T.prim_func
    def kernel(A: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            if intrinsic == "print":
                T.print(A[0])
            else:
                T.device_assert(A[0] > 0.0, "positive")
            for i in T.Parallel(64):
                A[i] = A[i] * 2.0

    with pytest.raises(LoweringError, match=rf"T.{intrinsic} in kernel 'kernel' for backend 'ascend'.*no lowering"
                                            r"(.|\n)*test_ascend_lowering.py:\d+"):
        lower_program(kernel)


def test_float32_gemm_is_refused_with_the_cube_dtypes():
    gemm = example("gemm/gemm.py")
    with pytest.raises(LoweringError, match="the Cube multiplies float16, bfloat16"):
        lower_program(gemm.gemm.get_tir(64, 64, 64, dtype="float32"))


def test_expert_scopes_place_work_and_run():
    prog = lower_program(K.expert_scopes())
    a, b = torch.randn(32, 32, dtype=torch.float16), torch.randn(32, 32, dtype=torch.float16)
    c = simulate(None, a, b, out_idx=[-1], program=prog)
    assert rel_err(c, (a.double() @ b.double()).clamp(min=0)) < 1e-3


def test_vector_work_inside_a_cube_scope_is_refused_with_its_line():
    with pytest.raises(LoweringError, match=r"runs on the vec core \(VBinary\) but sits in "
                                            r"T.Scope\(\"C\"\)(.|\n)*ascend_kernels.py:\d+"):
        lower_program(K.expert_scopes(misplaced=True))


def test_vector_pipelined_loop_ping_pongs_its_ub_tile_between_mte2_and_v():
    prog = lower_program(K.pipelined_row_sum(N=256))
    x = buffers(prog)["x"]
    assert (x.mem, x.stages) == ("UB", 3)
    pre = [s for s in prog.vec if isinstance(s, isa.SetFlag)]
    assert [(s.src, s.dst, s.event) for s in pre[:3]] == [("V", "MTE2", e) for e in (1, 2, 3)]
    X = torch.randn(8, 256)
    y = simulate(None, X, out_idx=[-1], program=prog)
    assert rel_err(y, X.double().sum(dim=1)) < 1e-6


def test_ragged_tiles_are_zeroed_before_the_partial_copy():
    prog = lower_program(K.pipelined_row_sum(N=250))  # the last tile has 58 of 64 columns
    loop = next(s for s in prog.vec if isinstance(s, isa.Loop))
    body = [s for s in loop.body if not isinstance(s, (isa.SetFlag, isa.WaitFlag))]
    assert isinstance(body[0], isa.VDup) and isinstance(body[1], isa.CopyGmToUb)
    X = torch.randn(8, 250)
    y = simulate(None, X, out_idx=[-1], program=prog)
    assert rel_err(y, X.double().sum(dim=1)) < 1e-6
    exact = lower_program(example("gemm/gemm.py").gemm.get_tir(128, 128, 64))
    assert not any(isinstance(i, isa.InitL1) for i in isa.instructions(exact.cube))
    ragged = lower_program(example("gemm/gemm.py").gemm.get_tir(100, 128, 64))
    assert any(isinstance(i, isa.InitL1) for i in isa.instructions(ragged.cube))


def test_bitwise_reduction_is_refused_by_name():
    import tilelang_core.language as T

    @T.prim_func
    def bits(A: T.Tensor((16, 64), "int32"), B: T.Tensor((16,), "int32")):
        with T.Kernel(1, threads=64):
            a = T.alloc_fragment((16, 64), "int32")
            b = T.alloc_fragment((16,), "int32")
            T.copy(A, a)
            T.reduce_bitor(a, b, dim=1)
            T.copy(b, B)

    with pytest.raises(LoweringError, match="T.reduce_bitor: the vector unit has no bitwise reduction"):
        lower_program(bits)
