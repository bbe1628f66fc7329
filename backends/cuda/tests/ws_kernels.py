"""Hand-written warp-specialized kernels in TileLang's style (its examples/warp_specialize): a
producer warpgroup loading tiles with T.tma_copy, a consumer computing, mbarriers between them.
Shared by the interpreter tests (test_ws_kernels_interpreted.py) and the H200 tests
(gpu/test_gpu_warp_specialize.py)."""

import tilelang_core.language as T


def ws_gemm(M, N, K, bM=64, bN=64, bK=32, producer=0, consumer_first=False, arrivals=128, nreg=False,
            dtype="float16", out_dtype="float16"):
    """C = A @ B, warpgroup ``producer`` loading, the other computing, one stage (TileLang's
    copy_0_gemm_1 / copy_1_gemm_0). ``consumer_first``: the consumer's region is written first
    (the same kernel, the other program order). ``arrivals``: the barriers' arrive count (128 is
    right). ``nreg``: T.set_max_nreg between the two."""
    consumer = 1 - producer

    @T.macro
    def produce(A, B, A_s, B_s, ko, bx, by, data_ready, compute_done):
        with T.ws(producer):
            if nreg:
                T.set_max_nreg(40, 0)
            T.barrier_wait(compute_done, (ko + 1) % 2)
            T.tma_copy(A[by * bM, ko * bK], A_s, barrier=data_ready)
            T.tma_copy(B[ko * bK, bx * bN], B_s, barrier=data_ready)
            T.barrier_arrive(data_ready)

    @T.macro
    def consume(A_s, B_s, C_l, ko, data_ready, compute_done):
        with T.ws(consumer):
            if nreg:
                T.set_max_nreg(232, 1)
            T.barrier_wait(data_ready, ko % 2)
            T.gemm(A_s, B_s, C_l)
            T.barrier_arrive(compute_done)

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=256) as (bx, by):
            A_s = T.alloc_shared((bM, bK), dtype)
            B_s = T.alloc_shared((bK, bN), dtype)
            C_l = T.alloc_fragment((bM, bN), "float32")
            data_ready = T.alloc_barrier(arrive_count=arrivals)
            compute_done = T.alloc_barrier(arrive_count=arrivals)
            with T.ws(consumer):
                T.clear(C_l)
            for ko in T.Pipelined(T.ceildiv(K, bK), num_stages=0):
                if consumer_first:
                    consume(A_s, B_s, C_l, ko, data_ready, compute_done)
                    produce(A, B, A_s, B_s, ko, bx, by, data_ready, compute_done)
                else:
                    produce(A, B, A_s, B_s, ko, bx, by, data_ready, compute_done)
                    consume(A_s, B_s, C_l, ko, data_ready, compute_done)
            with T.ws(consumer):
                T.copy(C_l, C[by * bM, bx * bN])

    return main


