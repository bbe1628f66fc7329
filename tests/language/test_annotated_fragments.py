"""T.annotate_layout on fragments with TileLang's T.Fragment(shape, forward_fn=...) (layout/fitted.py,
simt/transform/apply_layouts.annotated_fragments): the digits read off the functions, the layout
followed by the T.Parallel loops (which thread runs which element, seen through the thread index
on every SIMT interpreter), reductions into replicated fragments against numpy, and the maps that
have no digit form refused with the reason."""

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core.errors import FrontendError, LayoutError, TileLangError
from tilelang_core.layout import LOCAL, THREAD, Digit
from tilelang_core.layout.fitted import fragment_of_functions
from tilelang_core.testing.oracle import PATHS, run

RNG = np.random.default_rng(5)


@pytest.mark.parametrize("shape,thread,local,replicate", [
    ((2, 64), lambda i, j: j // 8 + 8 * i, lambda i, j: j % 8, 1),
    ((16, 16), lambda i, j: (i % 8) * 4 + j // 4, lambda i, j: [i // 8, j % 4], 1),
    ((4,), lambda i, rep: rep * 4 + i, lambda i: 0, 8),
    ((8, 6), lambda i, j: j % 2 + 2 * i, lambda i, j: j // 2, 1),
])
def test_digits_match_the_functions_on_every_element(shape, thread, local, replicate):
    f = fragment_of_functions(shape, thread, local, replicate)
    for idx in np.ndindex(*shape):
        for r in range(replicate):
            t = thread(*idx, r) if replicate > 1 else thread(*idx)
            assert f.thread_of(*idx, replica=r) == t
        want = local(*idx)
        if isinstance(want, list):  # [i // 8, j % 4]: row-major over (2, 4)
            want = want[0] * 4 + want[1]
        assert f.local_of(*idx) == want


def test_a_simple_map_gets_the_expected_digits():
    f = fragment_of_functions((2, 64), lambda i, j: j // 8 + 8 * i, lambda i, j: j % 8)
    assert f.canonical().digits == ((Digit(2, THREAD, 8),), (Digit(8, THREAD, 1), Digit(8, LOCAL, 1)))


@pytest.mark.parametrize("thread,local,why", [
    (lambda i, j: i * 8 + (j ^ (4 * (i // 4))), lambda i, j: 0, "no thread / register digit form"),
    (lambda i, j: 32 + j, lambda i, j: i, "thread offset is not supported"),
    (lambda i, j: (i + j) % 8, lambda i, j: i, "moves both the thread"),
    (lambda i, j: j, lambda i, j: 0, "two elements in one register"),
])
def test_maps_without_digit_form_are_refused(thread, local, why):
    with pytest.raises(LayoutError, match=why):
        fragment_of_functions((8, 8), thread, local)


ROWS, WIDTH, THREADS = 4, 64, 128


def strided(rows=ROWS, width=WIDTH, threads=THREADS, who=True):
    """Each row over 16 threads, thread t of a row holding columns t, t + 16, t + 32, t + 48 (not
    what the default spread gives); the row sums on those 16 threads, replicated over them."""
    @T.prim_func
    def k(X: T.Tensor((rows, width), "float32"), O: T.Tensor((rows, width), "float32"),
          W: T.Tensor((rows, width), "int32")):
        with T.Kernel(1, threads=threads):
            x = T.alloc_fragment((rows, width), "float32")
            s = T.alloc_fragment((rows,), "float32")
            tx = T.get_thread_binding()
            T.annotate_layout({x: T.Fragment(x.shape, forward_fn=lambda i, j: (i * 16 + j % 16, j // 16)),
                               s: T.Fragment(s.shape, forward_fn=lambda i, rep: (i * 16 + rep, 0), replicate=16)})
            for i, j in T.Parallel(rows, width):
                x[i, j] = X[i, j]
            T.reduce_sum(x, s, dim=1)
            for i, j in T.Parallel(rows, width):
                O[i, j] = x[i, j] / s[i]
                if who:  # (the cpu backend has no thread index inside T.Parallel)
                    W[i, j] = T.if_then_else(x[i, j] > -1e30, tx, -1)

    return k


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("threads", [64, 128])
def test_the_loops_follow_the_annotated_layout(path, threads):
    """64 threads: the layout's own; 128: threads 64..127 hold copies (their stores of the thread
    index differ, so W is checked on 64)."""
    x = RNG.random((ROWS, WIDTH)).astype(np.float32) + 0.5
    o = np.full((ROWS, WIDTH), np.nan, np.float32)
    w = np.full((ROWS, WIDTH), -7, np.int32)
    run(path, strided(threads=threads, who=path != "cpu" and threads == 64), X=x, O=o, W=w)
    np.testing.assert_allclose(o, x / x.astype(np.float64).sum(1, keepdims=True), rtol=1e-6)
    if path != "cpu" and threads == 64:
        np.testing.assert_array_equal(w, np.fromfunction(lambda i, j: i * 16 + j % 16, (ROWS, WIDTH)))


def test_a_layout_over_more_threads_than_the_block_is_refused():
    with pytest.raises((LayoutError, TileLangError), match="over 256 threads; the block has 128"):
        run("cuda:sm_80", strided(rows=16))


def test_an_annotation_that_contradicts_a_gemm_is_refused():
    @T.prim_func
    def k(A: T.Tensor((32, 32), "float16"), C: T.Tensor((32, 32), "float32")):
        with T.Kernel(1, threads=128):
            a = T.alloc_shared((32, 32), "float16")
            c = T.alloc_fragment((32, 32), "float32")
            T.annotate_layout({c: T.Fragment(c.shape, forward_fn=lambda i, j: (i * 4 + j // 8, j % 8))})
            T.copy(A, a)
            T.gemm(a, a, c, clear_accum=True)
            T.copy(c, C)

    with pytest.raises((LayoutError, TileLangError), match="gets two different layouts"):
        run("cuda:sm_80", k)


def test_t_fragment_needs_a_function():
    with pytest.raises(FrontendError, match="needs forward_fn"):
        T.Fragment((4, 4))


def built_by_repeat():
    """TileLang's way of building a layout: an 8x8 base (4 lanes per row, 2 values each), its rows
    repeated in registers and its 16x8 tile repeated over 4 warps' threads, then replicated."""
    base = T.Fragment((8, 8), forward_fn=lambda i, j: (i * 4 + j // 2, j % 2))
    warp = base.repeat([2, 1], repeat_on_thread=False)  # 16 x 8 per warp, 4 values per lane
    block = warp.repeat([2, 2], repeat_on_thread=True, lower_dim_first=False).replicate(2)  # 32 x 16, 256 threads

    @T.prim_func
    def k(X: T.Tensor((32, 16), "float32"), W: T.Tensor((32, 16), "int32")):
        with T.Kernel(1, threads=256):
            x = T.alloc_fragment((32, 16), "float32")
            tx = T.get_thread_binding()
            T.annotate_layout({x: block})
            for i, j in T.Parallel(32, 16):
                x[i, j] = X[i, j]
            for i, j in T.Parallel(32, 16):
                W[i, j] = T.if_then_else(x[i, j] > -1e30, tx, -1)

    return k, block


@pytest.mark.parametrize("path", ["cuda:sm_80", "hip:gfx942"])
def test_a_layout_built_with_repeat_and_replicate_is_followed(path):
    """Which thread writes each element (the first copy's: threads 0..127) is the layout's, by
    TileLang's repeat rule (tests/layout/test_fragment.py checks the rule itself)."""
    kernel, layout = built_by_repeat()
    assert (layout.shape, layout.num_threads, layout.local_size, layout.replicas) == ((32, 16), 256, 4, 2)
    w = np.full((32, 16), -7, np.int32)
    run(path, kernel, X=RNG.random((32, 16)).astype(np.float32), W=w)
    want = np.fromfunction(np.vectorize(lambda i, j: layout.thread_of(int(i), int(j))), (32, 16))
    np.testing.assert_array_equal(w, want)
