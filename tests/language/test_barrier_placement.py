"""Where barriers go between shared-memory accesses (simt/transform/insert_barriers.py and
shared_races.py), with TileLang's rules: atomics don't race with atomics, accesses whose boxes
are provably disjoint (``s[r, i]`` against ``s[r ^ 1, j]``) don't race, an atomic with a result
writes its element, and a barrier needed inside an ``if`` that only some threads take is refused
(it would hang). Numerics on every reference path (the interpreters run the threads one barrier
interval at a time, so a missing barrier shows as a wrong answer), the placement in the lowered IR."""

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core import LoweringError
from tilelang_core.testing.oracle import PATHS, lower, run

from barrier_kernels import (compaction, histogram, neighbour, pipelined_view, producer_branch, through_a_view,
                             ticket)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("n,rounds", [(64, 2), (128, 3), (32, 1)])
def test_double_buffered_compaction_needs_no_barrier_inside_the_per_thread_branch(path, n, rounds):
    a = np.random.default_rng(n + rounds).integers(-40, 60, n).astype(np.int32)
    out = run(path, compaction(n, rounds), A=a, O=np.full(n, -999, np.int32), C=np.zeros(1, np.int32))
    kept = a
    for rnd in range(rounds):
        kept = kept[kept > rnd * 10]
    count = int(out["C"][0])
    assert count == len(kept)
    np.testing.assert_array_equal(np.sort(out["O"][:count]), np.sort(kept))


def test_the_compaction_has_no_block_barrier_under_its_branch():
    text = lower("cuda:sm_80", compaction(64, 2)).script()
    loop = text[text.index("for rnd"):].splitlines()
    indent = len(loop[1]) - len(loop[1].lstrip())  # the loop body's statements
    syncs = [line for line in loop if "tvm_storage_sync" in line]
    # the kernel's two barriers in the loop body (and the one after it), none deeper: none inside
    # 'if tx < cnt[r]', which the threads past the count skip, and none added beside the last one
    assert [len(line) - len(line.lstrip()) for line in syncs] == [indent, indent, indent - 4]


@pytest.mark.parametrize("path", PATHS)
def test_atomics_into_shared_memory_need_no_barrier_between_them(path):
    n, bins, per = 64, 16, 5
    a = np.random.default_rng(7).integers(0, 1000, n * per).astype(np.int32)
    out = run(path, histogram(n, bins, per), A=a, H=np.zeros(bins, np.int32))
    np.testing.assert_array_equal(out["H"], np.bincount(a % bins, minlength=bins))
    if path == "cuda:sm_80":
        loop = lower(path, histogram(n, bins, per)).script()
        # the two barriers the kernel wrote and none inside the loop of atomics
        assert loop.count("tvm_storage_sync") == 2


@pytest.mark.parametrize("path", PATHS)
def test_an_atomic_with_a_result_writes_its_element(path):
    n = 64
    out = run(path, ticket(n), B=np.zeros(n, np.int32), P=np.zeros(n, np.int32))
    np.testing.assert_array_equal(out["B"], np.full(n, n))
    np.testing.assert_array_equal(np.sort(out["P"]), np.arange(n))


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("mirrored", [True, False])
def test_the_same_half_read_from_another_thread_keeps_its_barrier(path, mirrored):
    n = 64
    a = np.random.default_rng(3).standard_normal(n).astype(np.float32)
    out = run(path, neighbour(n, mirrored), A=a, B=np.zeros(n, np.float32))
    expected = a[::-1] if mirrored else np.roll(a, -1)
    np.testing.assert_array_equal(out["B"], expected)


