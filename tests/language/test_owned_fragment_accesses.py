"""A laid-out fragment indexed in T.Parallel by any expression of the iteration (TileLang's rule,
transform/owned_accesses.py): legal when each element an iteration touches lives on the thread
that runs it, and the loop may take its layout from such an access. Patterns from DeepSeek's
TileKernels (mHC split mixes, the e5m6 cast, the per-block cast), which were refused before."""

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core.errors import LayoutError
from tilelang_core.testing.oracle import PATHS, run


def split_mixes(rows, a, b, threads=128):
    """Each row of ``mix`` (rows x (2a + b)) lives on one thread (copies on the others); three
    loops read its three column ranges at shifted columns into fragments of their own."""
    cols = 2 * a + b

    @T.prim_func
    def main(M: T.Tensor((rows, cols), "float32"), P: T.Tensor((rows, a), "float32"),
             Q: T.Tensor((rows, a), "float32"), R: T.Tensor((rows, b), "float32")):
        with T.Kernel(1, threads=threads):
            mix = T.alloc_fragment((rows, cols), "float32")
            p = T.alloc_fragment((rows, a), "float32")
            q = T.alloc_fragment((rows, a), "float32")
            r = T.alloc_fragment((rows, b), "float32")
            T.annotate_layout({mix: T.Fragment((rows, cols), lambda i, j: (i % 32, i // 32 * cols + j))})
            T.copy(M, mix)
            for i, j in T.Parallel(rows, a):
                p[i, j] = mix[i, j] * 2.0
            for i, j in T.Parallel(rows, a):
                q[i, j] = mix[i, j + a] + 1.0
            for i, j in T.Parallel(rows, b):
                r[i, j] = mix[i, j + a * 2] - mix[i, j % a]
            T.copy(p, P)
            T.copy(q, Q)
            T.copy(r, R)

    return main


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("rows,a,b", [(32, 4, 16), (64, 2, 8), (32, 1, 3)])
def test_shifted_columns_of_a_row_per_thread_fragment(path, rows, a, b):
    m = np.random.default_rng(rows + a + b).standard_normal((rows, 2 * a + b)).astype(np.float32)
    out = run(path, split_mixes(rows, a, b), M=m, P=np.zeros((rows, a), np.float32),
              Q=np.zeros((rows, a), np.float32), R=np.zeros((rows, b), np.float32))
    np.testing.assert_allclose(out["P"], m[:, :a] * 2, rtol=1e-6)
    np.testing.assert_allclose(out["Q"], m[:, a:2 * a] + 1, rtol=1e-6)
    np.testing.assert_allclose(out["R"], m[:, 2 * a:] - m[:, np.arange(b) % a], rtol=1e-6)


def grouped_reads(bm, bk, threads, group=8):
    """``out[x, y * 8 + j]`` for a serial ``j`` inside T.Parallel(x, y): 8 consecutive elements of a
    row on one thread (the e5m6 cast's layout); each iteration sums its group."""
    def forward(i, j):
        e = i * bk + j
        return e // group % threads, e % group + e // (group * threads) * group

    @T.prim_func
    def main(X: T.Tensor((bm, bk), "float32"), S: T.Tensor((bm, bk // group), "float32")):
        with T.Kernel(1, threads=threads):
            f = T.alloc_fragment((bm, bk), "float32")
            T.annotate_layout({f: T.Fragment((bm, bk), forward_fn=forward)})
            for i, j in T.Parallel(bm, bk):
                f[i, j] = X[i, j] * 3.0
            acc = T.alloc_local((1,), "float32")
            for x, y in T.Parallel(bm, bk // group):
                acc[0] = 0.0
                for j in T.serial(group):
                    acc[0] += f[x, y * group + j] * (j + 1)
                S[x, y] = acc[0]

    return main


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("bm,bk,threads", [(4, 64, 32), (8, 128, 64), (1, 256, 32)])
def test_a_serial_loop_inside_the_body_reads_the_threads_group(path, bm, bk, threads):
    x = np.random.default_rng(bm * bk).standard_normal((bm, bk)).astype(np.float32)
    out = run(path, grouped_reads(bm, bk, threads), X=x, S=np.zeros((bm, bk // 8), np.float32))
    expected = (3 * x.reshape(bm, bk // 8, 8).astype(np.float64) * np.arange(1, 9)).sum(-1)
    np.testing.assert_allclose(out["S"], expected, rtol=1e-5, atol=1e-5)


def block_amax(bm, bk, threads, per=4):
    """The per-block cast's reducer: each thread keeps a running max per (row block, column block)
    at a slot it computes in the body; a reduction over the slots gives the block's absmax."""
    slots = threads // ((bm // per) * (bk // per))

    def forward(i, j, k):
        return (i * (bk // per) + j) * slots + k, 0

    @T.prim_func
    def main(X: T.Tensor((bm, bk), "float32"), A: T.Tensor((bm // per, bk // per), "float32")):
        with T.Kernel(1, threads=threads):
            f = T.alloc_fragment((bm, bk), "float32")
            red = T.alloc_fragment((bm // per, bk // per, slots), "float32")
            amax = T.alloc_fragment((bm // per, bk // per), "float32")
            T.annotate_layout({red: T.Fragment((bm // per, bk // per, slots), forward_fn=forward)})
            T.copy(X, f)
            T.fill(red, 0.0)
            for i, j in T.Parallel(bm, bk):
                k = (i % per * per + j % per) % slots
                red[i // per, j // per, k] = T.max(red[i // per, j // per, k], T.abs(f[i, j]))
            T.reduce_max(red, amax, dim=2)
            T.copy(amax, A)

    return main


@pytest.mark.parametrize("path", PATHS)
def test_a_reducer_written_at_a_slot_bound_in_the_body(path):
    bm = bk = 8
    x = np.random.default_rng(7).standard_normal((bm, bk)).astype(np.float32)
    out = run(path, block_amax(bm, bk, 32), X=x, A=np.zeros((2, 2), np.float32))
    expected = np.abs(x).reshape(2, 4, 2, 4).max(axis=(1, 3))
    np.testing.assert_array_equal(out["A"], expected)


@pytest.mark.parametrize("path", ["cuda:sm_80", "hip:gfx942", "metal:apple7"])
def test_an_element_of_another_thread_is_refused(path):
    """``mix[i, j + 1]`` where columns are spread over threads: the element is another thread's
    register; refused, naming the iteration and the two threads. (The cpu backend, whose
    fragments are whole arrays, runs it; it did before this rule too.)"""
    @T.prim_func
    def main(M: T.Tensor((4, 32), "float32"), O: T.Tensor((4, 31), "float32")):
        with T.Kernel(1, threads=32):
            mix = T.alloc_fragment((4, 32), "float32")
            o = T.alloc_fragment((4, 31), "float32")
            T.annotate_layout({mix: T.Fragment((4, 32), lambda i, j: (j, i))})
            T.copy(M, mix)
            for i, j in T.Parallel(4, 31):
                o[i, j] = mix[i, j + 1]
            T.copy(o, O)

    with pytest.raises(LayoutError, match=r"'mix'.*is held by thread"):
        run(path, main, M=np.zeros((4, 32), np.float32), O=np.zeros((4, 31), np.float32))


def window_store(rows, a, threads=64):
    """``mix[i, j + a] = 2 * mix[i, j]``: a store through a window of a row-per-thread fragment
    (TileKernels' mHC backward writes its gradient's column ranges so; was refused)."""
    cols = 3 * a

    @T.prim_func
    def main(M: T.Tensor((rows, cols), "float32"), O: T.Tensor((rows, cols), "float32")):
        with T.Kernel(1, threads=threads):
            mix = T.alloc_fragment((rows, cols), "float32")
            T.annotate_layout({mix: T.Fragment((rows, cols), lambda i, j: (i % 32, i // 32 * cols + j))})
            T.copy(M, mix)
            for i, j in T.Parallel(rows, a):
                mix[i, j + a] = mix[i, j] * 2.0
            T.copy(mix, O)

    return main


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("rows,a", [(32, 4), (64, 2)])
def test_a_store_through_a_window_of_the_threads_own_row(path, rows, a):
    m = np.random.default_rng(rows + a).standard_normal((rows, 3 * a)).astype(np.float32)
    out = run(path, window_store(rows, a), M=m, O=np.zeros_like(m))["O"]
    expected = m.copy()
    expected[:, a:2 * a] = 2 * m[:, :a]
    np.testing.assert_array_equal(out, expected)
