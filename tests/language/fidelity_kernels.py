"""Kernels written as TileLang's examples write them, shared by the reference-path tests here and
the H200 tests (backends/cuda/tests/gpu/test_gpu_language_rules.py). Plain builders: no pytest or
hypothesis at import."""

import tilelang_core.language as T


def suffix_sums(R=128, threads=256, count=None, cond="range"):
    """s[t] = sum(H[t:]) by the first R threads (Hillis-Steele), synchronized by barrier 3."""
    count = R if count is None else count

    @T.prim_func
    def scan(H: T.Tensor((R,), "int32"), O: T.Tensor((R,), "int32")):
        with T.Kernel(1, threads=threads):
            tx = T.get_thread_binding()
            s = T.alloc_shared((R,), "int32")
            v = T.alloc_var("int32")
            if tx < R:
                s[tx] = H[tx]
            T.sync_threads()
            if (tx < R) if cond == "range" else (tx < R and tx % 2 == 0):
                for i in T.serial(R.bit_length() - 1):
                    T.sync_threads(3, count)
                    if tx < R - (1 << i):
                        v = s[tx] + s[tx + (1 << i)]
                    T.sync_threads(3, count)
                    if tx < R - (1 << i):
                        s[tx] = v
                T.sync_threads(3, count)
                O[tx] = s[tx]

    return scan


def splitk_gemv(N, K, BN, BK, tile_k):
    """C[n] = sum_k A[k] B[n, k]: thread (tn, tk) of a (BN, BK) block adds its K slice into C_s[tn]."""
    @T.prim_func
    def gemv(A: T.Tensor((K,), "float32"), B: T.Tensor((N, K), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, BN), threads=(BN, BK)) as bn:
            tn = T.get_thread_binding(0)
            tk = T.get_thread_binding(1)
            acc = T.alloc_local((1,), "float32")
            C_s = T.alloc_shared((BN,), "float32")
            if tk == 0:
                C_s[tn] = 0.0
            T.sync_threads()
            acc[0] = 0.0
            for bk in T.serial(T.ceildiv(K, BK * tile_k)):
                for k in T.serial(tile_k):
                    kk = bk * BK * tile_k + tk * tile_k + k
                    if kk < K and bn * BN + tn < N:
                        acc[0] += A[kk] * B[bn * BN + tn, kk]
            T.atomic_add(C_s[tn], acc[0])
            T.sync_threads()
            if tk == 0 and bn * BN + tn < N:
                C[bn * BN + tn] = C_s[tn]

    return gemv


def producer_consumer(N, block=128, work=4):
    """Kernel 1: B = A + 1, then lets kernel 2 start. Kernel 2: work that reads only A (Pre),
    then waits for kernel 1 and reads its B (C = 2 B)."""
    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32), C: T.Tensor((N,), T.float32),
             Pre: T.Tensor((N,), T.float32)):
        with T.Kernel(T.ceildiv(N, block), threads=block) as (bx,):
            for i in T.Parallel(block):
                idx = bx * block + i
                if idx < N:
                    B[idx] = A[idx] + 1.0
            T.pdl_trigger()
        with T.Kernel(T.ceildiv(N, block), threads=block) as (bx2,):
            for i in T.Parallel(block):
                idx = bx2 * block + i
                if idx < N:
                    y = T.alloc_var(T.float32, init=A[idx])
                    for _ in T.serial(work):
                        y = y * 0.5 + 1.0
                    Pre[idx] = y
            T.pdl_sync()
            for i in T.Parallel(block):
                idx = bx2 * block + i
                if idx < N:
                    C[idx] = B[idx] * 2.0

    return main


def index_mask(N=64, H=32, limit=10):
    """TileLang's sparse MLA pattern: a bool fragment of comparisons over a run of registers, then
    read in a tile loop: O[h, i] = A[h, i] where Ind[i] <= limit, else -1."""
    @T.prim_func
    def masked(Ind: T.Tensor((N,), "int32"), A: T.Tensor((H, N), "float32"), O: T.Tensor((H, N), "float32")):
        with T.Kernel(1, threads=128):
            mask = T.alloc_fragment((N,), "bool")
            acc = T.alloc_fragment((H, N), "float32")
            for i in T.Parallel(N):
                mask[i] = Ind[i] <= limit
            for h, i in T.Parallel(H, N):
                acc[h, i] = T.if_then_else(mask[i], A[h, i], -1.0)
            T.copy(acc, O)

    return masked
