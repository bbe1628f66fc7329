"""A slice whose bounds are names bound in the kernel body (``kv_start:kv_end`` with
``kv_end = kv_start + 64`` spelled out, TileLang's MLA decode) has the constant extent the names
give it, so the planner sees a 64-row tile; a bound that reads memory is not looked through."""

import numpy as np
import pytest
import tilelang_core.language as T
from tilelang_core.errors import LoweringError
from tilelang_core.ir import Copy
from tilelang_core.ir import region as R
from tilelang_core.testing.oracle import PATHS, run

from language_irutil import tile_ops


def split_rows(N, rows, splits, through_memory=False):
    per = N // splits

    @T.prim_func
    def k(A: T.Tensor((N, 8), "float32"), Out: T.Tensor((N, 8), "float32"), Off: T.Tensor((1,), "int32")):
        with T.Kernel(splits, threads=32) as bz:
            s = T.alloc_shared((rows, 8), "float32")
            base = T.alloc_var("int32", Off[0])
            for i in T.serial(per // rows):
                if through_memory:
                    start = base + bz * per + i * rows
                    end = base + bz * per + (i + 1) * rows
                else:
                    start = (N // splits) * bz + i * rows
                    end = (N // splits) * bz + (i + 1) * rows
                T.copy(A[start:end, :], s)
                for r, c in T.Parallel(rows, 8):
                    s[r, c] = s[r, c] * 2.0
                T.copy(s, Out[start:end, :])

    return k


def copy_extents(func):
    return [[R.as_int(e) for e in R.extents_of(op.src)] for op in tile_ops(func) if isinstance(op, Copy)]


def test_bounds_bound_in_the_body_give_a_constant_extent():
    assert copy_extents(split_rows(256, 16, 2)) == [[16, 8], [16, 8]]


def test_bounds_that_read_memory_are_not_looked_through():
    # base is a T.alloc_var: its value could change between the two names' bindings
    assert copy_extents(split_rows(256, 16, 2, through_memory=True))[0][0] is None


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("through_memory", [False, True])
def test_split_copies_move_the_right_rows(path, through_memory):
    a = np.random.default_rng(3).standard_normal((64, 8)).astype(np.float32)
    out = np.full((64, 8), np.nan, np.float32)
    if path == "cpu" and through_memory:  # the cpu backend needs equal extents; says so
        with pytest.raises(LoweringError, match="extents differ"):
            run(path, split_rows(64, 8, 2, through_memory), A=a, Out=out, Off=np.zeros(1, np.int32))
        return
    run(path, split_rows(64, 8, 2, through_memory), A=a, Out=out, Off=np.zeros(1, np.int32))
    np.testing.assert_array_equal(out, a * 2)
