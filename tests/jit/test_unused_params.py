"""A tensor parameter the kernel never touches may be passed as None (TileLang accepts it; DeepSeek's
casts pass x_sf=None when the input has no scale factors): it is left out of the compiled function.
One the kernel reads, or whose size the kernel needs from it alone, still takes a tensor."""

import numpy as np
import pytest
import torch

import tilelang_core as tl
import tilelang_core.language as T
from tilelang_core import LaunchError


def maybe_scaled(scaled: bool):
    @T.prim_func
    def main(A: T.Tensor((4,), T.float32), S: T.StridedTensor((4, 8), (T.dynamic("st"), 1), T.float32),
             B: T.Tensor((4,), T.float32)):
        with T.Kernel(1, threads=4):
            t = T.get_thread_binding()
            if scaled:
                B[t] = A[t] * S[t, 0]
            else:
                B[t] = A[t] + 1.0

    return tl.compile(main, out_idx=[-1], target="cpu")


def test_an_untouched_tensor_may_be_none_or_anything():
    kernel = maybe_scaled(False)
    a = torch.arange(4, dtype=torch.float32)
    torch.testing.assert_close(kernel(a, None), a + 1)
    torch.testing.assert_close(kernel(a, torch.zeros(3)), a + 1)  # ignored, whatever it is
    assert [p.name for p in kernel.params if p.unused] == ["S"]


def test_a_tensor_the_kernel_reads_must_be_given():
    kernel = maybe_scaled(True)
    a = torch.arange(4, dtype=torch.float32)
    s = torch.full((4, 8), 2.0)
    torch.testing.assert_close(kernel(a, s), a * 2)
    with pytest.raises(LaunchError, match="parameter 'S'.*expects a tensor, got NoneType"):
        kernel(a, None)


def test_the_argument_count_still_counts_the_untouched_tensor():
    kernel = maybe_scaled(False)
    with pytest.raises(LaunchError, match=r"takes 2 arguments \(A, S \(unused: None allowed\)\), got 1"):
        kernel(torch.zeros(4))


def test_a_size_only_the_untouched_tensor_gives_keeps_it():
    m = T.dynamic("m")

    @T.prim_func
    def main(A: T.Tensor((T.dynamic("n"),), T.float32), S: T.Tensor((m,), T.float32)):
        with T.Kernel(1, threads=1):
            A[0] = T.cast(m, T.float32)

    kernel = tl.compile(main, target="cpu")
    a = np.zeros(2, np.float32)
    kernel(a, np.zeros(5, np.float32))
    assert a[0] == 5
    assert not any(p.unused for p in kernel.params)
    with pytest.raises(LaunchError, match="parameter 'S'"):
        kernel(a, None)


def test_an_assumed_size_another_tensor_gives_does_not_keep_it():
    """TileKernels' per-channel cast: ``T.assume(n % 4 == 0)`` names a size the output gives too,
    so the untouched ``pos`` (same size) may still be None; a size only it gives stays needed."""
    n = T.dynamic("n")

    def build(assumed):
        @T.prim_func
        def main(A: T.Tensor((n,), T.float32), Pos: T.Tensor((assumed,), T.int32)):
            with T.Kernel(1, threads=1):
                T.assume(assumed % 4 == 0)
                for i in T.serial(n):
                    A[i] = A[i] + 1.0

        return tl.compile(main, target="cpu")

    kernel = build(n)
    a = np.zeros(8, np.float32)
    kernel(a, None)
    np.testing.assert_array_equal(a, np.ones(8, np.float32))
    assert [p.name for p in kernel.params if p.unused] == ["Pos"]
    kept = build(T.dynamic("m"))
    assert not any(p.unused for p in kept.params)
    with pytest.raises(LaunchError, match="parameter 'Pos'"):
        kept(a, None)


def test_the_profiler_calls_the_compiled_function_without_it():
    kernel = maybe_scaled(False)
    call = kernel.get_profiler()._raw_call([torch.arange(4, dtype=torch.float32), torch.zeros(4, 8)])
    call()  # the compiled function takes A and B only (it raised "Expected 2 arguments")
