"""TileLang's hand-written async loads (its minference example): ``T.Parallel(...,
prefer_async=True, annotations={"parallel_async_without_async_commit_wait": True})`` stores, then
``T.ptx_commit_group()`` and later ``T.ptx_wait_group(n)`` (language/async_groups.py). The stores
complete as written, the waits wait for the thread's async copies (none here): the numbers are
the loop's on every reference path. Unknown annotations, a layout for the loop and waits inside
T.Pipelined (whose groups the software pipeline counts) are refused."""

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core import FrontendError, LoweringError
from tilelang_core.testing.oracle import PATHS, lower, run


def prefetched_gather(N=64, D=32, stages=2):
    """O[r] = X[idx[r]] a tile of 16 rows at a time, loaded one tile ahead into a ring of
    ``stages`` shared buffers."""
    @T.prim_func
    def main(X: T.Tensor((N, D), "float32"), Idx: T.Tensor((N,), "int32"), O: T.Tensor((N, D), "float32")):
        with T.Kernel(1, threads=128):
            X_s = T.alloc_shared((stages, 16, D), "float32")
            for i, j in T.Parallel(16, D, prefer_async=True,
                                   annotations={"parallel_async_without_async_commit_wait": True}):
                X_s[0, i, j] = X[Idx[i], j]
            T.ptx_commit_group()
            for t in T.serial(N // 16):
                if t + 1 < N // 16:
                    for i, j in T.Parallel(16, D, prefer_async=True):
                        X_s[(t + 1) % stages, i, j] = X[Idx[(t + 1) * 16 + i], j]
                T.ptx_commit_group()
                T.ptx_wait_group(1)
                for i, j in T.Parallel(16, D):
                    O[t * 16 + i, j] = X_s[t % stages, i, j]
            T.ptx_wait_group(0)

    return main


@pytest.mark.parametrize("path", PATHS)
def test_prefetched_gather(path):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((64, 32)).astype(np.float32)
    idx = rng.permutation(64).astype(np.int32)
    o = np.full_like(x, np.nan)
    run(path, prefetched_gather(), X=x, Idx=idx, O=o)
    np.testing.assert_array_equal(o, x[idx])


def test_the_groups_lower_to_the_async_helpers_on_cuda():
    text = lower("cuda:sm_80", prefetched_gather()).script()
    assert text.count("tl_cp_async_commit") == 2 and "tl_cp_async_wait<1>" in text and "tl_cp_async_wait<0>" in text


@pytest.mark.parametrize("kwargs,message", [
    (dict(annotations={"parallel_loop_layout": 1}), "annotation 'parallel_loop_layout' is not supported"),
    (dict(loop_layout=object()), "loop_layout must be a T.Fragment"),
])
def test_parallel_options_we_do_not_take_are_refused(kwargs, message):
    with pytest.raises(FrontendError, match=message):
        @T.prim_func
        def main(X: T.Tensor((16,), "float32")):
            with T.Kernel(1, threads=32):
                for i in T.Parallel(16, **kwargs):
                    X[i] = 1.0


def test_a_wait_inside_t_pipelined_is_refused():
    @T.prim_func
    def main(X: T.Tensor((64,), "float32"), Y: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=32):
            s = T.alloc_shared((16,), "float32")
            for k in T.Pipelined(4, num_stages=2):
                T.copy(X[k * 16], s)
                T.ptx_wait_group(0)
                T.copy(s, Y[k * 16])

    with pytest.raises(LoweringError, match="inside T.Pipelined, whose async-copy groups the software pipeline"):
        lower("cuda:sm_80", main)


def test_wait_group_needs_a_constant_count():
    with pytest.raises(FrontendError, match="constant count of groups"):
        @T.prim_func
        def main(X: T.Tensor((16,), "float32")):
            with T.Kernel(1, threads=32) as bx:
                T.ptx_wait_group(bx)


def gathered_rows(N=32, D=64, n_valid=20):
    """Each of 128 threads moves 16 bytes of a gathered row with T.ptx_cp_async (TileLang's sparse
    MLA producer), zeros for rows past ``n_valid`` (its predicate)."""
    @T.prim_func
    def main(X: T.Tensor((N, D), "float16"), Idx: T.Tensor((N,), "int32"), O: T.Tensor((N, D), "float16")):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding()
            S = T.alloc_shared((N, D), "float16")
            for r in T.serial(N * D // 8 // 128):
                row = r * 16 + tx // 8
                T.ptx_cp_async(T.access_ptr(S[row, (tx % 8) * 8], "w", 8),
                               T.access_ptr(X[Idx[row], (tx % 8) * 8], "r", 8), 8, predicate=row < n_valid)
            T.ptx_commit_group()
            T.ptx_wait_group(0)
            T.sync_threads()
            T.copy(S, O)

    return main


@pytest.mark.parametrize("path", PATHS)
def test_ptx_cp_async_gathers_and_zero_fills(path):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((32, 64)).astype(np.float16)
    idx = rng.permutation(32).astype(np.int32)
    o = np.full_like(x, np.nan)
    run(path, gathered_rows(), X=x, Idx=idx, O=o)
    expect = x[idx].copy()
    expect[20:] = 0
    np.testing.assert_array_equal(o, expect)


@pytest.mark.parametrize("num,message", [(3, "moves 4, 8 or 16 bytes"), (0, "positive constant")])
def test_ptx_cp_async_sizes_are_checked(num, message):
    with pytest.raises(FrontendError, match=message):
        @T.prim_func
        def main(X: T.Tensor((64,), "float16"), Y: T.Tensor((64,), "float16")):
            with T.Kernel(1, threads=32):
                S = T.alloc_shared((64,), "float16")
                T.ptx_cp_async(T.access_ptr(S[0], "w"), T.access_ptr(X[0], "r"), num)


def test_wgmma_gemm_and_wait_are_a_gemm():
    @T.prim_func
    def main(A: T.Tensor((64, 32), "float16"), B: T.Tensor((32, 64), "float16"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((64, 32), "float16")
            B_s = T.alloc_shared((32, 64), "float16")
            c = T.alloc_fragment((64, 64), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.wgmma_gemm(A_s, B_s, c, clear_accum=True)
            T.wait_wgmma(0)
            T.copy(c, C)

    rng = np.random.default_rng(6)
    a = rng.standard_normal((64, 32)).astype(np.float16)
    b = rng.standard_normal((32, 64)).astype(np.float16)
    c = np.full((64, 64), np.nan, np.float32)
    run("cuda:sm_80", main, A=a, B=b, C=c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-3, atol=1e-3)


def test_cp_async_barrier_noinc_is_the_producers_arrival():
    @T.prim_func
    def main(X: T.Tensor((16, 64), "float16"), Y: T.Tensor((16, 64), "float16")):
        with T.Kernel(1, threads=256):
            tx = T.get_thread_binding()
            S = T.alloc_shared((16, 64), "float16")
            y = T.alloc_fragment((16, 64), "float16")
            ready = T.alloc_barrier(arrive_count=128)
            with T.ws(0):
                T.ptx_cp_async(T.access_ptr(S[tx // 8, (tx % 8) * 8], "w", 8),
                               T.access_ptr(X[tx // 8, (tx % 8) * 8], "r", 8), 8)
                T.cp_async_barrier_noinc(ready)
            with T.ws(1):
                T.barrier_wait(ready, 0)
                T.copy(S, y)
                T.copy(y, Y)

    x = np.random.default_rng(8).standard_normal((16, 64)).astype(np.float16)
    y = np.full_like(x, np.nan)
    run("cuda:sm_80", main, X=x, Y=y)
    np.testing.assert_array_equal(y, x)


def async_copy_rows(N=70, D=24, tile=16):
    """O = 2 * X, a tile of rows at a time through shared memory filled by ``T.async_copy`` (the
    last tile ragged: its rows past N are the copy's out-of-bounds zeros, never stored)."""
    @T.prim_func
    def main(X: T.Tensor((N, D), "float32"), O: T.Tensor((N, D), "float32")):
        with T.Kernel(T.ceildiv(N, tile), threads=64) as bx:
            X_s = T.alloc_shared((tile, D), "float32")
            T.async_copy(X[bx * tile:(bx + 1) * tile, 0:D], X_s)
            T.ptx_commit_group()
            T.ptx_wait_group(0)
            for i, j in T.Parallel(tile, D):
                if bx * tile + i < N:
                    O[bx * tile + i, j] = X_s[i, j] * 2.0

    return main


@pytest.mark.parametrize("path", PATHS)
def test_async_copy_lands_before_the_wait(path):
    x = np.random.default_rng(5).standard_normal((70, 24)).astype(np.float32)
    o = np.full_like(x, np.nan)
    run(path, async_copy_rows(), X=x, O=o)
    np.testing.assert_array_equal(o, 2 * x)


def test_async_copy_goes_through_cp_async_on_cuda():
    assert "tl_cp_async" in lower("cuda:sm_80", async_copy_rows()).script()


@pytest.mark.parametrize("pair", ["shared->shared", "global->global", "shared->global"])
def test_async_copy_other_than_global_to_shared_is_refused(pair):
    src, dst = pair.split("->")
    with pytest.raises(FrontendError, match="T.async_copy only supports global->shared/shared.dyn copies"):
        @T.prim_func
        def main(A: T.Tensor((16,), "float32"), B: T.Tensor((16,), "float32")):
            with T.Kernel(1, threads=32):
                S0 = T.alloc_shared((16,), "float32")
                S1 = T.alloc_shared((16,), "float32")
                ops = {"shared": (S0, S1), "global": (A, B)}
                T.async_copy(ops[src][0], ops[dst][1])
