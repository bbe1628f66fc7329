"""Tile ops and T.Parallel loops under a condition on the thread index run on the threads it
selects, the whole op (TileLang's semantics: ``if tx < 128: T.copy(A, A_s)`` is a copy by threads
0..127). On the H200 this was silently half done before (TileLang's mask_op tests); here every
reference path (cpu, and the SIMT interpreters of cuda/hip/metal) runs the generated cases, and
what cannot be lowered correctly is refused with the user's line."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tilelang_core.language as T
from tilelang_core.errors import LoweringError
from tilelang_core.testing.oracle import PATHS, run

SIMT = [p for p in PATHS if p != "cpu"]


def masked_fill_of_shared(M, N, bM, bN, threads, lo, hi, form, else_form=None):
    """A tile of A into shared memory by threads [lo, hi) only, then shared -> B by all."""
    @T.macro
    def load(A, A_s, by, bx):
        if form == "copy":
            T.copy(A[by * bM, bx * bN], A_s)
        else:
            for i, k in T.Parallel(bM, bN):
                A_s[i, k] = A[by * bM + i, bx * bN + k]

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            A_s = T.alloc_shared((bM, bN), "float32")
            tx = T.get_thread_binding(0)
            if lo == 0:
                if tx < hi:
                    load(A, A_s, by, bx)
            elif hi == threads:
                if tx >= lo:
                    load(A, A_s, by, bx)
            else:
                if tx >= lo and tx < hi:
                    load(A, A_s, by, bx)
            T.copy(A_s, B[by * bM, bx * bN])

    return main


def branches(M, N, threads, split):
    """then: threads [0, split) copy A -> B; else: threads [split, threads) fill C with 2."""
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=threads) as _:
            tx = T.get_thread_binding()
            if tx < split:
                T.copy(A, B)
            else:
                for i, j in T.Parallel(M, N):
                    C[i, j] = A[i, j] * 2.0

    return main


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("form", ["copy", "parallel"])
@pytest.mark.parametrize("lo, hi", [(0, 128), (128, 256), (64, 96), (0, 1), (255, 256)])
def test_tile_op_under_a_thread_range_covers_the_whole_tile(path, form, lo, hi):
    M, N, bM, bN = 40, 24, 16, 16  # ragged: the last tiles run past A's edges
    a = np.random.default_rng(lo + hi).standard_normal((M, N)).astype(np.float32)
    b = np.zeros((M, N), np.float32)
    out = run(path, masked_fill_of_shared(M, N, bM, bN, 256, lo, hi, form), A=a, B=b)
    np.testing.assert_array_equal(out["B"], a)


@pytest.mark.parametrize("path", PATHS)
def test_each_branch_of_a_thread_condition_gets_its_own_group(path):
    M, N = 9, 7
    a = np.random.default_rng(3).standard_normal((M, N)).astype(np.float32)
    out = run(path, branches(M, N, 128, 32), A=a, B=np.zeros_like(a), C=np.zeros_like(a))
    np.testing.assert_array_equal(out["B"], a)
    np.testing.assert_array_equal(out["C"], a * 2)


@settings(max_examples=12, deadline=None)
@given(threads=st.sampled_from([32, 64, 128]), data=st.data(),
       path=st.sampled_from(PATHS), form=st.sampled_from(["copy", "parallel"]))
def test_generated_thread_ranges_match_the_oracle(threads, data, path, form):
    lo = data.draw(st.integers(0, threads - 1))
    hi = data.draw(st.integers(lo + 1, threads))
    M = data.draw(st.integers(1, 20))
    N = data.draw(st.integers(1, 20))
    a = np.random.default_rng(M * N).standard_normal((M, N)).astype(np.float32)
    out = run(path, masked_fill_of_shared(M, N, 8, 8, threads, lo, hi, form), A=a, B=np.zeros_like(a))
    np.testing.assert_array_equal(out["B"], a)


def test_a_thread_condition_that_is_not_one_range_is_refused():
    @T.prim_func
    def bad(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128) as _:
            tx = T.get_thread_binding()
            if tx % 2 == 0:
                T.copy(A, B)

    for path in PATHS:
        with pytest.raises(LoweringError, match=r"does not select one range|condition that encloses"):
            run(path, bad, A=np.zeros(64, np.float32), B=np.zeros(64, np.float32))


@pytest.mark.parametrize("path", SIMT)
def test_fragments_under_a_thread_condition_are_refused(path):
    @T.prim_func
    def bad(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128) as _:
            tx = T.get_thread_binding()
            frag = T.alloc_fragment((64,), "float32")
            if tx < 64:
                T.copy(A, frag)
            T.copy(frag, B)

    with pytest.raises(LoweringError, match=r"fragment.? '?frag.*\n.*test_thread_groups.py:"):
        run(path, bad, A=np.zeros(64, np.float32), B=np.zeros(64, np.float32))


@pytest.mark.parametrize("path", SIMT)
def test_a_barrier_inside_a_thread_group_is_the_groups_own(path):
    """cuda: a barrier among the group's threads (named barrier); hip and metal have none."""
    @T.prim_func
    def k(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128) as _:
            tx = T.get_thread_binding()
            s = T.alloc_shared((64,), "float32")
            if tx < 64:
                T.copy(A, s)
                T.copy(s, B)  # reads what other threads of the group wrote

    a = np.random.default_rng(1).standard_normal(64).astype(np.float32)
    if not path.startswith("cuda"):
        with pytest.raises(LoweringError, match=r"group of 64 threads.*need a barrier.*has no barrier over a group"):
            run(path, k, A=a, B=np.zeros(64, np.float32))
        return
    np.testing.assert_array_equal(run(path, k, A=a, B=np.zeros(64, np.float32))["B"], a)


