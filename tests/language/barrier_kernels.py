"""Kernels whose barriers are the question (simt/transform/insert_barriers.py, shared_races.py):
test_barrier_placement.py runs them on the reference paths, backends/cuda/tests/gpu on the H200."""

import tilelang_core.language as T


def compaction(n, rounds=2):
    """TileLang's top-k selector's pattern: each round keeps the values above a threshold, read
    from buffer half r and appended (atomic counter) to half r ^ 1, under a per-thread 'if'."""
    @T.prim_func
    def compact(A: T.Tensor((n,), "int32"), O: T.Tensor((n,), "int32"), C: T.Tensor((1,), "int32")):
        with T.Kernel(1, threads=n):
            tx = T.get_thread_binding()
            s = T.alloc_shared((2, n), "int32")
            cnt = T.alloc_shared((2,), "int32")
            pos = T.alloc_var("int32")
            s[0, tx] = A[tx]
            if tx == 0:
                cnt[0] = n
                cnt[1] = 0
            T.sync_threads()
            for rnd in T.serial(rounds):
                r = rnd % 2
                if tx < cnt[r]:
                    if s[r, tx] > rnd * 10:
                        pos = T.atomic_add(cnt[r ^ 1], 1, return_prev=True)
                        s[r ^ 1, pos] = s[r, tx]
                T.sync_threads()
                if tx == 0:
                    cnt[r] = 0
                T.sync_threads()
            last = rounds % 2
            if tx < cnt[last]:
                O[tx] = s[last, tx]
            if tx == 0:
                C[0] = cnt[last]

    return compact


def histogram(n, bins, per_thread):
    @T.prim_func
    def hist(A: T.Tensor((n * per_thread,), "int32"), H: T.Tensor((bins,), "int32")):
        with T.Kernel(1, threads=n):
            tx = T.get_thread_binding()
            h = T.alloc_shared((bins,), "int32")
            if tx < bins:
                h[tx] = 0
            T.sync_threads()
            for j in T.serial(per_thread):
                T.atomic_add(h[A[tx * per_thread + j] % bins], 1)
            T.sync_threads()
            if tx < bins:
                H[tx] = h[tx]

    return hist


def ticket(n):
    @T.prim_func
    def take(B: T.Tensor((n,), "int32"), P: T.Tensor((n,), "int32")):
        with T.Kernel(1, threads=n):
            tx = T.get_thread_binding()
            c = T.alloc_shared((1,), "int32")
            if tx == 0:
                c[0] = 0
            T.sync_threads()
            P[tx] = T.atomic_add(c[0], 1, return_prev=True)
            B[tx] = c[0]  # every thread's increment must be visible: a barrier goes before this

    return take


def neighbour(n, mirrored):
    @T.prim_func
    def swap(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=n):
            tx = T.get_thread_binding()
            s = T.alloc_shared((2, n), "float32")
            s[0, tx] = A[tx]
            if mirrored:
                B[tx] = s[0, n - 1 - tx]  # the same half, another thread's element: a barrier
            else:
                B[tx] = s[1 ^ 1, (tx + 1) % n]  # (1 ^ 1 is half 0 too)

    return swap


def producer_branch(else_form: bool):
    """Per-thread code in the branch of the threads 64..127 (no tile op there, so not a thread
    group region): one thread reads what another wrote, so the branch needs a barrier of its own."""
    @T.prim_func
    def k(A: T.Tensor((128,), "float32"), B: T.Tensor((64,), "float32"), C: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding()
            s = T.alloc_shared((64,), "float32")
            if else_form:
                if tx < 64:
                    C[tx] = A[tx]
                else:
                    s[tx - 64] = A[tx] * 2.0
                    B[tx - 64] = s[127 - tx]
            else:
                if tx >= 64:
                    s[tx - 64] = A[tx] * 2.0
                    B[tx - 64] = s[127 - tx]

    return k


def through_a_view(n, m):
    """TileLang's reshape test: a T.Parallel loop writes a shared tile, a copy reads it through
    T.reshape (a view on the same memory); the copy's threads read what others wrote."""
    @T.prim_func
    def k(A: T.Tensor((n,), "float32"), B: T.Tensor((n // m, m), "float32")):
        with T.Kernel(1) as _:
            s = T.alloc_shared((n,), "float32")
            for i in T.Parallel(n):
                s[i] = A[i]
            s2 = T.reshape(s, [n // m, m])
            T.copy(s2, B)

    return k


def pipelined_view(n):
    """In a T.Pipelined loop: a T.Parallel loop writes a tile, a copy reads it through a view
    declared before the loop (the pipeline places this loop's barriers itself)."""
    @T.prim_func
    def k(A: T.Tensor((n * 64,), "float32"), B: T.Tensor((n, 8, 8), "float32")):
        with T.Kernel(1, threads=64) as _:
            a_s = T.alloc_shared((64,), "float32")
            s = T.alloc_shared((64,), "float32")
            s2 = T.reshape(s, [8, 8])
            for it in T.Pipelined(n, num_stages=2):
                T.copy(A[it * 64], a_s)
                for i in T.Parallel(64):
                    s[63 - i] = a_s[i] * 2.0
                T.copy(s2, B[it, 0, 0])

    return k
