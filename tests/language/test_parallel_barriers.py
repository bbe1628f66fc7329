"""A barrier inside a T.Parallel body splits the loop there (transform/parallel_barriers.py):
every iteration's statements before it happen before any iteration's statements after it.

Before the split this was silently wrong: the cpu backend read shared memory before anything was
stored, and a GPU block with fewer threads than iterations read slots its own later iteration
had not written yet. Numerics on cpu and every SIMT interpreter against numpy (hand-picked and
generated loop sizes and thread counts, names bound in the body and used after the barrier, nested
T.Parallel loops, several barriers); the refusals name the line."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tilelang_core as tl
import tilelang_core.language as T
from tilelang_core.errors import FrontendError
from tilelang_core.testing.oracle import PATHS, run


def reverse_in_blocks(P, threads, blocks=2):
    """Each block reverses its P elements through shared memory, the barrier inside T.Parallel."""
    N = P * blocks

    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(blocks, threads=threads) as bx:
            S = T.alloc_shared((P,), "float32")
            for i in T.Parallel(P):
                S[i] = A[bx * P + i] * 2.0
                T.sync_threads()
                B[bx * P + i] = S[P - 1 - i]

    return main


def reversed_blocks(a, P):
    return (a.astype(np.float64) * 2).reshape(-1, P)[:, ::-1].reshape(-1)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("P,threads", [(64, 128), (128, 128), (256, 128), (100, 32), (1, 32)])
def test_a_barrier_in_a_parallel_body_separates_its_phases(path, P, threads):
    a = np.random.default_rng(P + threads).standard_normal(P * 2).astype(np.float32)
    out = run(path, reverse_in_blocks(P, threads), A=a, B=np.full(P * 2, np.nan, np.float32))
    np.testing.assert_array_equal(out["B"], reversed_blocks(a, P))


@settings(max_examples=16, deadline=None)
@given(P=st.integers(1, 300), threads=st.sampled_from([32, 64, 96, 128, 256]), path=st.sampled_from(PATHS),
       seed=st.integers(0, 1000))
def test_generated_loop_sizes_and_thread_counts(P, threads, path, seed):
    a = np.random.default_rng(seed).standard_normal(P * 2).astype(np.float32)
    out = run(path, reverse_in_blocks(P, threads), A=a, B=np.full(P * 2, np.nan, np.float32))
    np.testing.assert_array_equal(out["B"], reversed_blocks(a, P))


def nested_with_bindings(R, C, threads):
    """T.Parallel(R, C) with a name bound before two barriers and used after them, and a fragment
    written before the first and read after the second (TileLang's cooperative-launch shape)."""
    N = R * C

    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=threads):
            S = T.alloc_shared((N,), "float32")
            S2 = T.alloc_shared((N,), "float32")
            frag = T.alloc_fragment((N,), "float32")
            for i, j in T.Parallel(R, C):
                k = i * C + j
                mirrored = N - 1 - k
                frag[k] = A[k] + 1.0
                S[k] = A[k]
                T.sync_threads()
                S2[k] = S[mirrored] + S[k]
                T.sync_threads()
                B[k] = S2[mirrored] * frag[k]

    return main


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("R,C,threads", [(4, 32, 128), (2, 16, 64), (3, 50, 64), (1, 1, 32)])
def test_names_bound_before_the_barriers_are_bound_again_after_them(path, R, C, threads):
    N = R * C
    a = np.random.default_rng(N).standard_normal(N).astype(np.float32)
    out = run(path, nested_with_bindings(R, C, threads), A=a, B=np.full(N, np.nan, np.float32))
    x = a.astype(np.float64)
    s = x + x[::-1]  # S2[k] = A[k] + A[N - 1 - k], the same in the mirrored slot
    np.testing.assert_allclose(out["B"], s * (x + 1.0), rtol=1e-6, atol=1e-6)


def test_the_loop_becomes_one_loop_per_phase_with_the_barriers_between():
    func = nested_with_bindings(2, 16, 64)
    text = func.script()
    assert text.count("T.tvm_storage_sync") == 2
    body = func.body
    loops = []

    def on_for(loop):
        if loop.annotations is not None and "tl.parallel" in loop.annotations:
            loops.append(loop)

    import tvm_ffi
    from tvm import tirx

    tvm_ffi.structural_walk(body, [(tirx.For, on_for)])
    assert len(loops) == 6  # three phases of a two-deep nest, each with its own loop variables
    assert len({loop.loop_var.__chandle__() for loop in loops}) == 6


def refused(where):
    @T.prim_func
    def main(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            S = T.alloc_shared((64,), "float32")
            for i in T.Parallel(64):
                if where == "if":
                    S[i] = A[i]
                    if i < 32:
                        T.sync_threads()
                    B[i] = S[63 - i]
                elif where == "serial":
                    for _ in T.serial(2):
                        S[i] = A[i]
                        T.sync_threads()
                else:
                    x = A[i]
                    S[i] = x
                    T.sync_threads()
                    B[i] = S[63 - i] + x

    return main


@pytest.mark.parametrize("where,why,line", [("if", "must stand at the top level", "T.sync_threads()"),
                                            ("serial", "must stand at the top level", "T.sync_threads()"),
                                            ("load", "reads memory", "x = A[i]")])
def test_what_cannot_be_split_is_refused_at_its_line(where, why, line):
    with pytest.raises(FrontendError, match=why) as err:
        refused(where)
    assert line in str(err.value) and __file__ in str(err.value)


def test_cpu_backend_runs_the_split_loop():
    tl_kernel = tl.compile(reverse_in_blocks(256, 128), target="cpu")
    import torch

    a = torch.randn(512)
    b = torch.full((512,), float("nan"))
    tl_kernel(a, b)
    np.testing.assert_array_equal(b.numpy(), reversed_blocks(a.numpy(), 256))
