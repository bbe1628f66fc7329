"""A T.Parallel loop that follows a fragment held by several threads (replicas: 64 elements over
128 threads) stores to shared or global memory from one replica only, as TileLang's parallel
loops do. Each replica storing the same value was harmless, but a read-modify-write
(``A[i] = A[i] + frag[i]``) done by every replica is a race on the GPU: a second replica could
read the first one's result and add again (the SIMT interpreter runs lanes in lockstep and could
not show it; the CUDA source does). A loop that also fills fragments guards each memory store;
one that reads memory it writes while filling fragments is refused (the copies could differ).
Numerics on cpu and every SIMT interpreter."""

import numpy as np
import pytest

import tilelang_core as tl
import tilelang_core.language as T
from tilelang_core import LayoutError
from tilelang_core.testing.oracle import PATHS, run


def accumulate(n=64, threads=128):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=threads):
            frag = T.alloc_fragment((n,), "float32")
            for i in T.Parallel(n):
                frag[i] = B[i]
            for i in T.Parallel(n):
                A[i] = A[i] + frag[i]

    return main


def fill_and_store(n=64, threads=128):
    """The second loop fills a fragment (every replica) and stores to memory (one replica)."""
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32"), C: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=threads):
            frag = T.alloc_fragment((n,), "float32")
            twice = T.alloc_fragment((n,), "float32")
            for i in T.Parallel(n):
                frag[i] = B[i]
            for i in T.Parallel(n):
                twice[i] = frag[i] * 2.0
                A[i] = twice[i] + 1.0
            for i in T.Parallel(n):
                C[i] = twice[i]

    return main


def cuda_kernel(func):
    pytest.importorskip("tilelang_cuda")
    source = tl.compile(func, target="cuda:sm_90a").get_kernel_source()
    return source[source.index("__global__"):]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("n, threads", [(64, 128), (32, 128), (64, 64)])
def test_read_modify_write_through_replicas_adds_once(path, n, threads):
    rng = np.random.default_rng(n + threads)
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = run(path, accumulate(n, threads), A=a.copy(), B=b)["A"]
    np.testing.assert_allclose(out, a + b, rtol=1e-6)


def test_the_cuda_store_is_one_replicas():
    kernel = cuda_kernel(accumulate())
    guarded = kernel[kernel.index("if ("):]
    assert "(((int)threadIdx.x) >> 6) == 0" in guarded.splitlines()[0], kernel
    assert "A_ptr[" in guarded and "A_ptr[" not in kernel[:kernel.index("if (")]


@pytest.mark.parametrize("path", PATHS)
def test_fragments_fill_in_every_replica_and_memory_once(path):
    rng = np.random.default_rng(1)
    b = rng.standard_normal(64).astype(np.float32)
    out = run(path, fill_and_store(), A=np.zeros(64, np.float32), B=b, C=np.zeros(64, np.float32))
    np.testing.assert_array_equal(out["A"], 2 * b + 1)
    np.testing.assert_array_equal(out["C"], 2 * b)


def test_the_cuda_store_beside_a_fragment_fill_is_guarded():
    kernel = cuda_kernel(fill_and_store())
    store = next(line for line in kernel.splitlines() if "A_ptr[" in line and "=" in line)
    before = kernel[:kernel.index(store)].splitlines()[-1]
    assert ">> 6) == 0" in before, kernel


def test_reading_memory_it_writes_while_filling_fragments_is_refused():
    @T.prim_func
    def main(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128):
            frag = T.alloc_fragment((64,), "float32")
            acc = T.alloc_fragment((64,), "float32")
            for i in T.Parallel(64):
                frag[i] = B[i]
            for i in T.Parallel(64):
                A[i] = A[i] + frag[i]
                acc[i] = A[i]
            for i in T.Parallel(64):
                B[i] = acc[i]

    with pytest.raises(LayoutError, match="'A' is read and written in a T.Parallel loop whose elements several"):
        run("cuda:sm_80", main, A=np.zeros(64, np.float32), B=np.zeros(64, np.float32))
