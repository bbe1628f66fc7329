"""T.PersistentTileScheduler (TileLang's persistent tile walk) on every reference path: each tile
of the grid is visited exactly once, by worker ``linear % workers`` on its ``linear // workers``-th
iteration, in the order TileLang documents (column- or row-major, panels of ``swizzle_size``
slow-axis tiles, cluster rows). The expected order is built by enumerating panels, not by the
decode formula."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tilelang_core.language as T
from tilelang_core import FrontendError
from tilelang_core.testing.oracle import PATHS, run


def walk(M, N, workers, swizzle, column_major, cluster):
    rows = -(-M // cluster)

    @T.prim_func
    def persistent(Out: T.Tensor((rows, N), "int32")):
        with T.Kernel(workers, threads=32) as (worker,):
            sched = T.PersistentTileScheduler(M, N, num_workers=workers, swizzle_size=swizzle,
                                              column_major=column_major, cluster_size=cluster, name="sched")
            sched.init(worker)
            while sched.valid():
                Out[sched.m_idx, sched.n_idx] = worker * 1000 + sched.current_iter
                sched.next_tile()

    return persistent, rows


def expected(rows, N, workers, swizzle, column_major):
    primary, secondary = (rows, N) if column_major else (N, rows)
    order = []
    for base in range(0, secondary, swizzle):  # panels of `swizzle` slow-axis tiles
        for fast in range(primary):
            for slow in range(base, min(base + swizzle, secondary)):
                order.append((fast, slow) if column_major else (slow, fast))
    out = np.full((rows, N), -1, np.int32)
    for linear, (m, n) in enumerate(order):
        out[m, n] = (linear % workers) * 1000 + linear // workers
    return out


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=5, deadline=None)
@given(M=st.integers(1, 7), N=st.integers(1, 6), workers=st.integers(1, 5), swizzle=st.integers(1, 4),
       column_major=st.booleans(), cluster=st.sampled_from([1, 2]))
def test_every_tile_once_in_tilelangs_order(path, M, N, workers, swizzle, column_major, cluster):
    func, rows = walk(M, N, workers, swizzle, column_major, cluster)
    out = np.full((rows, N), -7, np.int32)
    run(path, func, Out=out)
    np.testing.assert_array_equal(out, expected(rows, N, workers, swizzle, column_major))


def test_stateless_scheduler_decodes_only():
    @T.prim_func
    def stateless(A: T.Tensor((8,), "int32")):
        with T.Kernel(1, threads=1) as (block_id,):
            sched = T.PersistentTileScheduler(4, 2, num_workers=1, stateful=False)
            bx, by = sched.coord(block_id + 5)
            A[bx] = by

    a = np.full(8, -1, np.int32)
    run("cpu", stateless, A=a)
    assert a.tolist() == [-1, 1, -1, -1, -1, -1, -1, -1]  # tile 5 of 4 x 2, M fastest: (1, 1)
    with pytest.raises(FrontendError, match="stateful=False"):
        @T.prim_func
        def no_state(A: T.Tensor((8,), "int32")):
            with T.Kernel(1, threads=1) as (block_id,):
                sched = T.PersistentTileScheduler(4, 2, num_workers=1, stateful=False)
                A[0] = sched.m_idx


def test_bad_panel_width_is_refused():
    with pytest.raises(FrontendError, match="swizzle_size must be a positive integer"):
        @T.prim_func
        def bad(A: T.Tensor((8,), "int32")):
            with T.Kernel(1, threads=1) as (block_id,):
                T.PersistentTileScheduler(4, 2, num_workers=1, swizzle_size=0)


# ---- T.Persistent: the walk as a for loop -----------------------------------------------------
def persistent_loop(dims, workers, group):
    if len(dims) == 2:
        @T.prim_func
        def walk2(Out: T.Tensor(tuple(dims), "int32")):
            with T.Kernel(workers, threads=32) as worker:
                for bx, by in T.Persistent(list(dims), workers, worker, group):
                    Out[bx, by] = Out[bx, by] + worker * 1000 + 1  # +1: a tile visited twice shows
        return walk2

    @T.prim_func
    def walk3(Out: T.Tensor(tuple(dims), "int32")):
        with T.Kernel(workers, threads=32) as worker:
            for a, b, c in T.Persistent(list(dims), workers, worker, group):
                Out[a, b, c] = Out[a, b, c] + worker * 1000 + 1
    return walk3


def persistent_expected(dims, workers, group):
    """Tiles in TileLang's order, enumerated: panels of `group` last-dimension tiles, within a
    panel the other dimensions row-major, the panel's columns fastest."""
    group = max(1, min(group, dims[-1]))
    order = []
    for base in range(0, dims[-1], group):
        for lead in np.ndindex(*dims[:-1]):
            for col in range(base, base + group):  # a column past the edge still takes a number
                order.append((*lead, col))
    out = np.zeros(dims, np.int32)
    for linear, tile in enumerate(order):
        if tile[-1] < dims[-1]:
            out[tile] += (linear % workers) * 1000 + 1
    return out


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=5, deadline=None)
@given(dims=st.sampled_from([(1, 1), (3, 5), (4, 8), (7, 3), (2, 3, 4)]), workers=st.integers(1, 6),
       group=st.sampled_from([1, 2, 3, 8]))
def test_persistent_loop_visits_every_tile_once_in_tilelangs_order(path, dims, workers, group):
    out = np.zeros(dims, np.int32)
    run(path, persistent_loop(dims, workers, group), Out=out)
    np.testing.assert_array_equal(out, persistent_expected(dims, workers, group))


def test_persistent_loop_binds_as_many_names_as_dimensions():
    with pytest.raises(FrontendError, match="2-D domain but 1 names"):
        @T.prim_func
        def bad(Out: T.Tensor((4, 4), "int32")):
            with T.Kernel(2, threads=32) as worker:
                for t in T.Persistent([4, 4], 2, worker):
                    Out[t, 0] = 1
