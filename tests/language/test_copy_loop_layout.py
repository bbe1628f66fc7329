"""T.copy / T.async_copy ``loop_layout=T.Fragment(...)``: the thread that copies each element, as
in TileLang. DeepSeek's TileKernels engram gate backward sets tl.disable_thread_storage_sync,
copies grad_out and x/k/w tiles with a layout that gives each warp pair its head's row, waits with
T.ptx_wait_group (per thread) and reads back only what each thread copied itself, without a
barrier. The layout used to be dropped, the elements dealt round-robin: the reads raced, and
grad_x came out wrong on the H100 (1 - cosine 2.9e-2). Numerics on every reference path with
the kernel's own ordering (no barrier added: the interpreters raise on the race), and the copy's
16-byte vectors along the layout's runs."""

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core import FrontendError, LoweringError
from tilelang_core.testing.oracle import PATHS, lower, run_with_options

ROWS, COLS, RUN = 4, 128, 4  # 4 heads of 16 threads, each copying its row in runs of 4 floats


def by_head(i, j):
    """Row i goes to threads 16 i .. 16 i + 15, in runs of RUN elements that wrap around them."""
    return i * 16 + (j // RUN) % 16, j % RUN + (j // (16 * RUN)) * RUN


def head_rows(copy_op, threads=64):
    """Each thread copies its part of X by the layout, waits for its own copies only and doubles
    exactly the elements it copied. The round-robin order puts row t // 32 (and + 2) on thread t:
    other threads' rows, read with no barrier between."""
    layout = T.Fragment((ROWS, COLS), forward_fn=by_head)

    @T.prim_func
    def main(X: T.Tensor((ROWS, COLS), "float32"), O: T.Tensor((ROWS, COLS), "float32")):
        with T.Kernel(1, threads=threads):
            S = T.alloc_shared((ROWS, COLS), "float32")
            tid = T.get_thread_binding()
            copy_op(X, S, loop_layout=layout)
            T.ptx_wait_group(0)
            if tid < 64:
                for r in T.serial(COLS // (16 * RUN)):
                    for k in T.vectorized(RUN):
                        col = r * 16 * RUN + tid % 16 * RUN + k
                        O[tid // 16, col] = S[tid // 16, col] * 2

    return main


def interpret(path, func, **arrays):
    """``func`` on ``path`` with the kernel's own ordering (tl.disable_thread_storage_sync)."""
    return run_with_options(path, func, {"disable_thread_storage_sync": True}, **arrays)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("copy_op", [T.copy, T.async_copy], ids=["copy", "async_copy"])
@pytest.mark.parametrize("threads", [64, 96])  # 96: the threads past the layout copy nothing
def test_each_thread_copies_the_elements_its_loop_layout_gives_it(path, copy_op, threads):
    x = np.random.default_rng(threads).standard_normal((ROWS, COLS)).astype(np.float32)
    out = interpret(path, head_rows(copy_op, threads), X=x, O=np.zeros((ROWS, COLS), np.float32))
    np.testing.assert_array_equal(out["O"].astype(np.float64), x.astype(np.float64) * 2)


def test_the_loop_layout_runs_are_copied_in_16_byte_vectors():
    text = lower("cuda:sm_80", head_rows(T.async_copy)).script()
    assert text.count("tl_copy_16") == 1 and "tl_copy_4" not in text  # one per run, in a loop of 2
    assert "tvm_storage_sync" in lower("cuda:sm_80", head_rows(T.async_copy)).script()  # (the default adds one)
    assert "tvm_storage_sync" not in lower("cuda:sm_80", head_rows(T.async_copy),
                                           disable_thread_storage_sync=True).script()


def test_a_loop_layout_of_another_shape_is_refused():
    layout = T.Fragment((ROWS, 64), forward_fn=by_head)
    with pytest.raises(FrontendError, match=r"laid out over shape \[4, 64\].*extents \[4, 128\]"):
        @T.prim_func
        def main(X: T.Tensor((ROWS, COLS), "float32")):
            with T.Kernel(1, threads=64):
                S = T.alloc_shared((ROWS, COLS), "float32")
                T.copy(X, S, loop_layout=layout)


def test_a_loop_layout_over_more_threads_than_the_block_is_refused():
    with pytest.raises(LoweringError, match="over 64 threads, but the block has 32"):
        lower("cuda:sm_80", head_rows(T.copy, threads=32))
