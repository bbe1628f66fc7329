"""T.assume over the arguments is checked at every call, as in TileLang ("Assume: N % 4 == 0";
language/assumes.py, jit/args.py), so the backends may rely on it (a row of N floats read as
float4); one over values only the kernel has is dropped here."""

import pytest
import torch

import tilelang_core as tl
import tilelang_core.language as T
from tilelang_core.errors import FrontendError, LaunchError


def assuming(target="cpu"):
    N = T.dynamic("N")

    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), scale: T.int32):
        with T.Kernel(1, threads=32):
            T.assume(N % 4 == 0)
            T.assume(scale > 0 and scale < 100)
            for i in T.serial(N):
                T.assume(i < N)  # over a loop variable: dropped
                A[i] = A[i] * T.cast(scale, T.float32)

    return tl.compile(main, target=target)


def test_assumptions_over_the_arguments_are_checked_at_each_call():
    kernel = assuming()
    a = torch.ones(8)
    kernel(a, 3)
    assert (a == 3).all()
    with pytest.raises(LaunchError, match=r"Assume: N % 4 == 0 is false for these arguments \(N=6\)"):
        kernel(torch.ones(6), 3)
    with pytest.raises(RuntimeError, match="Assume: "):  # TileLang's tests catch RuntimeError
        kernel(torch.ones(8), 100)
    kernel(torch.ones(12), 99)


def test_only_conditions_over_parameters_are_kept():
    kernel = assuming()
    assert sorted(a.text for a in kernel._binder.assumes) == ["N % 4 == 0", "scale > 0 and scale < 100"]
    assert "tl.assume" not in kernel.asm["tirx"]


@pytest.mark.parametrize("target", ["cuda:sm_90a", "hip", "metal"])
def test_backends_see_only_the_checked_conditions(target):
    pytest.importorskip(f"tilelang_{target.partition(':')[0]}")
    kernel = assuming(target)  # (hip and metal: source only here, no toolchain to build)
    assert "tl.assume" not in kernel.asm["lowered"] and "tl.host_assumes" not in kernel.asm["lowered"]
    assert "tl.checked_assumes" in kernel.asm["lowered"]


def rows_by_thread(assume: bool):
    """B[t, 4t:4t + 4] = A[t, 4t:4t + 4] over rows of N floats: a float4 per thread only where
    N % 4 == 0 (else row t starts at t * N, not a multiple of 4)."""
    N = T.dynamic("N")

    @T.prim_func
    def main(A: T.Tensor((32, N), T.float32), B: T.Tensor((32, N), T.float32)):
        with T.Kernel(1, threads=32):
            t = T.get_thread_binding()
            if assume:
                T.assume(N % 4 == 0)
            for i in T.vectorized(4):
                T.assume(t * 4 + i < N)
                B[t, t * 4 + i] = A[t, t * 4 + i]

    return main


@pytest.mark.parametrize("target", ["cuda:sm_90a", "hip"])
def test_a_checked_fact_makes_a_vectorized_loop_one_vector_access(target):
    pytest.importorskip(f"tilelang_{target.partition(':')[0]}")
    # (the lowered loop stays T.vectorized(4), which TVM makes one float4 access; unproven, serial)
    assert "T.vectorized(4)" in tl.compile(rows_by_thread(True), target=target).asm["lowered"]
    assert "T.vectorized" not in tl.compile(rows_by_thread(False), target=target).asm["lowered"]


def test_the_vectorized_rows_are_right_where_the_fact_holds():
    kernel = tl.compile(rows_by_thread(True), target="cpu")
    a = torch.randn(32, 128)
    b = torch.zeros(32, 128)
    kernel(a, b)
    cols = torch.arange(128)
    mask = (cols[None, :] // 4) == torch.arange(32)[:, None]
    torch.testing.assert_close(b, torch.where(mask, a, torch.zeros(())))
    with pytest.raises(LaunchError, match="Assume: N % 4 == 0"):
        kernel(torch.randn(32, 130), torch.zeros(32, 130))


def test_a_constant_false_assumption_is_an_error_at_its_line():
    with pytest.raises(FrontendError, match="is false"):
        @T.prim_func
        def main(A: T.Tensor((8,), T.float32)):
            with T.Kernel(1, threads=32):
                T.assume(8 % 3 == 0)
                A[0] = 1.0
