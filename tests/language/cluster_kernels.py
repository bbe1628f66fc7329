"""Cluster kernels (language/cluster.py) shared by tests/language/test_cluster_kernel.py and the GPU
tests (backends/cuda/tests/gpu/test_gpu_clusters.py); no hypothesis here, which the GPU machine lacks."""

import itertools

import numpy as np

import tilelang_core.language as T


def ranks(grid, dims, threads=32):
    """R[bz, by, bx] = the block's rank in its cluster."""
    gx, gy, gz = list(grid) + [1] * (3 - len(grid))

    @T.prim_func
    def k(R: T.Tensor((gz, gy, gx), "int32")):
        with T.ClusterKernel(*grid, threads=threads, cluster_dims=dims) as blocks:
            bx, by, bz = (list(blocks) if isinstance(blocks, tuple) else [blocks]) + [0] * (3 - len(grid))
            if T.get_thread_binding() == threads - 1:
                R[bz, by, bx] = T.block_rank_in_cluster()

    return k


def expected_ranks(grid, dims):
    gx, gy, gz = list(grid) + [1] * (3 - len(grid))
    cx, cy, cz = list(dims) + [1] * (3 - len(dims)) if isinstance(dims, tuple) else (dims, 1, 1)
    out = np.zeros((gz, gy, gx), np.int32)
    for z, y, x in itertools.product(range(gz), range(gy), range(gx)):
        out[z, y, x] = x % cx + cx * (y % cy + cy * (z % cz))
    return out


def exchange(clusters=3, block=64, size=4):
    """Each block doubles its row, waits for its cluster, then reads the row of the next block of
    its cluster (global memory, ordered by T.cluster_sync)."""

    @T.prim_func
    def k(A: T.Tensor((clusters * size, block), "float32"), B: T.Tensor((clusters * size, block), "float32")):
        with T.ClusterKernel(clusters * size, threads=block, cluster_dims=size) as bx:
            tx = T.get_thread_binding()
            A[bx, tx] = A[bx, tx] * 2.0
            T.cluster_sync()
            rank = T.block_rank_in_cluster()
            B[bx, tx] = A[bx - rank + (rank + 1) % size, tx]

    return k


def remote_barrier(size=4):
    """Every thread of the cluster arrives on block 0's barrier; block 0 waits for all of them."""

    @T.prim_func
    def k(A: T.Tensor((16,), "int32")):
        with T.ClusterKernel(16, threads=128, cluster_dims=(size, 1, 1)) as bx:
            mbar = T.alloc_cluster_barrier([128 * size])
            T.cluster_sync()
            T.mbarrier_arrive(mbar, 0)
            if T.block_rank_in_cluster() == 0:
                T.mbarrier_wait_parity(mbar, 0)
                if T.get_thread_binding() == 0:
                    A[bx] = 1
            T.cluster_sync()

    return k


CASES = [((8,), 2), ((8, 6), (2, 3)), ((4, 6, 4), (1, 3, 2)), ((16,), (8, 1, 1)), ((6, 4), (1, 4)), ((5,), 1)]


def gemm(M=512, N=512, K=256, dims=(2, 1, 1)):
    @T.prim_func
    def k(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.ClusterKernel(T.ceildiv(N, 128), T.ceildiv(M, 128), threads=128, cluster_dims=dims) as (bx, by):
            A_s = T.alloc_shared((128, 32), "float16")
            B_s = T.alloc_shared((32, 128), "float16")
            C_f = T.alloc_fragment((128, 128), "float32")
            T.clear(C_f)
            for ko in T.Pipelined(T.ceildiv(K, 32), num_stages=3):
                T.copy(A[by * 128, ko * 32], A_s)
                T.copy(B[ko * 32, bx * 128], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * 128, bx * 128])

    return k


def dynamic_grid():
    """A[i] = the rank of the block holding i, over a grid of ceildiv(N, 32) blocks in pairs."""
    N = T.dynamic("N")

    @T.prim_func
    def k(A: T.Tensor((N,), "int32")):
        with T.ClusterKernel(T.ceildiv(N, 32), threads=32, cluster_dims=2) as bx:
            tx = T.get_thread_binding()
            if bx * 32 + tx < N:
                A[bx * 32 + tx] = T.block_rank_in_cluster()

    return k


def multicast_ring(iters=8, slots=4, tile=64, blocks=2, mask=0b11):
    """Each block of a cluster of ``blocks`` receives tile k of A through T.tma_copy(cluster_mask=...)
    in a ring of ``slots`` mbarrier slots (each reused under both parities) and writes it to B[rank, k];
    blocks outside ``mask`` load their own (TileLang's multicast test kernel, generalized)."""
    @T.prim_func
    def main(A: T.Tensor((iters, tile, tile), "float32"), B: T.Tensor((blocks, iters, tile, tile), "float32")):
        with T.ClusterKernel(blocks, threads=128, cluster_dims=(blocks, 1, 1)) as pid:
            a_shared = T.alloc_shared((slots, tile, tile), dtype="float32")
            mbars = T.alloc_barrier([128] * slots)
            for k in T.serial(iters):
                slot = k % slots
                parity = (k // slots) % 2
                T.tma_copy(A[k, :, :], a_shared[slot, :, :], barrier=mbars[slot], cluster_mask=mask)
                T.mbarrier_arrive(mbarrier=mbars[slot])
                T.mbarrier_wait_parity(mbarrier=mbars[slot], parity=parity)
                T.copy(a_shared[slot, :, :], B[pid, k, :, :])

    return main
