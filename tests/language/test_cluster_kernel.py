"""T.ClusterKernel and the cluster's barriers (language/cluster.py). The rank against numpy on cpu
and the CUDA interpreter; the cuda source for sm_90a compiled by nvcc (``__cluster_dims__``, the
helpers); refusals: grids the cluster does not divide (at compile time, and at the call for sizes
from the arguments), clusters over 8 blocks, targets without clusters, cluster barriers where the
blocks run one after another or where some thread would skip them; the sm_90a planner keeping a
cluster kernel's launch order. backends/cuda/tests/gpu/test_gpu_clusters.py runs them on the GPU."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tilelang_core as tl
import tilelang_core.language as T
from tilelang_core.errors import TileLangError
from cluster_kernels import (CASES, dynamic_grid, exchange, expected_ranks, gemm, multicast_ring, ranks,
                             remote_barrier)


@pytest.mark.parametrize("grid,dims", CASES)
def test_rank_on_cpu(grid, dims):
    import torch

    r = torch.full(tuple(reversed(list(grid) + [1] * (3 - len(grid)))), -1, dtype=torch.int32)
    tl.compile(ranks(grid, dims), target="cpu")(r)
    np.testing.assert_array_equal(r.numpy(), expected_ranks(grid, dims))


@pytest.mark.parametrize("grid,dims", CASES[:3])
def test_rank_on_the_cuda_interpreter(grid, dims):
    from tilelang_core.testing.oracle import run

    shape = tuple(reversed(list(grid) + [1] * (3 - len(grid))))
    out = run("cuda:sm_90a", ranks(grid, dims), R=np.full(shape, -1, np.int32))
    np.testing.assert_array_equal(out["R"], expected_ranks(grid, dims))


@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(1, 3), min_size=1, max_size=3), st.data())
def test_generated_cluster_shapes_on_cpu(clusters, data):
    """Grids of whole clusters along each axis, every cluster shape of at most 8 blocks."""
    import torch

    dims = tuple(data.draw(st.integers(1, 4)) for _ in clusters)
    if np.prod(dims) > 8:
        dims = (1,) * len(dims)
    grid = tuple(c * d for c, d in zip(clusters, dims))
    r = torch.full(tuple(reversed(list(grid) + [1] * (3 - len(grid)))), -1, dtype=torch.int32)
    tl.compile(ranks(grid, dims + (1,) * (3 - len(dims))), target="cpu")(r)
    np.testing.assert_array_equal(r.numpy(), expected_ranks(grid, dims + (1,) * (3 - len(dims))))


def test_a_plain_kernel_is_a_cluster_of_one():
    import torch

    @T.prim_func
    def k(R: T.Tensor((4,), "int32")):
        with T.Kernel(4, threads=32) as bx:
            R[bx] = T.block_rank_in_cluster() + 7

    r = torch.zeros(4, dtype=torch.int32)
    tl.compile(k, target="cpu")(r)
    assert r.tolist() == [7, 7, 7, 7]


def test_cuda_source_for_sm90a(tmp_path):
    from test_printer_limits import _cuda_source

    for func in (ranks((8, 6), (2, 3)), exchange(), remote_barrier()):
        kernel = _cuda_source(func, "sm_90a", tmp_path)
        assert kernel[:kernel.find("{")].count("__cluster_dims__(") == 2  # the declaration and the definition
    assert "__cluster_dims__(4, 1, 1)" in kernel and "tl_mbarrier_arrive_remote(" in kernel
    assert "tl_mbarrier_wait_cluster(" in kernel and kernel.count("tl_cluster_sync();") == 2


def test_dynamic_grid_is_checked_at_the_call():
    import torch

    kernel = tl.compile(dynamic_grid(), target="cpu")
    a = torch.full((100,), -1, dtype=torch.int32)
    kernel(a)
    assert a.tolist() == [(i // 32) % 2 for i in range(100)]
    with pytest.raises(TileLangError, match=r"grid extent 0 .* not a multiple of the cluster's 2 .*N=90"):
        kernel(torch.zeros(90, dtype=torch.int32))


@pytest.mark.parametrize("grid,dims,why", [
    ((6,), 4, "grid extent 0 is 6, not a multiple of the cluster's 4"),
    ((8, 6), (2, 4), "grid extent 1 is 6, not a multiple of the cluster's 4"),
    ((16, 16), (4, 4), "16 blocks; at most 8"),
    ((8,), (2, 2), "spans grid axis 1"),
    ((8,), 0, "positive compile-time integers"),
    ((8,), (1, 1, 1, 1), "1 to 3 extents"),
])
def test_bad_cluster_shapes_are_refused(grid, dims, why):
    with pytest.raises(TileLangError, match=why):
        tl.compile(ranks(grid, dims), target="cpu")


@pytest.mark.parametrize("target", ["cuda:sm_80", "cuda:sm_89", "hip", "metal"])
def test_targets_without_clusters_refuse_it(target):
    pytest.importorskip(f"tilelang_{target.split(':')[0]}")
    with pytest.raises(TileLangError, match="thread-block clusters are NVIDIA's, sm_90 and newer"):
        tl.compile(ranks((8,), 2), target=target)


def test_a_cluster_of_one_compiles_everywhere():
    pytest.importorskip("tilelang_hip")
    source = tl.compile(ranks((8,), 1), target="hip").get_kernel_source()
    assert "cluster" not in source


def test_cluster_barriers_are_refused_on_cpu_and_by_the_interpreter():
    from tilelang_core.testing.oracle import run

    with pytest.raises(TileLangError, match="T.cluster_sync .* runs the blocks one after another"):
        tl.compile(exchange(), target="cpu")
    with pytest.raises(NotImplementedError, match="a cluster barrier"):
        run("cuda:sm_90a", exchange(), A=np.zeros((12, 64), np.float32), B=np.zeros((12, 64), np.float32))


def misplaced(where):
    @T.prim_func
    def k(A: T.Tensor((256,), "float32")):
        with T.ClusterKernel(4, threads=64, cluster_dims=2) as bx:
            tx = T.get_thread_binding()
            if where == "parallel":
                for i in T.Parallel(64):
                    A[bx * 64 + i] = 1.0
                    if i % 2 == 0:
                        T.cluster_arrive()
            elif where == "thread":
                if tx < 32:
                    T.cluster_sync()
            else:
                if T.block_rank_in_cluster() == 0:
                    T.cluster_wait()

    return k


@pytest.mark.parametrize("where,why", [("parallel", "must stand at the top level of the loop's body"),
                                       ("thread", r"T.cluster_sync\(\) is under a condition"),
                                       ("block", r"T.cluster_wait\(\) is under a condition")])
def test_where_a_cluster_barrier_would_hang_it_is_refused(where, why):
    pytest.importorskip("tilelang_cuda")
    with pytest.raises(TileLangError, match=why):
        tl.compile(misplaced(where), target="cuda:sm_90a")


def test_a_remote_arrive_needs_a_cluster_barrier():
    with pytest.raises(TileLangError, match="'mbar' is not a cluster barrier; allocate it with T.alloc_cluster_barrier"):
        @T.prim_func
        def k(A: T.Tensor((8,), "int32")):
            with T.ClusterKernel(8, threads=32, cluster_dims=2):
                mbar = T.alloc_barrier([32])
                T.mbarrier_arrive(mbar, 1)


def test_the_sm90a_planner_keeps_a_cluster_kernels_launch_order(tmp_path):
    """No rasterization (it would walk other blocks into a cluster), and one cluster shape even with
    the automatic multicast clusters asked for."""
    from test_printer_limits import _cuda_source

    kernel = _cuda_source(gemm(2048, 2048, 256), "sm_90a", tmp_path)
    assert "walked in panels" not in kernel and kernel[:kernel.find("{")].count("__cluster_dims__(2, 1, 1)") == 2
    source = tl.compile(gemm(2048, 2048, 256), target="cuda:sm_90a",
                        pass_configs={"tl.enable_cluster_multicast": True}).get_kernel_source()
    assert "panels" not in source.split('extern "C"')[0]
    assert source.count("__cluster_dims__(") == 2  # the declaration and the definition


def test_gemm_in_a_cluster_kernel_on_cpu():
    """(the sm_90a interpreter does not run the wgmma path; the GPU test does)"""
    import torch

    rng = np.random.default_rng(0)
    a = rng.standard_normal((256, 96)).astype(np.float16)
    b = rng.standard_normal((96, 256)).astype(np.float16)
    c = torch.zeros(256, 256)
    tl.compile(gemm(256, 256, 96), target="cpu")(torch.from_numpy(a), torch.from_numpy(b), c)
    np.testing.assert_allclose(c.numpy(), a.astype(np.float64) @ b.astype(np.float64), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("blocks, mask", [(2, 0b11), (4, 0b0110), (4, 0b1111), (2, 0b01)])
def test_tma_copy_with_a_cluster_mask_gives_every_block_the_tile(blocks, mask):
    """TileLang's multicast (T.tma_copy(..., cluster_mask=)): every block in the mask holds the tile
    when its own barrier's phase completes, and a block outside it loads its own; a ring of 4 slots
    cycled 8 times reuses each slot under both parities. The sm_90a interpreter, against A."""
    from tilelang_core.testing.oracle import run

    a = np.random.default_rng(mask).standard_normal((8, 64, 64)).astype(np.float32)
    out = run("cuda:sm_90a", multicast_ring(blocks=blocks, mask=mask), A=a,
              B=np.full((blocks, 8, 64, 64), np.nan, np.float32))["B"]
    for rank in range(blocks):
        np.testing.assert_array_equal(out[rank], a)


@pytest.mark.parametrize("mask, why", [
    (0b111, "cluster_mask=0b111 names block rank 2, but the cluster has 2 blocks"),
    (0, "cluster_mask must be a positive integer bitmask"),
    (True, "cluster_mask must be a positive integer bitmask")])
def test_a_cluster_mask_outside_the_cluster_is_refused(mask, why):
    with pytest.raises(TileLangError, match=why):
        multicast_ring(mask=mask)


def test_a_cluster_mask_on_a_store_is_refused():
    with pytest.raises(TileLangError, match="a store takes no mask"):
        @T.prim_func
        def k(A: T.Tensor((64,), "float32")):
            with T.ClusterKernel(2, threads=32, cluster_dims=2):
                s = T.alloc_shared((64,), "float32")
                T.tma_copy(s, A, cluster_mask=0b11)


def test_tma_copy_with_a_cluster_mask_builds_for_sm90a(tmp_path):
    from test_printer_limits import _cuda_source

    assert "__cluster_dims__(2, 1, 1)" in _cuda_source(multicast_ring(), "sm_90a", tmp_path)
