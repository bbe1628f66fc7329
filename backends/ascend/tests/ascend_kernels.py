"""Small kernels for the Ascend lowering tests (kernels must live in a file to be parsed)."""

import tilelang_ascend.language as T


def explicit_memories(M=64, N=64, K=64):
    """The dialect: L1 operands and an L0C accumulator placed by hand."""

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
             C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=1) as bx:
            a = T.alloc_l1((M, K), "float16")
            b = T.alloc_l1((K, N), "float16")
            c = T.alloc_l0c((M, N), "float32")
            T.copy(A, a)
            T.copy(B, b)
            T.gemm(a, b, c, clear_accum=True)
            T.copy(c, C)

    return main


def shifted_index(M=8, N=64):
    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=32) as bx:
            x = T.alloc_fragment((M, N), "float32")
            y = T.alloc_fragment((M, N), "float32")
            T.copy(X, x)
            for i, j in T.Parallel(M, N - 1):
                y[i, j] = x[i, j + 1]
            T.copy(y, Y)

    return main


def transposed_read(M=16):
    @T.prim_func
    def main(X: T.Tensor((M, M), "float32"), Y: T.Tensor((M, M), "float32")):
        with T.Kernel(1, threads=32) as bx:
            x = T.alloc_fragment((M, M), "float32")
            y = T.alloc_fragment((M, M), "float32")
            T.copy(X, x)
            for i, j in T.Parallel(M, M):
                y[i, j] = x[j, i] * 2.0
            T.copy(y, Y)

    return main


def ub_gemm_operand(M=32, N=32, K=32):
    """A gemm whose A operand is computed by the Vector core (scaled in UB first)."""

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
             C: T.Tensor((M, N), "float16")):
        with T.Kernel(1, threads=128) as bx:
            a = T.alloc_fragment((M, K), "float16")
            b = T.alloc_shared((K, N), "float16")
            c = T.alloc_fragment((M, N), "float32")
            T.copy(A, a)
            for i, j in T.Parallel(M, K):
                a[i, j] = a[i, j] * T.float16(2.0)
            T.copy(B, b)
            T.clear(c)
            T.gemm(a, b, c)
            T.copy(c, C)

    return main


def strided_global_read(M=8, N=64):
    @T.prim_func
    def main(X: T.Tensor((M, 2 * N), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=32) as bx:
            y = T.alloc_fragment((M, N), "float32")
            for i, j in T.Parallel(M, N):
                y[i, j] = X[i, j * 2] * 2.0
            T.copy(y, Y)

    return main


def data_dependent_if(M=8, N=64):
    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=32) as bx:
            for i, j in T.Parallel(M, N):
                if X[i, j] > 0:
                    Y[i, j] = X[i, j]

    return main


def row_cumsum(M=8, N=64, window=False):
    """window: scan only columns 8: of each row (not whole UB rows)."""

    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=32) as bx:
            x = T.alloc_fragment((M, N), "float32")
            T.copy(X, x)
            if window:
                T.cumsum(x[0:M, 8:N], dim=1)
            else:
                T.cumsum(x, dim=1)
            T.copy(x, Y)

    return main


def expert_scopes(M=32, N=32, K=32, misplaced=False):
    """Expert mode: the author says which core runs what."""

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
             C: T.Tensor((M, N), "float16")):
        with T.Kernel(1, threads=1) as bx:
            a = T.alloc_l1((M, K), "float16")
            b = T.alloc_l1((K, N), "float16")
            c = T.alloc_fragment((M, N), "float32")
            with T.Scope("C"):
                T.copy(A, a)
                T.copy(B, b)
                T.gemm(a, b, c, clear_accum=True)
                if misplaced:
                    for i, j in T.Parallel(M, N):
                        c[i, j] = T.max(c[i, j], 0)
            with T.Scope("V"):
                for i, j in T.Parallel(M, N):
                    c[i, j] = T.max(c[i, j], 0)
                T.copy(c, C)

    return main


