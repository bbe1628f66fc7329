"""A slice of the last dimension stored into a slice (``A[0, 4:8] = A[0, 0:4]``): one vector load and
one vector store, on every reference path; a slice that is not a vector (two non-unit dimensions)
is refused with the line and T.copy named; a vector access that cannot be proved aligned is
refused on the GPU paths (it would fault). A name bound to a slice (``b = A[0, 0:4]``) is the
region, read where it is used (T.copy takes it); TileLang reads such a name where it is bound, so
storing through it (``A[0, 4:8] = b``, TileLang's let test) is refused rather than read late."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tilelang_core.language as T
from tilelang_core.errors import FrontendError, LoweringError
from tilelang_core.testing.oracle import PATHS, lower, run


def slice_copy(lanes, src_row, src_col, dst_row, dst_col):
    @T.prim_func
    def main(A: T.Tensor((8, 32), "float32")):
        with T.Kernel(1, threads=64):
            A[dst_row, dst_col:dst_col + lanes] = A[src_row, src_col:src_col + lanes]

    return main


@settings(max_examples=20, deadline=None)
@given(lanes=st.sampled_from([1, 2, 4]), rows=st.tuples(st.integers(0, 7), st.integers(0, 7)),
       cols=st.tuples(st.integers(0, 7), st.integers(0, 7)), path=st.sampled_from(PATHS))
def test_aligned_slice_stores_copy_the_lanes(lanes, rows, cols, path):
    src_col, dst_col = cols[0] * lanes, cols[1] * lanes  # aligned to the vector
    a = np.random.default_rng(0).standard_normal((8, 32)).astype(np.float32)
    want = a.copy()
    want[rows[1], dst_col:dst_col + lanes] = a[rows[0], src_col:src_col + lanes]
    run(path, slice_copy(lanes, rows[0], src_col, rows[1], dst_col), A=a)
    np.testing.assert_array_equal(a, want)


def test_a_slice_of_two_dimensions_is_not_a_vector():
    with pytest.raises(FrontendError, match=r"A\[0:2, 0:4\] is not a vector value.*T.copy") as info:
        @T.prim_func
        def bad(A: T.Tensor((8, 32), "float32")):
            with T.Kernel(1, threads=64):
                A[4:6, 0:4] = A[0:2, 0:4]
    assert info.value.lineno is not None


def test_an_unaligned_vector_is_refused_on_the_gpu_paths():
    func = slice_copy(4, 0, 1, 1, 3)
    a = np.random.default_rng(0).standard_normal((8, 32)).astype(np.float32)
    want = a.copy()
    want[1, 3:7] = a[0, 1:5]
    run("cpu", func, A=a)  # the cpu backend loads the lanes one by one where they are unaligned
    np.testing.assert_array_equal(a, want)
    with pytest.raises(LoweringError, match="cannot be proved aligned"):
        lower("cuda:sm_80", func)


def test_a_slice_stored_through_a_name_is_refused():
    with pytest.raises(FrontendError, match="read where it is used.*store the slice itself"):
        @T.prim_func
        def late(A: T.Tensor((8, 32), "float32")):
            with T.Kernel(1, threads=64):
                b = A[0, 0:4]
                A[0, 0:4] = A[1, 0:4]  # TileLang's b still holds the old values here
                A[2, 0:4] = b


def test_a_name_bound_to_a_slice_is_still_a_region_for_tile_ops():
    @T.prim_func
    def rows(A: T.Tensor((8, 32), "float32"), B: T.Tensor((8, 32), "float32")):
        with T.Kernel(1, threads=64):
            row = A[3, 0:32]
            T.copy(row, B[5, 0:32])

    a = np.random.default_rng(1).standard_normal((8, 32)).astype(np.float32)
    b = np.zeros((8, 32), np.float32)
    run("cpu", rows, A=a, B=b)
    np.testing.assert_array_equal(b[5], a[3])

