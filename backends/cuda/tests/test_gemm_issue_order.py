"""Where a plain warp-specialized iteration issues its wgmma gemms with tl.enable_early_gemm_issue
(hopper/consumer_schedule.py ``issue_order``; opt-in until measured): a gemm that depends on nothing between it and the gemm before it is issued right
after that one, so the work between runs under both; adjacent independent gemms are issued in the
order their results are first read. Nothing moves across a statement touching its operands, a
binding, or a call with effects. Numerics: tests/gpu test_flash_attention_backward_matches_autograd
(the example's stats="global" tiles take this schedule) and the cpu example tests."""

import re

import pytest

import tilelang_core.language as T
from test_hopper_lowering import cuda_source, example_module

AHEAD = "issued ahead of work they do not depend on"
EARLY = {"enable_early_gemm_issue": True}


def two_gemms(between: str, n: int = 4):
    """Gemm 1 (A A^T), elementwise work on its result, gemm 2 (B B^T, or of what the work wrote),
    work on gemm 2's result after it (so the attention overlap plan does not apply)."""

    @T.prim_func
    def main(A: T.Tensor((n * 64, 64), "float16"), B: T.Tensor((n * 64, 64), "float16"),
             C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((64, 64), "float16")
            B_s = T.alloc_shared((64, 64), "float16")
            P_s = T.alloc_shared((64, 64), "float16")
            c1 = T.alloc_fragment((64, 64), "float32")
            c2 = T.alloc_fragment((64, 64), "float32")
            acc = T.alloc_fragment((64, 64), "float32")
            T.clear(acc)
            for k in T.Pipelined(n, num_stages=2):
                T.copy(A[k * 64, 0], A_s)
                T.copy(B[k * 64, 0], B_s)
                T.gemm(A_s, A_s, c1, transpose_B=True, clear_accum=True)
                if between == "feeds":  # the work writes what gemm 2 reads
                    T.copy(c1, P_s)
                else:
                    for i, j in T.Parallel(64, 64):
                        acc[i, j] += T.exp(c1[i, j] * 0.01)
                if between == "extern":  # a call with effects
                    T.evaluate(T.call_extern("handle", "__nanosleep", 1))
                if between == "feeds":
                    T.gemm(P_s, B_s, c2, transpose_B=True, clear_accum=True)
                else:
                    T.gemm(B_s, B_s, c2, transpose_B=True, clear_accum=True)
                for i, j in T.Parallel(64, 64):
                    acc[i, j] += c2[i, j]
            T.copy(acc, C)

    return main


def _loop(kernel: str) -> str:
    start = kernel.index("for (int k = 0;")
    return kernel[start:]


def _events(loop: str) -> list[str]:
    return re.findall(r"tl_wgmma_commit\(\)|tl_wgmma_wait<\d>\(\)|expf", loop)


def test_an_independent_gemm_is_issued_with_the_one_before():
    source, kernel = cuda_source(two_gemms("independent"), **EARLY)
    assert f"{AHEAD}: gemm(B_s, B_s -> c2)" in source
    events = _events(_loop(kernel))
    first_exp = events.index("expf")
    # both gemms issued, then only the first awaited before the exp reads its result
    assert events[:first_exp][-3:] == ["tl_wgmma_commit()", "tl_wgmma_commit()", "tl_wgmma_wait<1>()"], events


@pytest.mark.parametrize("between", ["feeds", "extern"])
def test_a_gemm_stays_behind_what_it_depends_on(between):
    """Behind the statement writing its operand; behind a call with effects (an extern call)."""
    source, kernel = cuda_source(two_gemms(between), **EARLY)
    assert AHEAD not in source
    if between == "extern":
        loop = _loop(kernel)
        assert loop.index("__nanosleep") < [m.start() for m in re.finditer(r"tl_wgmma_commit\(\)", loop)][1]


def test_flash_attention_backward_issues_dp_with_s_and_dq_before_dk():
    """The example as written: S = K Q^T, exp, dP = V dO^T, ..., dK += dS^T Q, dQ = dS K, store dQ.
    Issued: S and dP together (the exp runs under dP), dQ before dK (dQ is stored right away;
    wait_group 1 leaves dK in flight under the store and the atomic adds)."""
    ex = example_module("attention/flash_attention_bwd.py")
    func = ex.flash_bwd.get_tir(2, 2, 512, 128, False, block_M=64, block_N=128, num_stages=2, threads=256,
                                stats="global")
    source, kernel = cuda_source(func, **EARLY)
    assert f"{AHEAD}: gemm(V_s, dO_s -> dpT), gemm(dsT_s, K_s -> dq)" in source
    loop = kernel[kernel.index("for (int q = 0;"):]
    events = re.findall(r"tl_wgmma_commit\(\)|tl_wgmma_wait<\d>\(\)|tl_exp2|tl_red_add_v4", loop)
    first_exp, red = events.index("tl_exp2"), events.index("tl_red_add_v4")
    assert events[:first_exp][-3:] == ["tl_wgmma_commit()", "tl_wgmma_commit()", "tl_wgmma_wait<1>()"], events
    # dQ then dK issued; only dQ awaited before its store and atomic adds
    assert events[:red][-3:] == ["tl_wgmma_commit()", "tl_wgmma_commit()", "tl_wgmma_wait<1>()"], events
    issues = re.findall(r"tl_wgmma_[rs]s_f16_n(\d+)", loop)
    assert issues[-12:-4] == ["64"] * 8 and issues[-4:] == ["128"] * 4, issues  # dQ: n64 x 8, dK: n128 x 4


def test_off_by_default():
    """Opt-in (FA backward lost 14% with it on an H100: spills): the example keeps its written order by default."""
    ex = example_module("attention/flash_attention_bwd.py")
    func = ex.flash_bwd.get_tir(2, 2, 512, 128, False, block_M=64, block_N=128, num_stages=2, threads=256,
                                stats="global")
    source, _ = cuda_source(func)
    assert AHEAD not in source
    assert "3 wgmma batch(es) awaited where their results are first used (statements after the last gemm)\n" in source
