"""TileLang's named barrier ``T.sync_threads(barrier_id, arrive_count)``: a barrier among the
threads of a branch that selects them (its topk selector scans a histogram this way). The count
must be the threads that reach it (tilelang_core/simt/transform/named_barriers.py); anything
else would hang or race and is refused at the line. Numerics on every reference path against
numpy; backends without named barriers refuse by name."""

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core import FrontendError, LoweringError
from tilelang_core.testing.oracle import PATHS, run

from fidelity_kernels import suffix_sums

NAMED = ("cpu", "cuda:sm_80")  # the paths that have a barrier over part of the block


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("R,threads", [(128, 256), (64, 64), (32, 96)])
def test_named_barrier_scan(path, R, threads):
    h = np.random.default_rng(R + threads).integers(-50, 50, R).astype(np.int32)
    o = np.zeros(R, np.int32)
    if path not in NAMED and R != threads:
        with pytest.raises(LoweringError, match="no barrier over part of the block|not whole 64-lane warps"):
            run(path, suffix_sums(R, threads), H=h, O=o)
        return
    run(path, suffix_sums(R, threads), H=h, O=o)
    np.testing.assert_array_equal(o, np.cumsum(h[::-1])[::-1])


@pytest.mark.parametrize("path", NAMED)
@pytest.mark.parametrize("count,cond,message", [
    (64, "range", "arrive_count=64, but the threads 0 <= tx < 128"),
    (128, "parity", "do not select one range of threads"),
])
def test_named_barrier_counting_other_threads_is_refused(path, count, cond, message):
    kernel = suffix_sums(128, 256, count, cond)
    if path == "cpu":
        message = "does not select one range of threads" if cond == "parity" else "selects 128 threads"
    with pytest.raises(LoweringError, match=message):
        run(path, kernel, H=np.zeros(128, np.int32), O=np.zeros(128, np.int32))


@pytest.mark.parametrize("path", NAMED)
def test_named_barrier_outside_a_branch_must_count_the_block(path):
    @T.prim_func
    def k(A: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding()
            A[tx] = 1.0
            T.sync_threads(1, 64)
            A[tx] = A[127 - tx]

    with pytest.raises(LoweringError, match="T.sync_threads.* 64|arrive_count=64"):
        run(path, k, A=np.zeros(128, np.float32))


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("args", [(2, 64), (2,)])
def test_named_barrier_over_the_whole_block_is_the_block_barrier(path, args):
    """``T.sync_threads(2)`` (no count) is TileLang's named barrier over the whole block."""
    @T.prim_func
    def k(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            s = T.alloc_shared((64,), "float32")
            s[tx] = A[tx]
            T.sync_threads(*args)
            B[tx] = s[63 - tx]

    a = np.arange(64, dtype=np.float32)
    b = np.zeros(64, np.float32)
    run(path, k, A=a, B=b)
    np.testing.assert_array_equal(b, a[::-1])


def test_named_barrier_arguments_are_checked():
    for args, message in [((None, 64), "needs the barrier_id too"), ((0, 64), "barrier_id must be 1 to 15"),
                          ((3, 0), "arrive_count must be positive")]:
        with pytest.raises(FrontendError, match=message):
            @T.prim_func
            def k(A: T.Tensor((64,), "float32")):
                with T.Kernel(1, threads=64):
                    T.sync_threads(*args)


@pytest.mark.parametrize("path", NAMED)
def test_a_barrier_id_bound_to_a_constant_is_that_constant(path):
    """TileLang's ``barrier_id = T.int32(1); T.sync_threads(barrier_id, count)``; a computed id
    (one that may differ between threads) stays refused: threads at different barriers hang."""
    @T.prim_func
    def k(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            s = T.alloc_shared((64,), "float32")
            barrier_id = T.int32(3)
            count = T.int32(32)
            if tx < 32:
                s[tx] = A[tx] * 2.0
                T.sync_threads(barrier_id, count)
                B[tx] = s[31 - tx]

    a = np.arange(64, dtype=np.float32)
    b = np.zeros(64, np.float32)
    run(path, k, A=a, B=b)
    np.testing.assert_array_equal(b[:32], 2 * a[:32][::-1])
    with pytest.raises(FrontendError, match="barrier_id must be a compile-time integer"):
        @T.prim_func
        def computed(A: T.Tensor((64,), "float32")):
            with T.Kernel(1, threads=64):
                tx = T.get_thread_binding()
                barrier_id = tx % 4 + 1
                T.sync_threads(barrier_id, 64)
