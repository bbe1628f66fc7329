"""TVMScript's way of writing a kernel, which TileLang kernels use: ``T.handle`` parameters made
tensors by ``T.match_buffer``, and a nest of ``T.thread_binding`` loops as the launch (no
``T.Kernel``). Both run on every reference path, numerics against numpy."""

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core.errors import FrontendError
from tilelang_core.testing.oracle import PATHS, run

RNG = np.random.default_rng(5)


def scaled_copy(M, N, block):
    """B = 2 * A over an (M, N) tensor: a 2-D grid of blocks of ``block`` threads, written as
    TVMScript loops; M does not divide the grid's rows (a guard)."""
    grid_x = (N + block - 1) // block

    @T.prim_func
    def kernel(a_ptr: T.handle, b_ptr: T.handle):
        A = T.match_buffer(a_ptr, (M, N), dtype=T.float32, align=16)
        B = T.match_buffer(b_ptr, (M, N), T.float32)
        for by in T.thread_binding(M, thread="blockIdx.y"):
            for bx in T.thread_binding(grid_x, thread="blockIdx.x"):
                for tx in T.thread_binding(block, thread="threadIdx.x"):
                    col = bx * block + tx
                    if col < N:
                        B[by, col] = A[by, col] * 2.0

    return kernel


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(("M", "N"), [(1, 1), (3, 70), (4, 64)])
def test_match_buffer_and_thread_binding_launch(path, M, N):
    a = RNG.standard_normal((M, N)).astype(np.float32)
    b = np.zeros((M, N), np.float32)
    run(path, scaled_copy(M, N, 32), A=a, B=b)
    np.testing.assert_array_equal(b, 2 * a)


def test_thread_binding_launch_is_a_kernel_launch():
    from language_irutil import launches

    assert launches(scaled_copy(3, 70, 32)) == {"blockIdx.x": 3, "blockIdx.y": 3, "threadIdx.x": 32}


def test_match_buffer_refuses_what_it_does_not_do():
    with pytest.raises(FrontendError, match="elem_offset is not supported"):
        @T.prim_func
        def offset(a_ptr: T.handle):
            A = T.match_buffer(a_ptr, (8,), T.float32, elem_offset=4)
            with T.Kernel(1, threads=8) as _:
                A[T.get_thread_binding()] = 0.0

    with pytest.raises(FrontendError, match="takes a T.handle parameter"):
        @T.prim_func
        def tensor(A: T.Tensor((8,), T.float32)):
            B = T.match_buffer(A, (8,), T.float32)
            with T.Kernel(1, threads=8) as _:
                B[T.get_thread_binding()] = 0.0


def test_a_launch_binding_twice_is_refused():
    with pytest.raises(FrontendError, match="threadIdx.x is bound twice"):
        @T.prim_func
        def twice(A: T.Tensor((8,), T.float32)):
            for tx in T.thread_binding(8, thread="threadIdx.x"):
                for ty in T.thread_binding(8, thread="threadIdx.x"):
                    A[tx] = 0.0
