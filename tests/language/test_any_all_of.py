"""T.any_of / T.all_of over a buffer or a slice of its last dimension, on every reference path,
against numpy on random masks (bool and integer elements), and their refusals."""

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core import FrontendError
from tilelang_core.testing.oracle import PATHS, run


def block_flags(rows, width, dtype):
    @T.prim_func
    def flags(Mask: T.Tensor((rows, width), dtype), Any: T.Tensor((rows,), "int32"),
              All: T.Tensor((rows,), "int32"), Whole: T.Tensor((2,), "int32")):
        with T.Kernel(rows, threads=32) as bx:
            if T.any_of(Mask[bx, :]):
                Any[bx] = 1
            if T.all_of(Mask[bx, 0:width]):
                All[bx] = 1
            if bx == 0:
                Whole[0] = T.if_then_else(T.any_of(Mask), 1, 0)
                Whole[1] = T.if_then_else(T.all_of(Mask), 1, 0)

    return flags


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", ["bool", "int32", "float32"])
def test_any_and_all_of_rows_match_numpy(path, dtype):
    rng = np.random.default_rng(5)
    rows, width = 9, 3
    mask = rng.random((rows, width)) < 0.45
    mask[0] = True  # one row all true, one all false, the rest mixed
    mask[1] = False
    values = mask.astype(np.bool_ if dtype == "bool" else dtype) * (1 if dtype == "bool" else 7)
    out = run(path, block_flags(rows, width, dtype), Mask=values.astype(np.bool_ if dtype == "bool" else dtype),
              Any=np.zeros(rows, np.int32), All=np.zeros(rows, np.int32), Whole=np.zeros(2, np.int32))
    np.testing.assert_array_equal(out["Any"], mask.any(1).astype(np.int32))
    np.testing.assert_array_equal(out["All"], mask.all(1).astype(np.int32))
    np.testing.assert_array_equal(out["Whole"], [int(mask.any()), int(mask.all())])


def test_a_slice_of_a_leading_dimension_is_refused():
    with pytest.raises(FrontendError, match=r"only the last dimension may be a slice"):
        @T.prim_func
        def bad(Mask: T.Tensor((4, 4), "bool"), Out: T.Tensor((1,), "int32")):
            with T.Kernel(1, threads=32):
                if T.any_of(Mask[0:2, 1]):
                    Out[0] = 1


def test_a_symbolic_extent_is_refused():
    n = T.dynamic("n")
    with pytest.raises(FrontendError, match=r"not a constant"):
        @T.prim_func
        def bad(Mask: T.Tensor((n,), "bool"), Out: T.Tensor((1,), "int32")):
            with T.Kernel(1, threads=32):
                if T.all_of(Mask):
                    Out[0] = 1