@pytest.mark.parametrize("path", PATHS)
def test_two_branches_in_sequence_get_the_barrier_between_them(path):
    @T.prim_func
    def ok(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128) as _:
            tx = T.get_thread_binding()
            s = T.alloc_shared((64,), "float32")
            if tx < 64:
                T.copy(A, s)
            if tx >= 64:
                T.copy(s, B)

    a = np.arange(64, dtype=np.float32)
    np.testing.assert_array_equal(run(path, ok, A=a, B=np.zeros_like(a))["B"], a)


@pytest.mark.parametrize("path", PATHS)
def test_per_thread_code_in_a_group_branch_stays_per_thread(path):
    """A store that uses tx next to a tile op in the same branch: only the selected threads
    store, the copy is whole."""
    @T.prim_func
    def mixed(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32"), C: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as _:
            tx = T.get_thread_binding()
            if tx >= 32 and tx < 96:
                T.copy(A, B)
                C[tx] = 1.0

    a = np.arange(64, dtype=np.float32)
    out = run(path, mixed, A=a, B=np.zeros_like(a), C=np.zeros(128, np.float32))
    np.testing.assert_array_equal(out["B"], a)
    expected = np.zeros(128, np.float32)
    expected[32:96] = 1
    np.testing.assert_array_equal(out["C"], expected)


def test_the_kernels_own_barriers_order_what_is_around_them():
    """The scan's T.sync_threads(3, 128) are its barriers: none is added beside them (one used
    to be, a block barrier inside 'if tx < 128', which the other 128 threads never reach)."""
    from fidelity_kernels import suffix_sums
    from tilelang_core.testing.oracle import lower

    text = lower("cuda:sm_80", suffix_sums(128, 256)).script()
    assert text.count("tvm_storage_sync") == 1 and text.count("tl_named_barrier") == 3


@pytest.mark.parametrize("path", ["cuda:sm_80"])
def test_a_barrier_a_group_needs_under_a_per_thread_condition_is_refused(path):
    """Inside the threads 0..63 of 'if tx < 64', a barrier counting all 64 would hang where
    'if A[tx] > 0' leaves some of them out (TileLang's sparse MLA producer, 'if is_kv_valid[...]')."""
    @T.prim_func
    def bad(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128) as _:
            tx = T.get_thread_binding()
            s = T.alloc_shared((64,), "float32")
            t = T.alloc_shared((64,), "float32")
            if tx < 64:
                T.copy(A, t)
                if A[tx] > 0:
                    s[tx] = A[tx]
                    B[tx] = s[tx ^ 1]  # another thread's element: needs a barrier the others skip

    with pytest.raises(LoweringError, match="inside an 'if' whose condition depends on the thread needs a "
                                            "barrier(.|\n)*test_thread_groups.py"):
        run(path, bad, A=np.ones(64, np.float32), B=np.zeros(64, np.float32))
