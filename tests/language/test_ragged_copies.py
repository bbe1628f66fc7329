"""T.copy from a tile that overhangs its global tensor: TileLang reads 0 past the end and writes
every destination element inside its own buffer. Found by TileLang's copy tests on the H200: the
SIMT backends skipped those elements (global -> global left a padded output uninitialized) and
the vectorized global -> global copy read past the source (an out-of-bounds access). Every
reference path against numpy, on generated shapes."""

import numpy as np
from hypothesis import given, settings, strategies as st

import tilelang_core.language as T
from tilelang_core.testing.oracle import PATHS, run


def padded_copy(M, N, bM, bN, via):
    pM, pN = -(-M // bM) * bM, -(-N // bN) * bN

    @T.prim_func
    def pad(A: T.Tensor((M, N), "float32"), B: T.Tensor((pM, pN), "float32")):
        with T.Kernel(pN // bN, pM // bM, threads=128) as (bx, by):
            if via == "global":
                T.copy(A[by * bM:(by + 1) * bM, bx * bN:(bx + 1) * bN], B[by * bM:(by + 1) * bM, bx * bN:(bx + 1) * bN])
            else:
                s = T.alloc_shared((bM, bN), "float32")
                T.copy(A[by * bM:(by + 1) * bM, bx * bN:(bx + 1) * bN], s)
                T.copy(s, B[by * bM:(by + 1) * bM, bx * bN:(bx + 1) * bN])

    return pad, (pM, pN)


@settings(max_examples=16, deadline=None)
@given(M=st.integers(1, 70), N=st.sampled_from([1, 3, 8, 64, 75]), bM=st.sampled_from([1, 16, 32]),
       bN=st.sampled_from([4, 32]), via=st.sampled_from(["global", "shared"]), path=st.sampled_from(PATHS),
       seed=st.integers(0, 1000))
def test_ragged_copy_pads_with_zero(M, N, bM, bN, via, path, seed):
    kernel, (pM, pN) = padded_copy(M, N, bM, bN, via)
    a = np.random.default_rng(seed).standard_normal((M, N)).astype(np.float32)
    b = np.full((pM, pN), np.nan, np.float32)
    run(path, kernel, A=a, B=b)
    want = np.zeros((pM, pN), np.float32)
    want[:M, :N] = a
    np.testing.assert_array_equal(b, want)