def pipelined_row_sum(M=8, N=250, block_N=64):
    """A Vector-only pipelined loop: tiles of X stream into a double-buffered UB tile."""

    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            x = T.alloc_shared((M, block_N), "float32")
            acc = T.alloc_fragment((M,), "float32")
            part = T.alloc_fragment((M,), "float32")
            T.fill(acc, 0)
            for k in T.Pipelined(T.ceildiv(N, block_N), num_stages=3):
                T.copy(X[0, k * block_N], x)
                T.reduce_sum(x, part, dim=1)
                for i in T.Parallel(M):
                    acc[i] = acc[i] + part[i]
            T.copy(acc, Y)

    return main


def simt_gather(M=5, N=40, block_M=4, threads=64):
    """T.SimtVF: a gather by a per-column index, a shifted neighbour and an if on the data, over
    ragged row blocks; none of these can become SIMD instructions."""

    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), Idx: T.Tensor((N,), "int32"),
             Y: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            x = T.alloc_shared((block_M, N), "float32")
            idx = T.alloc_shared((N,), "int32")
            y = T.alloc_shared((block_M, N), "float32")
            T.copy(X[bx * block_M, 0], x)
            T.copy(Idx, idx)
            with T.SimtVF(threads=threads):
                for i, j in T.Parallel(block_M, N):
                    y[i, j] = x[i, idx[j]] * 2.0
                    if x[i, j] < 0:
                        y[i, j] = y[i, j] + x[i, (j + 1) % N]
            with T.SimdVF():
                for i, j in T.Parallel(block_M, N):
                    y[i, j] = y[i, j] + 1.0
            T.copy(y, Y[bx * block_M, 0])

    return main


def simd_region_with_a_gather(M=4, N=32):
    """T.SimdVF refuses what only SIMT can run."""

    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=128) as bx:
            x = T.alloc_shared((M, N), "float32")
            y = T.alloc_shared((M, N), "float32")
            T.copy(X, x)
            with T.SimdVF():
                for i, j in T.Parallel(M, N - 1):
                    y[i, j] = x[i, j + 1]
            T.copy(y, Y)

    return main


def atomic_combine(kind="max", G=3, M=5, N=40, dtype="float32"):
    """Each of G blocks combines its slice X[g] into Y with T.atomic_max / T.atomic_min (the
    MTE3 write unit in atomic max/min mode), after scaling it on the Vector core."""
    combine = T.atomic_max if kind == "max" else T.atomic_min

    @T.prim_func
    def main(X: T.Tensor((G * M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(G, threads=128) as bx:
            x = T.alloc_shared((M, N), dtype)
            T.copy(X[bx * M, 0], x)
            for i, j in T.Parallel(M, N):
                x[i, j] = x[i, j] * 2.0
            combine(Y[0, 0], x)

    return main


def cumsum(M, N, dim=1, reverse=False, block=32, dtype="float32", acc="float32", in_place=False):
    """T.cumsum along dim of an M x N tensor; blocks tile the other dim (ragged last block), the
    scanned dim fits one tile. ``acc``: the dtype of the scanned tile (src is cast into it)."""
    bm, bn = (block, N) if dim == 1 else (M, block)
    grid = (M + bm - 1) // bm if dim == 1 else (N + bn - 1) // bn
    step_m, step_n = (block, 0) if dim == 1 else (0, block)

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), acc)):
        with T.Kernel(grid, threads=1) as b:
            x = T.alloc_shared((bm, bn), dtype)
            y = T.alloc_shared((bm, bn), acc)
            T.copy(X[b * step_m, b * step_n], x)
            if in_place:
                T.cumsum(x, dim=dim, reverse=reverse)
                T.copy(x, y)
            else:
                T.cumsum(x, y, dim=dim, reverse=reverse)
            T.copy(y, Y[b * step_m, b * step_n])

    return main



def dynamic_rows(N=64, block_M=32, dynamic_grid=True):
    """Rows of X are T.dynamic: the grid ceildiv(M, block_M) is known only at launch."""
    M = T.dynamic("M")

    @T.prim_func
    def scale(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, block_M) if dynamic_grid else 4, threads=1) as b:
            x = T.alloc_shared((block_M, N), "float32")
            T.copy(X[b * block_M, 0], x)
            T.copy(x, Y[b * block_M, 0])

    return scale