@pytest.mark.parametrize("path", PATHS)
def test_a_block_barrier_needed_under_a_per_thread_condition_is_refused(path):
    """'if A[tx] > 0' leaves some threads out; a __syncthreads there would hang (CUDA leaves it
    undefined): emitted anyway on the GPU backends before; the cpu backend ran one thread loop and
    read other threads' elements before they were written. Now refused at the line everywhere."""
    @T.prim_func
    def bad(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            s = T.alloc_shared((64,), "float32")
            if A[tx] > 0:
                s[tx] = A[tx]
                B[tx] = s[tx ^ 1]

    with pytest.raises(LoweringError, match="inside an 'if' whose condition depends on the thread needs a "
                                            "barrier(.|\n)*test_barrier_placement.py"):
        run(path, bad, A=np.ones(64, np.float32), B=np.zeros(64, np.float32))


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("else_form", [False, True])
def test_a_branch_of_a_thread_range_gets_a_barrier_among_its_threads(path, else_form):
    a = np.random.default_rng(11).standard_normal(128).astype(np.float32)
    arrays = dict(A=a, B=np.zeros(64, np.float32), C=np.zeros(64, np.float32))
    if path.startswith(("hip", "metal")) or (path == "cpu" and else_form):
        # no barrier over part of the block there (the cpu backend splits its thread loops only
        # at a barrier whose branch it can count: an else branch it cannot)
        with pytest.raises(LoweringError, match="64 <= tx < 128|no barrier over|selects no single range"):
            run(path, producer_branch(else_form), **arrays)
        return
    out = run(path, producer_branch(else_form), **arrays)
    np.testing.assert_array_equal(out["B"], 2 * a[64:][::-1])
    if path == "cuda:sm_80":
        text = lower(path, producer_branch(else_form)).script()
        assert 'tl_named_barrier", 15, 64' in text and "tvm_storage_sync" not in text


@pytest.mark.parametrize("path", PATHS)
def test_a_view_is_ordered_against_its_buffer(path):
    """The copy through T.reshape gets the barrier after the stores into the buffer it views (it
    had none: a race; TileLang's test_reshape_smem_1d_2_2d passed on the H200 in one run of this
    stop and read zeros in the next)."""
    a = np.random.default_rng(5).standard_normal(1024).astype(np.float32)
    out = run(path, through_a_view(1024, 32), A=a, B=np.zeros((32, 32), np.float32))
    np.testing.assert_array_equal(out["B"], a.reshape(32, 32))
    if path != "cpu":
        text = lower(path, through_a_view(1024, 32)).script()
        assert text.index("tvm_storage_sync") > text.index("A[") and "tvm_storage_sync" in text


@pytest.mark.parametrize("path", PATHS)
def test_a_view_declared_before_a_pipelined_loop_is_ordered_in_it(path):
    """The software pipeline places its loop's barriers itself: it too orders the copy through
    the view after the stores into the tile (it had no barrier there)."""
    a = np.random.default_rng(6).standard_normal(4 * 64).astype(np.float32)
    out = run(path, pipelined_view(4), A=a, B=np.zeros((4, 8, 8), np.float32))
    np.testing.assert_array_equal(out["B"], (2 * a.reshape(4, 64)[:, ::-1]).reshape(4, 8, 8))
    if path == "cuda:sm_80":
        lines = lower(path, pipelined_view(4)).script().splitlines()
        store = next(i for i, line in enumerate(lines) if "T.float32(2.0)" in line)
        assert "tvm_storage_sync" in lines[store + 1]


def staging(rows, vec, threads, shift):
    """Each thread stages its own ``vec`` columns of ``rows`` rows in shared memory (a serial loop
    over rows, a vectorized one over columns: TileKernels' casts), then the block reads the tile
    transposed. ``shift``: each iteration also reads the element the next thread wrote one
    iteration before (a real race between iterations: its barrier must stay)."""
    cols = threads * vec

    @T.prim_func
    def main(X: T.Tensor((rows, cols), "float32"), O: T.Tensor((cols, rows), "float32")):
        with T.Kernel(1, threads=threads):
            S = T.alloc_shared((rows, cols), "float32")
            tid = T.get_thread_binding()
            c = tid * vec
            for i in T.serial(rows):
                for j in T.vectorized(vec):
                    if shift and i > 0:
                        S[i, c + j] = X[i, c + j] + S[i - 1, (c + vec + j) % cols]
                    else:
                        S[i, c + j] = X[i, c + j]
            T.sync_threads()
            for k in T.serial(rows * vec):
                e = k * threads + tid
                O[e % cols, e // cols] = S[e // cols, e % cols]

    return main


def _syncs(func) -> int:
    return lower("cuda:sm_80", func).script().count("tvm_storage_sync")


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("rows,vec,threads", [(4, 4, 32), (8, 2, 64), (1, 4, 32)])
def test_a_loop_over_one_threads_own_shared_elements_has_no_barrier_between_iterations(path, rows, vec, threads):
    """Was: a barrier per row and per lane (the vectorized loop then ran scalar). The elements are
    each one thread's, checked over every thread and iteration (private_shared.py)."""
    func = staging(rows, vec, threads, shift=False)
    assert _syncs(func) == 1  # the author's
    x = np.random.default_rng(rows * vec).standard_normal((rows, threads * vec)).astype(np.float32)
    out = run(path, func, X=x, O=np.zeros((threads * vec, rows), np.float32))
    np.testing.assert_array_equal(out["O"], x.T)


@pytest.mark.parametrize("path", PATHS)
def test_a_loop_reading_another_threads_element_of_the_last_iteration_keeps_its_barrier(path):
    rows, vec, threads = 4, 2, 32
    func = staging(rows, vec, threads, shift=True)
    assert _syncs(func) > 1
    cols = threads * vec
    x = np.random.default_rng(3).standard_normal((rows, cols)).astype(np.float32)
    expected = x.astype(np.float64).copy()
    for i in range(1, rows):
        expected[i] += expected[i - 1][(np.arange(cols) + vec) % cols]
    out = run(path, func, X=x, O=np.zeros((cols, rows), np.float32))
    np.testing.assert_allclose(out["O"], expected.T, rtol=1e-5, atol=1e-6)


def column_prefix(rows, experts, threads):
    """TileKernels' fused-mapping prefix: the first ``experts`` threads each sum their own column
    of a shared table down its rows, then read its last row, inside ``if tx < experts``."""
    @T.prim_func
    def main(X: T.Tensor((rows, experts), "int32"), O: T.Tensor((experts,), "int32")):
        with T.Kernel(1, threads=threads):
            S = T.alloc_shared((rows, experts), "int32")
            tid = T.get_thread_binding()
            for k in T.serial(T.ceildiv(rows * experts, threads)):
                e = k * threads + tid
                if e < rows * experts:
                    S[e // experts, e % experts] = X[e // experts, e % experts]
            T.sync_threads()
            if tid < experts:
                for i in T.unroll(rows - 1):
                    S[i + 1, tid] += S[i, tid]
                O[tid] = S[rows - 1, tid]

    return main


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("rows,experts,threads", [(8, 9, 256), (4, 32, 64), (2, 3, 32)])
def test_a_branch_whose_threads_touch_only_their_own_elements_needs_no_barrier(path, rows, experts, threads):
    """Was refused: a barrier among threads 0..8 (not whole warps) between the loop and the read
    of the last row. Each element is one thread's own (checked over every thread, under the
    branch's condition), so none is needed."""
    func = column_prefix(rows, experts, threads)
    assert _syncs(func) == 1
    x = np.random.default_rng(rows * experts).integers(-50, 50, (rows, experts)).astype(np.int32)
    out = run(path, func, X=x, O=np.zeros(experts, np.int32))
    np.testing.assert_array_equal(out["O"], x.sum(axis=0))


@pytest.mark.parametrize("path", ["cpu", "cuda:sm_80"])
def test_an_integer_condition_around_shared_accesses(path):
    """``if flag:`` on an int32 (TileKernels' unique-group-indices): its else branch has no
    boolean negation to take (was an InternalError from TVM's Not)."""
    @T.prim_func
    def main(X: T.Tensor((32,), "int32"), O: T.Tensor((32,), "int32"), flag: T.int32):
        with T.Kernel(1, threads=32):
            S = T.alloc_shared((32,), "int32")
            tid = T.get_thread_binding()
            if flag:
                S[tid] = X[tid] * 2
            else:
                S[tid] = X[tid]
            T.sync_threads()
            O[tid] = S[31 - tid]

    x = np.arange(32, dtype=np.int32)
    for flag in (0, 3):
        out = run(path, main, X=x, O=np.zeros(32, np.int32), flag=flag)["O"]
        np.testing.assert_array_equal(out, x[::-1] * (2 if flag else 1))


def lane_strided(private: bool):  # (private=True: each thread's own elements; see the refusal test)
    """``for i in T.serial(lane, n, 4)``: a trip count that differs between threads (TileKernels'
    fused mapping walks its slice so). Reading a neighbour's element written in the previous
    iteration needs a barrier inside the loop, which the threads that left it would never reach."""
    @T.prim_func
    def main(X: T.Tensor((64,), "int32"), O: T.Tensor((64,), "int32"), n: T.int32):
        with T.Kernel(1, threads=4):
            S = T.alloc_shared((64,), "int32")
            tid = T.get_thread_binding()
            T.clear(S)
            T.sync_threads()
            for i in T.serial(tid, n, 4):
                if private:
                    S[i] = X[i] + (S[i - 4] if i >= 4 else 0)
                else:
                    S[i] = X[i] + (S[i - 1] if i >= 1 else 0)
            T.sync_threads()
            for k in T.serial(16):
                O[k * 4 + tid] = S[k * 4 + tid]

    return main


def test_a_barrier_needed_in_a_loop_with_a_per_thread_trip_count_is_refused():
    """Was: a block barrier at the end of the loop body, which hangs once one thread is done."""
    with pytest.raises(LoweringError, match="trip count depends on the thread"):
        lower("cuda:sm_80", lane_strided(private=False))


@pytest.mark.parametrize("path", ["cuda:sm_80", "hip:gfx942", "metal:apple7"])
def test_tilelangs_disable_thread_storage_sync_leaves_the_ordering_to_the_kernel(path):
    """``pass_configs={tl.disable_thread_storage_sync: True}`` (TileLang's key; TileKernels' fused
    mapping sets it): no barrier is added, the kernel's own T.sync_threads stay, and the loop the
    compiler would otherwise refuse (a per-thread trip count) compiles. (The interpreters run no
    loop whose bound differs across threads, so this checks the placement only.)"""
    func = lower(path, lane_strided(private=True), disable_thread_storage_sync=True)
    assert func.script().count("tvm_storage_sync") == 2  # the kernel's own two
    with pytest.raises(LoweringError, match="trip count depends on the thread"):
        lower(path, lane_strided(private=True))  # (not provably private: its extent is n's)
