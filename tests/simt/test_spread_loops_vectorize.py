"""T.Parallel loops with no fragment to follow (global tensors in, global tensors out) are dealt over
the threads in runs of up to 16 bytes and become vector accesses (simt/transform/lower_parallel.py):
the runs' indices are simplified under the lane's range before the checks ((lo * 4 + vi) // 4 is lo),
and a binding that only reads memory the body does not write (``x = A[i, j] * 2``) is inlined
instead of keeping the loop scalar. A binding that reads what the body writes keeps it scalar.
Numerics on every backend's interpreter and the cpu oracle against numpy; ragged shapes and an
offset start included (they stay scalar where a run is not provably aligned)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tilelang_core.language as T
from tilelang_core.testing.oracle import PATHS, lower, run


def elementwise(M, N, bm, bound=True, offset=0):
    """B[r, c] = A[r, c + offset] * 2 + 1 over (bm, N) row blocks; ``bound``: the product bound to a name."""
    @T.prim_func
    def main(A: T.Tensor((M, N + offset), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, bm), threads=128) as bx:
            for i, j in T.Parallel(bm, N):
                if bound:
                    x = A[bx * bm + i, j + offset] * 2.0
                    B[bx * bm + i, j] = x + 1.0
                else:
                    B[bx * bm + i, j] = A[bx * bm + i, j + offset] * 2.0 + 1.0

    return main


def read_what_it_writes(N):
    """x reads A, which the body then writes: the read must stay before the store."""
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=32):
            for j in T.Parallel(N):
                x = A[j]
                A[j] = x * 3.0
                B[j] = x + A[j]

    return main


def _vector_lanes(func) -> bool:
    """Whether the cuda lowering has a vectorized loop (``vi``) over the global accesses."""
    return " vi " in lower("cuda:sm_80", func).script() or "T.vectorized" in lower("cuda:sm_80", func).script()


@pytest.mark.parametrize("bound", [False, True])
def test_aligned_rows_vectorize(bound):
    assert _vector_lanes(elementwise(256, 256, 64, bound))


def test_an_unaligned_start_stays_scalar():
    assert not _vector_lanes(elementwise(256, 256, 64, offset=1))


def test_a_binding_of_memory_the_body_writes_stays_scalar():
    assert not _vector_lanes(read_what_it_writes(256))


@pytest.mark.parametrize("path", PATHS)
def test_a_binding_of_memory_the_body_writes_reads_it_first(path):
    a = np.random.default_rng(1).standard_normal(256).astype(np.float32)
    out = run(path, read_what_it_writes(256), A=a.copy(), B=np.zeros(256, np.float32))
    np.testing.assert_allclose(out["A"], a * 3, rtol=1e-6)
    np.testing.assert_allclose(out["B"], a + a * 3, rtol=1e-6)


@settings(max_examples=8, deadline=None)
@given(M=st.integers(1, 70), N=st.sampled_from([4, 12, 64, 100, 256]), bound=st.booleans(),
       offset=st.sampled_from([0, 1, 4]), path=st.sampled_from(PATHS), seed=st.integers(0, 99))
def test_elementwise_numerics(M, N, bound, offset, path, seed):
    a = np.random.default_rng(seed).standard_normal((M, N + offset)).astype(np.float32)
    b = np.full((M, N), np.nan, np.float32)
    got = run(path, elementwise(M, N, 16, bound, offset), A=a, B=b)["B"]
    np.testing.assert_allclose(got, a[:, offset:].astype(np.float64) * 2 + 1, rtol=1e-6, atol=1e-6)
