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
