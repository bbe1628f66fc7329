"""The static checker catches removed waits, unset flags, missing cross-core waits and buffers
that do not fit, and passes every program the compiler emits."""

import pytest

from ascend_harness import example, lower_program
from tilelang_ascend import isa
from tilelang_ascend.checker import SyncCheckError, check_program, find_problems
from tilelang_core.errors import LoweringError


def gemm_program(**kw):
    return lower_program(example("gemm/gemm.py").gemm.get_tir(100, 72, 70, **kw))


def attention_program():
    fa = example("attention/flash_attention.py")
    return lower_program(fa.flash_attention.get_tir(1, 2, 100, 32, True, block_M=32, block_N=32))


def remove_first(stmts, pred) -> object:
    """Delete the first instruction matching ``pred`` (depth first); return it."""
    for i, s in enumerate(stmts):
        if isinstance(s, isa.Loop):
            found = remove_first(s.body, pred)
        elif isinstance(s, isa.If):
            found = remove_first(s.then, pred) or remove_first(s.orelse, pred)
        elif isinstance(s, isa.Instr) and pred(s):
            del stmts[i]
            return s
        else:
            continue
        if found is not None:
            return found
    return None


def test_programs_the_compiler_emits_pass():
    for prog in (gemm_program(), gemm_program(trans_A=True, trans_B=True), attention_program()):
        assert find_problems(prog) == []


def test_removed_wait_is_an_uncovered_dependency_and_an_unbalanced_flag():
    prog = gemm_program()
    gone = remove_first(prog.cube, lambda s: isinstance(s, isa.WaitFlag) and s.src == "MTE2")
    assert gone is not None
    problems = find_problems(prog)
    assert any("unbalanced: MTE2->MTE1 event 0: +1" in p for p in problems)
    assert any("cube.MTE1 reads 'A_shared'" in p and "no set/wait" in p for p in problems)
    with pytest.raises(SyncCheckError, match="A_shared"):
        check_program(prog)


def test_wait_without_set_is_reported():
    prog = gemm_program()
    remove_first(prog.cube, lambda s: isinstance(s, isa.SetFlag) and s.src == "M" and s.dst == "FIX")
    problems = find_problems(prog)
    assert any("wait_flag M->FIX event 0 with no set_flag before it" in p for p in problems)


def test_missing_cross_core_wait_is_reported():
    prog = attention_program()
    remove_first(prog.vec, lambda s: isinstance(s, isa.CrossWait) and s.flag == 0)
    problems = find_problems(prog)
    assert any("cross-core flag 0" in p and "do not pair up" in p for p in problems)
    assert any("vec.MTE2 reads 'ws" in p for p in problems)


def test_cross_core_wait_never_set_is_reported():
    prog = attention_program()
    remove_first(prog.cube, lambda s: isinstance(s, isa.CrossSet) and s.flag == 0)
    remove_first(prog.cube, lambda s: isinstance(s, isa.CrossSet) and s.flag == 0)
    assert any("cross-core flag 0" in p for p in find_problems(prog))


def test_oversize_buffer_is_reported():
    prog = gemm_program()
    buf = next(b for b in prog.buffers if b.mem == "L0C")
    buf.rows = 2048  # 2048 x 64 float32 = 512 KiB, past L0C
    problems = find_problems(prog)
    assert any(f"'{buf.name}'" in p and "does not fit L0C" in p for p in problems)


def test_misplaced_and_overlapping_buffers_are_reported():
    prog = gemm_program()
    a, b = [x for x in prog.buffers if x.mem == "L1"][:2]
    b.offset = a.offset + 32
    problems = find_problems(prog)
    assert any("overlap in L1" in p for p in problems)
    a.offset = 16
    assert any("not 32-byte aligned" in p for p in find_problems(prog))


def test_planner_refuses_tiles_that_do_not_fit_ub():
    softmax = example("softmax/softmax.py")
    with pytest.raises(LoweringError, match=r"needs \d+ bytes of UB .* \(largest: 'x'"):
        lower_program(softmax.softmax.get_tir(64, 8192, block_M=8))


def test_removed_ping_pong_release_is_reported():
    prog = gemm_program()
    remove_first(prog.cube, lambda s: isinstance(s, isa.SetFlag) and not isinstance(s.event, int))
    problems = find_problems(prog)
    assert any("loop over 'ko' leaves flags unbalanced: MTE1->MTE2 event 1: -1" in p for p in problems)
    assert any("cube.MTE2 writes 'A_shared' while cube.MTE1 reads it" in p for p in problems)
