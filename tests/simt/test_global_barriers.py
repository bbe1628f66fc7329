"""Block-wide statements that hand data to each other through global memory get a barrier between
them (simt/transform/insert_barriers.py): a T.Parallel loop that reads what an earlier one wrote
reads other threads' elements (each loop's layout is its own), and without a barrier the GPU may
read them before they are written. Before, two such loops ran back to back with nothing between
(a silent race: the interpreters, which run a statement for every thread before the next, could
not show it). The barrier orders global memory on each backend (Metal's threadgroup barrier does
not, so it gets one that does); read-only inputs, atomics against atomics and each thread's own
code under a branch on the thread get none."""

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core.testing.oracle import PATHS, lower, run

SIMT = PATHS[1:]  # the paths with threads: cuda, hip (two archs), metal


def barriers(func_text: str) -> int:
    return func_text.count("tvm_storage_sync") + func_text.count("tl_sync_threads_device")


def handoff(P=256, threads=256):
    """B = 2 A in one T.Parallel loop, C = B reversed in the next: every element crosses threads."""
    @T.prim_func
    def main(A: T.Tensor((P,), "float32"), B: T.Tensor((P,), "float32"), C: T.Tensor((P,), "float32")):
        with T.Kernel(1, threads=threads):
            for i in T.Parallel(P):
                B[i] = A[i] * 2.0
            for i in T.Parallel(P):
                C[i] = B[P - 1 - i]

    return main


@pytest.mark.parametrize("path", SIMT)
def test_a_loop_reading_what_an_earlier_one_wrote_waits_for_it(path):
    text = lower(path, handoff()).script()
    assert barriers(text) == 1
    barrier = "tl_sync_threads_device" if path.startswith("metal") else "tvm_storage_sync"
    assert text.index("B[") < text.index(barrier) < text.rindex("C[")  # after B's stores, before C's


def test_metal_gets_a_barrier_that_orders_device_memory():
    text = lower("metal:apple7", handoff()).script()
    assert "tl_sync_threads_device" in text and "tvm_storage_sync" not in text


@pytest.mark.parametrize("path", PATHS)
def test_the_handoff_computes_the_reversal(path):
    a = np.random.default_rng(0).standard_normal(256).astype(np.float32)
    out = run(path, handoff(), A=a, B=np.zeros(256, np.float32), C=np.zeros(256, np.float32))
    np.testing.assert_array_equal(out["C"], (a.astype(np.float64) * 2)[::-1])


def needs_none(kind):
    @T.prim_func
    def main(A: T.Tensor((256,), "float32"), B: T.Tensor((256,), "float32"), C: T.Tensor((256,), "float32"),
             N: T.Tensor((4,), "int32")):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding()
            if kind == "reads":  # A is only read: nothing to order
                for i in T.Parallel(256):
                    B[i] = A[i]
                for i in T.Parallel(256):
                    C[i] = A[255 - i]
            elif kind == "atomics":  # atomics don't race with atomics
                for i in T.Parallel(256):
                    T.atomic_add(N[i % 4], 1)
                for i in T.Parallel(256):
                    T.atomic_add(N[(i + 1) % 4], 2)
            else:  # one thread's own accesses, in its own order
                if tx == 0:
                    N[0] = 5
                    N[1] = N[0] + 1

    return main


@pytest.mark.parametrize("path", SIMT)
@pytest.mark.parametrize("kind", ["reads", "atomics", "own"])
def test_no_barrier_where_nothing_crosses_threads(path, kind):
    assert barriers(lower(path, needs_none(kind)).script()) == 0


def iterated(steps=3, P=128):
    """Each step reverses B into A through global memory: the next step's first loop reads A,
    which the last loop of this one wrote from other threads."""
    @T.prim_func
    def main(A: T.Tensor((P,), "float32"), B: T.Tensor((P,), "float32")):
        with T.Kernel(1, threads=128):
            for _ in T.serial(steps):
                for i in T.Parallel(P):
                    B[i] = A[i] + 1.0
                for i in T.Parallel(P):
                    A[i] = B[P - 1 - i]

    return main


@pytest.mark.parametrize("path", SIMT)
def test_a_loop_whose_next_iteration_reads_this_ones_writes_ends_with_a_barrier(path):
    text = lower(path, iterated()).script()
    assert barriers(text) == 2  # between the two loops, and at the end of each step


@pytest.mark.parametrize("path", PATHS)
def test_iterated_reversals_compute_what_numpy_does(path):
    a = np.random.default_rng(1).standard_normal(128).astype(np.float32)
    out = run(path, iterated(), A=a.copy(), B=np.zeros(128, np.float32))
    want = a.astype(np.float64)
    for _ in range(3):
        want = (want + 1.0)[::-1]
    np.testing.assert_allclose(out["A"], want, rtol=1e-6, atol=1e-6)
