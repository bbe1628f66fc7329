"""A block larger than the target allows is refused at compile time with the T.Kernel line, on
every GPU backend (CUDA took __launch_bounds__(100000) and failed only at launch)."""

import pytest

import tilelang_core.language as T
from tilelang_core.errors import LoweringError
from tilelang_core.testing.oracle import lower


def block(threads):
    @T.prim_func
    def big(A: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=threads):
            A[0] = 1.0

    return big


@pytest.mark.parametrize("path", ["cuda:sm_80", "cuda:sm_90a", "hip:gfx942", "metal:apple7"])
@pytest.mark.parametrize("threads", [100000, 1025, (64, 32)])
def test_a_block_past_the_limit_is_refused_at_the_kernel_line(path, threads):
    total = threads if isinstance(threads, int) else threads[0] * threads[1]
    with pytest.raises(LoweringError, match=rf"asks for {total} threads per \w+, more than the 1024 "
                                            rf"[\s\S]*test_block_limits.py:14"):
        lower(path, block(threads))


@pytest.mark.parametrize("path", ["cuda:sm_90a", "hip:gfx942", "metal:apple7"])
def test_the_limit_itself_compiles(path):
    lower(path, block(1024))


@pytest.mark.parametrize("path", ["cuda:sm_90a", "hip:gfx942", "metal:apple7"])
def test_too_much_shared_memory_names_the_largest_buffer_and_its_line(path):
    @T.prim_func
    def greedy(A: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=128):
            small = T.alloc_shared((64,), "float32")
            huge = T.alloc_shared((100000,), "float32")
            T.copy(A, small[0:8])
            A[0] = huge[3] + small[1]

    with pytest.raises(LoweringError, match=r"more than the \d+ bytes[\s\S]*The largest is 'huge' \(400000 "
                                            r"bytes\)\n  --> .*test_block_limits.py:40"):
        lower(path, greedy)
