"""T.Parallel(..., loop_layout=T.Fragment(...)) names the thread that runs each iteration, as in
TileLang, where layout inference takes it before any fragment's layout. Independent iterations
compute the same on any thread, but a kernel that turns barriers off
(tl.disable_thread_storage_sync, as DeepSeek's TileKernels do) and reads back in other code what
the loop gave each thread relies on it: it was a hint here, and such a read raced. Numerics on
every reference path with the kernel's own ordering (the interpreters raise on a race), the
fragments the loop touches taking its layout, and the refusals."""

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core import FrontendError, LayoutError, LoweringError
from tilelang_core.testing.oracle import PATHS, lower, run
from test_copy_loop_layout import COLS, ROWS, RUN, by_head, interpret  # (4 heads of 16 threads, runs of 4)


def four_per_thread(block_x, threads):
    def forward(i, j):
        elems = i * block_x + j
        return (elems // 4) % threads, elems % 4 + elems // (threads * 4) * 4

    return forward


def transposed_copy(M=16, N=32, threads=64, layout_shape=None):
    shape = layout_shape or (N, M)
    layout = T.Fragment(shape, forward_fn=four_per_thread(shape[1], threads))

    @T.prim_func
    def main(X: T.Tensor((M, N), T.float32), Y: T.Tensor((N, M), T.float32)):
        with T.Kernel(1, threads=threads):
            s = T.alloc_shared((M, N), T.float32)
            T.copy(X, s)
            for i, j in T.Parallel(N, M, loop_layout=layout):
                Y[i, j] = s[j, i]

    return main


def head_rows(threads=64):
    """Each thread doubles its part of X into shared memory by the loop's layout and reads back
    exactly the elements it wrote, with no barrier between."""
    layout = T.Fragment((ROWS, COLS), forward_fn=by_head)

    @T.prim_func
    def main(X: T.Tensor((ROWS, COLS), "float32"), O: T.Tensor((ROWS, COLS), "float32")):
        with T.Kernel(1, threads=threads):
            S = T.alloc_shared((ROWS, COLS), "float32")
            tid = T.get_thread_binding()
            for i, j in T.Parallel(ROWS, COLS, loop_layout=layout):
                S[i, j] = X[i, j] * 2
            if tid < 64:
                for r in T.serial(COLS // (16 * RUN)):
                    for k in T.vectorized(RUN):
                        col = r * 16 * RUN + tid % 16 * RUN + k
                        O[tid // 16, col] = S[tid // 16, col] + 1

    return main


def through_fragment(threads=64):
    """A loop with a layout fills a fragment, which then takes that layout; a second loop over
    the fragment (no layout of its own) follows it, and each thread reads back its shared
    elements with no barrier."""
    layout = T.Fragment((ROWS, COLS), forward_fn=by_head)

    @T.prim_func
    def main(X: T.Tensor((ROWS, COLS), "float32"), O: T.Tensor((ROWS, COLS), "float32")):
        with T.Kernel(1, threads=threads):
            F = T.alloc_fragment((ROWS, COLS), "float32")
            S = T.alloc_shared((ROWS, COLS), "float32")
            for i, j in T.Parallel(ROWS, COLS, loop_layout=layout):
                F[i, j] = X[i, j] * 2
            for i, j in T.Parallel(ROWS, COLS):
                S[i, j] = F[i, j] + 1
            tid = T.get_thread_binding()
            if tid < 64:
                for r in T.serial(COLS // (16 * RUN)):
                    for k in T.vectorized(RUN):
                        col = r * 16 * RUN + tid % 16 * RUN + k
                        O[tid // 16, col] = S[tid // 16, col]

    return main


@pytest.mark.parametrize("path", PATHS)
def test_a_loop_layout_leaves_the_result_unchanged(path):
    x = np.random.default_rng(1).standard_normal((16, 32)).astype(np.float32)
    out = run(path, transposed_copy(), X=x, Y=np.zeros((32, 16), np.float32))["Y"]
    np.testing.assert_array_equal(out, x.T)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("threads", [64, 96])  # 96: the threads past the layout run nothing
def test_each_thread_runs_the_iterations_its_loop_layout_gives_it(path, threads):
    x = np.random.default_rng(threads).standard_normal((ROWS, COLS)).astype(np.float32)
    out = interpret(path, head_rows(threads), X=x, O=np.zeros((ROWS, COLS), np.float32))
    np.testing.assert_array_equal(out["O"], x * np.float32(2) + np.float32(1))  # (float32 math, exact)


@pytest.mark.parametrize("path", PATHS)
def test_fragments_in_the_loop_take_its_layout(path):
    x = np.random.default_rng(5).standard_normal((ROWS, COLS)).astype(np.float32)
    out = interpret(path, through_fragment(), X=x, O=np.zeros((ROWS, COLS), np.float32))
    np.testing.assert_array_equal(out["O"], x * np.float32(2) + np.float32(1))  # (float32 math, exact)


def test_the_fragment_layout_is_the_loop_layout():
    from tilelang_core.transform.layout_inference import infer_layouts

    layouts = {b.name: f for b, f in infer_layouts(through_fragment(), 64).items()}
    f = layouts["F"]
    assert all(f.thread_of(i, j) == by_head(i, j)[0] and f.local_of(i, j) == by_head(i, j)[1]
               for i in range(ROWS) for j in range(COLS))


def replicated_atomics(replicate=2):
    """A loop layout with two copies (threads 64 apart run the same iterations) adds each element
    once, and each copy's thread computes the same stores."""
    layout = T.Fragment((ROWS, COLS), forward_fn=lambda i, j, r: (by_head(i, j)[0] + 64 * r, by_head(i, j)[1]),
                        replicate=replicate)

    @T.prim_func
    def main(X: T.Tensor((ROWS, COLS), "float32"), O: T.Tensor((ROWS, COLS), "float32"),
             Y: T.Tensor((ROWS, COLS), "float32")):
        with T.Kernel(1, threads=64 * replicate):
            for i, j in T.Parallel(ROWS, COLS, loop_layout=layout):
                T.atomic_add(O[i, j], X[i, j])
                Y[i, j] = X[i, j] * 3

    return main


@pytest.mark.parametrize("path", PATHS)
def test_a_replicated_loop_layout_adds_each_element_once(path):
    x = np.random.default_rng(7).standard_normal((ROWS, COLS)).astype(np.float32)
    out = run(path, replicated_atomics(), X=x, O=np.ones((ROWS, COLS), np.float32),
              Y=np.zeros((ROWS, COLS), np.float32))
    np.testing.assert_array_equal(out["O"], x + np.float32(1))
    np.testing.assert_array_equal(out["Y"], x * np.float32(3))


def test_a_loop_layout_runs_in_16_byte_vectors():
    layout = T.Fragment((ROWS, COLS), forward_fn=by_head)

    @T.prim_func
    def main(X: T.Tensor((ROWS, COLS), "float32"), O: T.Tensor((ROWS, COLS), "float32")):
        with T.Kernel(1, threads=64):
            for i, j in T.Parallel(ROWS, COLS, loop_layout=layout):
                O[i, j] = X[i, j] * 2

    text = lower("cuda:sm_80", main).script()
    assert "T.vectorized(4)" in text


def test_a_loop_layout_that_disagrees_with_a_fragment_is_refused():
    layout = T.Fragment((ROWS, COLS), forward_fn=by_head)

    @T.prim_func
    def main(X: T.Tensor((ROWS, COLS), "float32"), O: T.Tensor((ROWS, COLS), "float32")):
        with T.Kernel(1, threads=64):
            F = T.alloc_fragment((ROWS, COLS), "float32")
            T.copy(X, F)
            T.annotate_layout({F: T.Fragment((ROWS, COLS), forward_fn=four_per_thread(COLS, 64))})
            for i, j in T.Parallel(ROWS, COLS, loop_layout=layout):
                O[i, j] = F[i, j]

    with pytest.raises(LayoutError, match="'F' gets two different layouts"):
        lower("cuda:sm_80", main)


def test_a_loop_layout_of_another_shape_is_refused():
    with pytest.raises(FrontendError, match="loop's extents are"):
        transposed_copy(layout_shape=(16, 32))


def test_a_loop_layout_over_more_threads_than_the_block_is_refused():
    with pytest.raises(LoweringError, match="over 64 threads, but the block has 32"):
        lower("cuda:sm_80", head_rows(threads=32))


def test_a_loop_layout_over_fewer_threads_than_a_fragment_is_refused():
    with pytest.raises(LayoutError, match="loop_layout over 64 threads and touches fragment 'F'"):
        lower("cuda:sm_80", through_fragment(threads=128))


def test_a_loop_layout_needs_constant_extents():
    layout = T.Fragment((ROWS, COLS), forward_fn=by_head)
    with pytest.raises(FrontendError, match="needs constant extents"):
        @T.prim_func
        def main(X: T.Tensor((ROWS, COLS), "float32"), n: T.int32):
            with T.Kernel(1, threads=64):
                for i, j in T.Parallel(n, COLS, loop_layout=layout):
                    X[i, j] = 0
