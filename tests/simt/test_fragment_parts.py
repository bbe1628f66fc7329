"""T.copy of part of a fragment (TileLang's rule; was refused): ``acc_o[:valid_h, :]`` to shared
(its GQA decoding epilogue), a global tile into some rows of a fragment, and ``lse[k, :]`` from a
fragment every thread holds whole into another (its MHA inference combine). Each thread moves
the elements of its own registers that lie inside the part; the rest stay as they were.
Generated cases on cpu and every SIMT interpreter against float64."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tilelang_core.language as T
from tilelang_core.errors import LayoutError
from tilelang_core.testing.oracle import PATHS, lower, run


def part_to_memory(rows, cols, r0, h, c0, w, threads, via_shared):
    @T.prim_func
    def main(A: T.Tensor((rows, cols), "float32"), Out: T.Tensor((h, w), "float32")):
        with T.Kernel(1, threads=threads):
            f = T.alloc_fragment((rows, cols), "float32")
            S = T.alloc_shared((h, w), "float32")
            for i, j in T.Parallel(rows, cols):
                f[i, j] = A[i, j] * 2.0
            if via_shared:
                T.copy(f[r0:r0 + h, c0:c0 + w], S)
                T.copy(S, Out)
            else:
                T.copy(f[r0:r0 + h, c0:c0 + w], Out)

    return main


def memory_to_part(rows, cols, r0, h, threads):
    @T.prim_func
    def main(A: T.Tensor((h, cols), "float32"), Out: T.Tensor((rows, cols), "float32")):
        with T.Kernel(1, threads=threads):
            f = T.alloc_fragment((rows, cols), "float32")
            T.fill(f, -1.0)
            T.copy(A, f[r0:r0 + h, :])
            T.copy(f, Out)

    return main


def combine(ns, bm, threads):
    @T.prim_func
    def main(L: T.Tensor((ns, bm), "float32"), Out: T.Tensor((bm,), "float32")):
        with T.Kernel(1, threads=threads):
            lse = T.alloc_fragment((ns, bm), "float32")
            part = T.alloc_fragment((bm,), "float32")
            acc = T.alloc_fragment((bm,), "float32")
            T.copy(L, lse)
            T.clear(acc)
            for k in T.serial(ns):
                T.copy(lse[k, :], part)
                for i in T.Parallel(bm):
                    acc[i] += part[i] * (k + 1)
            T.copy(acc, Out)

    return main


THREADS = st.sampled_from([32, 64])


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=3, deadline=None)
@given(rows=st.integers(1, 8), cols=st.sampled_from([4, 8, 16]), data=st.data(), threads=THREADS,
       via_shared=st.booleans(), seed=st.integers(0, 999))
def test_part_of_a_fragment_to_memory(path, rows, cols, data, threads, via_shared, seed):
    r0 = data.draw(st.integers(0, rows - 1))
    h = data.draw(st.integers(1, rows - r0))
    c0 = data.draw(st.integers(0, cols - 1))
    w = data.draw(st.integers(1, cols - c0))
    a = np.random.default_rng(seed).standard_normal((rows, cols)).astype(np.float32)
    out = run(path, part_to_memory(rows, cols, r0, h, c0, w, threads, via_shared), A=a,
              Out=np.full((h, w), np.nan, np.float32))
    np.testing.assert_array_equal(out["Out"], (a * 2)[r0:r0 + h, c0:c0 + w])


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=3, deadline=None)
@given(rows=st.integers(1, 8), cols=st.sampled_from([4, 16]), data=st.data(), threads=THREADS,
       seed=st.integers(0, 999))
def test_memory_into_part_of_a_fragment(path, rows, cols, data, threads, seed):
    r0 = data.draw(st.integers(0, rows - 1))
    h = data.draw(st.integers(1, rows - r0))
    a = np.random.default_rng(seed).standard_normal((h, cols)).astype(np.float32)
    out = run(path, memory_to_part(rows, cols, r0, h, threads), A=a, Out=np.full((rows, cols), np.nan, np.float32))
    expected = np.full((rows, cols), -1.0, np.float32)
    expected[r0:r0 + h] = a
    np.testing.assert_array_equal(out["Out"], expected)


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=3, deadline=None)
@given(ns=st.integers(1, 4), bm=st.sampled_from([8, 32]), threads=THREADS, seed=st.integers(0, 999))
def test_row_of_a_fragment_into_another(path, ns, bm, threads, seed):
    lse = np.random.default_rng(seed).standard_normal((ns, bm)).astype(np.float32)
    out = run(path, combine(ns, bm, threads), L=lse, Out=np.full(bm, np.nan, np.float32))
    weights = np.arange(1, ns + 1, dtype=np.float64)[:, None]
    np.testing.assert_allclose(out["Out"], (lse.astype(np.float64) * weights).sum(0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("path", [p for p in PATHS if p != "cpu"])
def test_part_of_a_spread_gemm_accumulator_into_a_fragment_is_refused(path):
    @T.prim_func
    def main(A: T.Tensor((32, 32), "float16"), B: T.Tensor((32, 32), "float16"), Out: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=128):
            a = T.alloc_shared((32, 32), "float16")
            b = T.alloc_shared((32, 32), "float16")
            c = T.alloc_fragment((32, 32), "float32")
            row = T.alloc_fragment((32,), "float32")
            T.copy(A, a)
            T.copy(B, b)
            T.gemm(a, b, c, clear_accum=True)
            T.copy(c[3, :], row)
            T.copy(row, Out)

    # (the copy is the T.Parallel loop over the part: transform/element_copies.py)
    with pytest.raises(LayoutError, match=r"fragment 'c' is indexed with \['3', 'e0'\].*held by thread"):
        lower(path, main)
