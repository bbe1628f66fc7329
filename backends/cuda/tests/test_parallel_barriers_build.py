"""A grid barrier inside T.Parallel (TileLang's cooperative-launch example): the loop is split at
it (transform/parallel_barriers.py), so on CUDA the barrier stands outside every branch on the
thread index; nvcc builds the source for sm_80 and sm_90a. tests/language/test_parallel_barriers.py
has the numerics; backends/cuda/tests/gpu/test_gpu_language_rules.py runs it on a GPU."""

import pytest

import tilelang_core.language as T

pytest.importorskip("tilelang_cuda")
from test_language_fidelity_build import compiles, needs_nvcc  # noqa: E402


def grid_reverse_in_parallel(N=1024, block=64):
    """A[j] += A[N - 1 - j], every block reading another block's part after the grid barrier."""
    @T.prim_func
    def main(A: T.Tensor((N,), "float32")):
        with T.Kernel(N // block, threads=128) as bx:
            A_local = T.alloc_fragment((block,), "float32")
            for i in T.Parallel(block):
                A_local[i] = A[N - 1 - bx * block - i]
                T.sync_grid()
                A[bx * block + i] = A[bx * block + i] + A_local[i]

    return main


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_a_grid_barrier_in_a_parallel_body_stands_outside_every_branch(arch, tmp_path):
    src = compiles(grid_reverse_in_parallel(), arch, tmp_path)
    body = src[src.index("main_kernel(float* __restrict__ A_ptr) {"):]
    before = body[:body.index("tl_sync_grid();")]
    assert before.count("{") - before.count("}") == 1, "the grid barrier stands under a branch"
