"""Thread-block clusters (NVIDIA sm_90 and newer): TileLang's ``T.ClusterKernel`` and the cluster's
barriers.

``with T.ClusterKernel(gx, gy, threads=128, cluster_dims=(2, 1, 1)) as (bx, by):`` launches the grid
of ``T.Kernel(gx, gy, threads=128)`` in clusters of 2 x 1 x 1 neighbouring blocks (blocks 2i and
2i + 1 along x): the blocks of a cluster run at the same time, on neighbouring SMs, and can wait for
each other. Each grid extent must be a multiple of the cluster's (checked at compile time for
constants, at each call for sizes given by the arguments); a cluster has at most 8 blocks.

* ``T.block_rank_in_cluster()``: this block's rank in its cluster, ``x + cx * (y + cy * z)`` for its
  position ``(bx % cx, by % cy, bz % cz)`` in it (CUDA's ``%cluster_ctarank``); 0 in a T.Kernel.
* ``T.cluster_sync()``: every thread of every block of the cluster waits until all have arrived;
  memory written before it by any of them is visible after it (``barrier.cluster.arrive.release`` +
  ``wait.acquire``). ``T.cluster_arrive()`` / ``T.cluster_wait()`` are its two halves (work may stand
  between them); ``T.cluster_arrive_relaxed()`` arrives without releasing memory. Every thread must
  reach each of them: inside T.Parallel or under a branch on the thread or block index they would
  hang, and are refused (as T.sync_grid is).
* ``T.alloc_cluster_barrier(counts)``: T.alloc_barrier's mbarriers that other blocks of the cluster
  arrive on with ``T.mbarrier_arrive(bar, cta_id)`` (the barrier of the block of rank ``cta_id``),
  after a ``T.cluster_sync()`` that follows the allocation (the peers' barriers are initialized
  then). Waits on them (``T.mbarrier_wait_parity``) see the arriving blocks' writes.

Where clusters exist: the cuda backend from sm_90 (``__cluster_dims__`` on the kernel, so the launch
itself is unchanged). The cpu backend and the SIMT interpreter run the blocks one after another: a
T.ClusterKernel runs there (the rank is the same), its cluster barriers are refused. hip, metal and
cuda before sm_90 have no clusters and refuse a T.ClusterKernel of more than one block a cluster.
The sm_90a planner keeps the launch order of a cluster kernel (no rasterization, persistent tiles or
automatic multicast clusters): the cluster's blocks are the author's neighbours.
"""

from __future__ import annotations

import math

from tvm import tirx
from tvm.script.ir_builder import tirx as B

from ..errors import FrontendError
from ..ir import intrinsics as I
from .assumes import assume_marker
from .kernel import Kernel, current_kernel

#: blocks a cluster may hold on every sm_90 part (CUDA's portable cluster size)
MAX_CLUSTER_BLOCKS = 8


def _cluster_dims(value) -> tuple[int, int, int]:
    dims = list(value) if isinstance(value, (list, tuple)) else [value]
    if not 1 <= len(dims) <= 3:
        raise FrontendError(f"T.ClusterKernel: cluster_dims takes 1 to 3 extents, got {value!r}")
    for d in dims:
        if isinstance(d, tirx.IntImm):
            d = int(d.value)
        if isinstance(d, bool) or not isinstance(d, int) or d < 1:
            raise FrontendError(f"T.ClusterKernel: cluster_dims must be positive compile-time integers, got {value!r}")
    dims = [int(d) for d in dims] + [1] * (3 - len(dims))
    if math.prod(dims) > MAX_CLUSTER_BLOCKS:
        raise FrontendError(f"T.ClusterKernel: a cluster of {dims[0]} x {dims[1]} x {dims[2]} = {math.prod(dims)} "
                            f"blocks; at most {MAX_CLUSTER_BLOCKS} (CUDA's portable cluster size)")
    return tuple(dims)


def ClusterKernel(*blocks, cluster_dims, threads=None, prelude=None) -> Kernel:  # noqa: N802 - TileLang's name
    """``T.Kernel`` launched in clusters of ``cluster_dims`` blocks (module docstring)."""
    kernel = Kernel(*blocks, threads=128 if threads is None else threads, prelude=prelude)
    kernel.cluster_dims = _cluster_dims(cluster_dims)
    for axis, (extent, dim) in enumerate(zip(kernel.blocks, kernel.cluster_dims, strict=False)):
        if isinstance(extent, int) and extent % dim:
            raise FrontendError(f"T.ClusterKernel: grid extent {axis} is {extent}, not a multiple of the cluster's "
                                f"{dim} (cluster_dims={kernel.cluster_dims}); pad the grid (blocks past the data "
                                f"returning early) or pick a cluster shape that divides it")
    for axis in range(len(kernel.blocks), 3):
        if kernel.cluster_dims[axis] != 1:
            raise FrontendError(f"T.ClusterKernel: cluster_dims={kernel.cluster_dims} spans grid axis {axis}, which "
                                f"the launch of {len(kernel.blocks)} extent(s) does not have")
    return kernel


def enter_cluster(kernel: Kernel, stack) -> None:
    """At the top of ``kernel``'s body: the cluster marker, and the check of grid extents given by the
    arguments (a host assumption, jit/args.py)."""
    B.evaluate(I.call("cluster_dims", "void", *[tirx.const(d, "int32") for d in kernel.cluster_dims]))
    for axis, (extent, dim) in enumerate(zip(kernel.blocks, kernel.cluster_dims, strict=False)):
        if not isinstance(extent, int) and dim > 1:
            reason = (f"T.ClusterKernel: grid extent {axis} ({extent}) is not a multiple of the cluster's {dim} "
                      f"(cluster_dims={kernel.cluster_dims}) for these arguments; pad the grid to a multiple")
            stack.enter_context(assume_marker(tirx.floormod(extent, dim) == 0, reason))


def block_rank_in_cluster():
    """This block's rank in its cluster (module docstring); 0 outside a T.ClusterKernel."""
    kernel = current_kernel("T.block_rank_in_cluster")
    if kernel.cluster_dims is None:
        return tirx.const(0, "int32")
    rank, scale = tirx.const(0, "int32"), 1
    for var, dim in zip(kernel.block_vars, kernel.cluster_dims, strict=False):
        if dim > 1:
            rank = rank + tirx.floormod(var, dim) * scale
        scale *= dim
    return I.call("block_rank_in_cluster", "int32", rank)


def _barrier(name: str):
    def barrier():
        current_kernel(f"T.{name}")
        return I.call(name, "void")

    barrier.__name__ = name
    return barrier


cluster_arrive = _barrier("cluster_arrive")
cluster_arrive.__doc__ = "This thread arrives on the cluster's barrier, releasing its writes (module docstring)."
cluster_arrive_relaxed = _barrier("cluster_arrive_relaxed")
cluster_arrive_relaxed.__doc__ = "This thread arrives on the cluster's barrier without releasing memory."
cluster_wait = _barrier("cluster_wait")
cluster_wait.__doc__ = "Wait until every thread of the cluster arrived (T.cluster_arrive); their writes are visible."
cluster_sync = _barrier("cluster_sync")
cluster_sync.__doc__ = "T.cluster_arrive() then T.cluster_wait(): a barrier over every thread of the cluster."

__all__ = ["ClusterKernel", "block_rank_in_cluster", "cluster_arrive", "cluster_arrive_relaxed",
           "cluster_sync", "cluster_wait"]
