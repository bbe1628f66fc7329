"""TileLang's iteration domain for a copy whose regions differ (ir/ops.py ``_narrow_to_domain``):
where the source sets the domain (its memory level is the destination's or lower: registers <
shared < global) and its region fits in the destination's, it is copied to the start of the
destination's region; every other mismatch is refused. Every reference path against numpy."""

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core.errors import FrontendError
from tilelang_core.testing.oracle import PATHS, run

RNG = np.random.default_rng(23)


def global_to_global(M=16, N=8):
    @T.prim_func
    def kernel(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=32):
            T.copy(A[:, :2], B[:, :3])  # two columns: the source's region

    return kernel


def fragment_to_global(M=16, N=8):
    @T.prim_func
    def kernel(A: T.Tensor((M, 4), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=32):
            f = T.alloc_fragment((M, 4), "float32")
            T.copy(A, f)
            T.copy(f, B[:, 1:7])  # the fragment's four columns, from column 1

    return kernel


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("build, a_cols, copied, source_cols", [
    (global_to_global, 8, slice(0, 2), slice(0, 2)),   # global -> global: the source's 2 columns
    (fragment_to_global, 4, slice(1, 5), slice(0, 4)),  # fragment -> global columns 1..: its 4
])
def test_a_smaller_source_goes_to_the_start_of_the_destination(path, build, a_cols, copied, source_cols):
    a = RNG.standard_normal((16, a_cols)).astype(np.float32)
    b = np.zeros((16, 8), np.float32)
    run(path, build(), A=a, B=b)
    want = np.zeros_like(b)
    want[:, copied] = a[:, source_cols]
    np.testing.assert_array_equal(b, want)


def test_other_mismatches_are_refused():
    with pytest.raises(FrontendError, match="T.copy shape mismatch"):
        @T.prim_func
        def larger_source(A: T.Tensor((16, 8), "float32"), B: T.Tensor((16, 8), "float32")):
            with T.Kernel(1, threads=32):
                T.copy(A[:, :3], B[:, :2])  # would write a third column past B's region

    with pytest.raises(FrontendError, match="T.copy shape mismatch"):
        @T.prim_func
        def smaller_fragment(A: T.Tensor((16, 8), "float32"), B: T.Tensor((16, 4), "float32")):
            with T.Kernel(1, threads=32):
                f = T.alloc_fragment((16, 4), "float32")
                T.copy(A[:, 1:7], f)  # the fragment sets the domain, smaller than the source: TileLang refuses
                T.copy(f, B)
