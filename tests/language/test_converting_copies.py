"""T.copy that changes the dtype between global and shared memory: vectorized (a vector load, a
vector cast, a vector store per 2 or 4 elements) where rows are aligned, element-wise where not,
with TileLang's zero padding past a ragged source. Every reference path against numpy, on
generated shapes; the CUDA source pairs the conversions (backends/cuda/tests/test_vector_casts.py)."""

import numpy as np
from hypothesis import given, settings, strategies as st

import tilelang_core.language as T
from tilelang_core.testing.oracle import PATHS, run

PAIRS = [("float32", "float16"), ("float16", "float32"), ("int32", "float32"), ("float16", "int32")]


def converting_copy(M, N, bM, bN, src, dst, via):
    pM, pN = -(-M // bM) * bM, -(-N // bN) * bN

    @T.prim_func
    def convert(A: T.Tensor((M, N), src), B: T.Tensor((pM, pN), dst)):
        with T.Kernel(pN // bN, pM // bM, threads=64) as (bx, by):
            if via == "global":
                T.copy(A[by * bM:(by + 1) * bM, bx * bN:(bx + 1) * bN], B[by * bM:(by + 1) * bM, bx * bN:(bx + 1) * bN])
            else:
                s = T.alloc_shared((bM, bN), dst)
                T.copy(A[by * bM:(by + 1) * bM, bx * bN:(bx + 1) * bN], s)
                T.copy(s, B[by * bM:(by + 1) * bM, bx * bN:(bx + 1) * bN])

    return convert, (pM, pN)


@settings(max_examples=24, deadline=None)
@given(M=st.integers(1, 40), N=st.sampled_from([1, 2, 6, 8, 64, 66]), bM=st.sampled_from([1, 4, 16]),
       bN=st.sampled_from([2, 4, 32]), pair=st.sampled_from(PAIRS), via=st.sampled_from(["global", "shared"]),
       path=st.sampled_from(PATHS), seed=st.integers(0, 1000))
def test_converting_copy_matches_numpy(M, N, bM, bN, pair, via, path, seed):
    src, dst = pair
    kernel, (pM, pN) = converting_copy(M, N, bM, bN, src, dst, via)
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal((M, N)) * 100).astype(src)
    b = np.full((pM, pN), 7, dst)
    run(path, kernel, A=a, B=b)
    want = np.zeros((pM, pN), dst)
    want[:M, :N] = a.astype(dst)
    np.testing.assert_array_equal(b, want)


def test_aligned_converting_copy_is_one_vector_per_thread_step():
    """The lowering itself, not only its numbers: 64 x 4 lanes over 64 threads, no element loop."""
    from tilelang_core.testing.oracle import lower

    kernel, _ = converting_copy(16, 64, 16, 64, "float32", "float16", "global")
    script = lower("cuda:sm_80", kernel).script()
    assert "T.vectorized(4)" in script and "T.Cast(\"float16\"" in script
