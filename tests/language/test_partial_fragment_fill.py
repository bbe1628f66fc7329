"""``T.fill`` / ``T.clear`` of part of a fragment (TileLang's ``T.clear(C_local[:bM, :bK])``, its
alias test): each thread sets the registers that lie inside the part, the rest keep their values.
Every reference path against numpy; generated regions on cpu and the sm_80 interpreter."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tilelang_core.language as T
from tilelang_core.testing.oracle import PATHS, run


def fill_part(M, N, r0, r1, c0, c1, value, threads=64):
    @T.prim_func
    def part(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=threads):
            c = T.alloc_fragment((M, N), "float32")
            T.copy(A, c)
            T.fill(c[r0:r1, c0:c1], value)
            for i, j in T.Parallel(M, N):
                C[i, j] = c[i, j] * 2.0

    return part


def check(path, M, N, r0, r1, c0, c1, value):
    a = np.random.default_rng(M * N + r0).standard_normal((M, N)).astype(np.float32)
    want = a.astype(np.float64)
    want[r0:r1, c0:c1] = value
    out = run(path, fill_part(M, N, r0, r1, c0, c1, value), A=a, C=np.full((M, N), np.nan, np.float32))
    np.testing.assert_array_equal(out["C"], (want * 2).astype(np.float32))


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("M,N,r0,r1,c0,c1", [(32, 48, 4, 20, 8, 40), (32, 48, 0, 32, 0, 8), (16, 16, 5, 6, 0, 16),
                                             (64, 8, 0, 64, 3, 4)])
def test_fill_of_a_part_sets_only_that_part(path, M, N, r0, r1, c0, c1):
    check(path, M, N, r0, r1, c0, c1, 7.0)


@settings(max_examples=12, deadline=None)
@given(M=st.sampled_from([8, 16, 32]), N=st.sampled_from([8, 24, 64]), data=st.data(),
       path=st.sampled_from(["cpu", "cuda:sm_80"]))
def test_generated_parts(M, N, data, path):
    r0 = data.draw(st.integers(0, M - 1))
    r1 = data.draw(st.integers(r0 + 1, M))
    c0 = data.draw(st.integers(0, N - 1))
    c1 = data.draw(st.integers(c0 + 1, N))
    check(path, M, N, r0, r1, c0, c1, -3.5)