def ws_gemm_stages(M, N, K, bM=64, bN=64, bK=32, stages=2):
    """TileLang's barrierpipe_stage2: ``stages`` buffers, a list of 2 * stages barriers (full
    ones first, then empty ones), the stage picked by ``ko % stages``."""
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=256) as (bx, by):
            A_s = T.alloc_shared((stages, bM, bK), "float16")
            B_s = T.alloc_shared((stages, bK, bN), "float16")
            C_l = T.alloc_fragment((bM, bN), "float32")
            mbars = T.alloc_barrier([128] * (2 * stages))
            with T.ws(0):
                T.clear(C_l)
            for ko in range(T.ceildiv(K, bK)):
                with T.ws(1):
                    T.mbarrier_wait_parity(mbars[ko % stages + stages], ((ko // stages) % 2) ^ 1)
                    T.tma_copy(A[by * bM:(by + 1) * bM, ko * bK:(ko + 1) * bK], A_s[ko % stages, :, :],
                               barrier=mbars[ko % stages])
                    T.tma_copy(B[ko * bK:(ko + 1) * bK, bx * bN:(bx + 1) * bN], B_s[ko % stages, :, :],
                               barrier=mbars[ko % stages])
                    T.mbarrier_arrive(mbars[ko % stages])
                with T.ws(0):
                    T.mbarrier_wait_parity(mbars[ko % stages], (ko // stages) % 2)
                    T.gemm(A_s[ko % stages, :, :], B_s[ko % stages, :, :], C_l)
                    T.mbarrier_arrive(mbars[ko % stages + stages])
            with T.ws(0):
                T.copy(C_l, C[by * bM, bx * bN])

    return main


def ws_split_gemm(M, N, K, bM=64, bN=128, bK=32):
    """TileLang's copy_gemm_0_1: the block loads A, each warpgroup loads its half of B and
    multiplies it (a barrier among its 128 threads between the two), no mbarriers."""
    half = bN // 2

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=256) as (bx, by):
            A_s = T.alloc_shared((bM, bK), "float16")
            B0 = T.alloc_shared((bK, half), "float16")
            B1 = T.alloc_shared((bK, half), "float16")
            C0 = T.alloc_fragment((bM, half), "float32")
            C1 = T.alloc_fragment((bM, half), "float32")
            with T.ws(1):
                T.clear(C1)
            with T.ws(0):
                T.clear(C0)
            for ko in T.Pipelined(T.ceildiv(K, bK), num_stages=0):
                T.copy(A[by * bM, ko * bK], A_s)
                with T.ws(1):
                    T.copy(B[ko * bK, bx * bN], B1)
                    T.gemm(A_s, B1, C1)
                with T.ws(0):
                    T.copy(B[ko * bK, bx * bN + half], B0)
                    T.gemm(A_s, B0, C0)
            with T.ws(1):
                T.copy(C1, C[by * bM, bx * bN])
            with T.ws(0):
                T.copy(C0, C[by * bM, bx * bN + half])

    return main


def ws_scale_rows(M, N, bM=32, arrivals=1):
    """Y = 2 X, a tile at a time: warpgroup 0 loads X's tile by T.tma_copy and only its first
    thread arrives (``arrivals`` = 1): the copy's bytes, not the arrivals, publish the tile
    (TileLang's TMA semantics); warpgroup 1 scales it through a fragment."""
    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=256):
            tx = T.get_thread_binding()
            X_s = T.alloc_shared((bM, N), "float32")
            y = T.alloc_fragment((bM, N), "float32")
            full = T.alloc_barrier(arrive_count=arrivals)
            empty = T.alloc_barrier(arrive_count=128)
            for t in T.serial(T.ceildiv(M, bM)):
                with T.ws(0):
                    T.barrier_wait(empty, (t + 1) % 2)
                    T.tma_copy(X[t * bM, 0], X_s, barrier=full)
                    if tx == 0:
                        T.barrier_arrive(full)
                with T.ws(1):
                    T.barrier_wait(full, t % 2)
                    for i, j in T.Parallel(bM, N):
                        y[i, j] = X_s[i, j] * 2.0
                    T.barrier_arrive(empty)
                    T.copy(y, Y[t * bM, 0])

    return main


def ws_register_a_gemm(M=64, N=64, K=64):
    """C = relu(A) @ B by warpgroup 1 of a 256-thread block, A through registers (TileLang's
    minference consumer: P @ V after the softmax): on sm_90a a wgmma with A in registers fits the
    group's one warpgroup, not the block's two; warpgroup 0 only loads."""
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=256):
            A_s = T.alloc_shared((M, K), "float16")
            B_s = T.alloc_shared((K, N), "float16")
            a = T.alloc_fragment((M, K), "float16")
            c = T.alloc_fragment((M, N), "float32")
            ready = T.alloc_barrier(arrive_count=128)
            with T.ws(0):
                T.tma_copy(A[0, 0], A_s, barrier=ready)
                T.tma_copy(B[0, 0], B_s, barrier=ready)
                T.barrier_arrive(ready)
            with T.ws(1):
                T.barrier_wait(ready, 0)
                T.copy(A_s, a)
                for i, k in T.Parallel(M, K):
                    a[i, k] = T.max(a[i, k], T.float16(0))
                T.clear(c)
                T.gemm(a, B_s, c, policy=T.GemmWarpPolicy.FullRow)
                T.copy(c, C)

    return main
