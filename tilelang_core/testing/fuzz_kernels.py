"""Kernel families of the differential fuzz tests (tests/fuzz on the reference paths,
backends/cuda/tests/gpu/test_gpu_fuzz.py on a GPU), each built from generated sizes.

Every builder returns a ``Case``: the kernel, its inputs (numpy, by parameter name), the float64
reference of its outputs and the tolerance that fits the dtype. Sizes come from the test's
strategies: ragged ones (tiles that overhang the tensor), size-1 dimensions, and values bound
inside loop bodies (``row = by * bM + i`` in a T.Parallel body, ``kk = bz * n + k`` in a
T.Pipelined body), the shapes that found silent wrong answers before.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

import tilelang_core.language as T


@dataclass
class Case:
    name: str
    func: object
    inputs: dict
    expected: dict
    rtol: float = 1e-6
    atol: float = 1e-6
    sizes: dict = field(default_factory=dict)

    def __repr__(self) -> str:  # what hypothesis prints for a failing example
        return f"Case({self.name}, {self.sizes})"


def _rand(rng, shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


# -- copies through every staging -------------------------------------------------------------------
def copy_case(rng, M, N, bM, bN, threads, staging):
    """A -> (shared | fragment | shared then fragment | fragment then shared) -> B, tile by tile."""

    @T.prim_func
    def copy(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            s = T.alloc_shared((bM, bN), "float32")
            f = T.alloc_fragment((bM, bN), "float32")
            # the branches are Python constants: the parser keeps the one the staging names
            if staging == "shared":
                T.copy(A[by * bM, bx * bN], s)
                T.copy(s, B[by * bM, bx * bN])
            elif staging == "fragment":
                T.copy(A[by * bM, bx * bN], f)
                T.copy(f, B[by * bM, bx * bN])
            elif staging == "shared_fragment":
                T.copy(A[by * bM, bx * bN], s)
                T.copy(s, f)
                T.copy(f, B[by * bM, bx * bN])
            else:
                T.copy(A[by * bM, bx * bN], f)
                T.copy(f, s)
                T.copy(s, B[by * bM, bx * bN])

    a = _rand(rng, (M, N))
    return Case("copy", copy, {"A": a, "B": np.zeros_like(a)}, {"B": a.astype(np.float64)},
                sizes=dict(M=M, N=N, bM=bM, bN=bN, threads=threads, staging=staging))


# -- element-wise with broadcast and a value bound in the loop body ----------------------------------
def broadcast_case(rng, M, N, bM, bN, threads):
    """B = A * r[:, None] + c[None, :] + (row % 3): a row vector in a fragment, a column vector in
    shared memory, the global row index bound inside the T.Parallel body."""
    @T.prim_func
    def broadcast(A: T.Tensor((M, N), "float32"), R: T.Tensor((M,), "float32"), C: T.Tensor((N,), "float32"),
                  B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            f = T.alloc_fragment((bM, bN), "float32")
            r = T.alloc_fragment((bM,), "float32")
            c = T.alloc_shared((bN,), "float32")
            T.copy(A[by * bM, bx * bN], f)
            T.copy(R[by * bM], r)
            T.copy(C[bx * bN], c)
            for i, j in T.Parallel(bM, bN):
                row = by * bM + i
                f[i, j] = f[i, j] * r[i] + c[j] + T.cast(row % 3, "float32")
            T.copy(f, B[by * bM, bx * bN])

    a, r, c = _rand(rng, (M, N)), _rand(rng, (M,)), _rand(rng, (N,))
    want = a.astype(np.float64) * r[:, None] + c[None, :] + (np.arange(M) % 3)[:, None]
    return Case("broadcast", broadcast, {"A": a, "R": r, "C": c, "B": np.zeros_like(a)}, {"B": want},
                rtol=1e-5, atol=1e-5, sizes=dict(M=M, N=N, bM=bM, bN=bN, threads=threads))


# -- reductions along either dimension, from a fragment or from shared memory -----------------------
_REDUCE = {"sum": lambda x, d: x.sum(d), "max": lambda x, d: x.max(d), "min": lambda x, d: x.min(d),
           "abssum": lambda x, d: np.abs(x).sum(d), "absmax": lambda x, d: np.abs(x).max(d)}


def reduce_case(rng, rows, cols, block, threads, kind, dim, source):
    """O = reduce(A, dim) with the reduced dimension whole in one tile (an overhanging tile reads
    zeros, which a max would see) and the other one tiled by ``block``, ragged."""
    if dim == 1:
        shape, tile, out_len = (rows, cols), (block, cols), rows
    else:
        shape, tile, out_len = (rows, cols), (rows, block), cols
    func = _reduce_kernel(shape, tile, threads, kind, dim, source)
    a = _rand(rng, shape)
    return Case("reduce", func, {"A": a, "O": np.zeros(out_len, np.float32)},
                {"O": _REDUCE[kind](a.astype(np.float64), dim)}, rtol=1e-4, atol=1e-4,
                sizes=dict(shape=shape, tile=tile, threads=threads, kind=kind, dim=dim, source=source))


def _reduce_kernel(shape, tile, threads, kind, dim, source):
    (M, N), (tM, tN) = shape, tile
    grid = T.ceildiv(M, tM) if dim == 1 else T.ceildiv(N, tN)
    out_len = M if dim == 1 else N
    out_tile = tM if dim == 1 else tN
    op = getattr(T, f"reduce_{kind}")
    alloc = T.alloc_fragment if source == "fragment" else T.alloc_shared

    @T.prim_func
    def reduce(A: T.Tensor((M, N), "float32"), O: T.Tensor((out_len,), "float32")):
        with T.Kernel(grid, threads=threads) as b:
            x = alloc((tM, tN), "float32")  # the source tile: registers or shared memory
            o = T.alloc_fragment((out_tile,), "float32")
            if dim == 1:
                T.copy(A[b * tM, 0], x)
            else:
                T.copy(A[0, b * tN], x)
            op(x, o, dim=dim)
            T.copy(o, O[b * out_tile])

    return reduce


# -- row softmax ------------------------------------------------------------------------------------
def softmax_case(rng, M, N, bM, threads):
    """Row softmax of tiles (bM, N): max, exp, sum, divide; N = 1 included (it returned NaN)."""
    @T.prim_func
    def softmax(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, bM), threads=threads) as bx:
            x = T.alloc_fragment((bM, N), "float32")
            m = T.alloc_fragment((bM,), "float32")
            s = T.alloc_fragment((bM,), "float32")
            T.copy(X[bx * bM, 0], x)
            T.reduce_max(x, m, dim=1)
            for i, j in T.Parallel(bM, N):
                x[i, j] = T.exp(x[i, j] - m[i])
            T.reduce_sum(x, s, dim=1)
            for i, j in T.Parallel(bM, N):
                x[i, j] = x[i, j] / s[i]
            T.copy(x, Y[bx * bM, 0])

    x = _rand(rng, (M, N))
    e = np.exp(x.astype(np.float64) - x.max(1, keepdims=True))
    return Case("softmax", softmax, {"X": x, "Y": np.zeros_like(x)}, {"Y": e / e.sum(1, keepdims=True)},
                rtol=1e-4, atol=1e-6, sizes=dict(M=M, N=N, bM=bM, threads=threads))


# -- gemm, every transpose ----------------------------------------------------------------------------
def gemm_case(rng, M, N, K, bM, bN, bK, trans_a, trans_b, stages, threads):
    """C = op(A) @ op(B) in fp16 with a float32 accumulator, tiles overhanging every edge."""
    a_shape = (K, M) if trans_a else (M, K)
    b_shape = (N, K) if trans_b else (K, N)
    a_tile = (bK, bM) if trans_a else (bM, bK)
    b_tile = (bN, bK) if trans_b else (bK, bN)

    @T.prim_func
    def gemm(A: T.Tensor(a_shape, "float16"), B: T.Tensor(b_shape, "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            A_s = T.alloc_shared(a_tile, "float16")
            B_s = T.alloc_shared(b_tile, "float16")
            acc = T.alloc_fragment((bM, bN), "float32")
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=stages):
                if trans_a:
                    T.copy(A[k * bK, by * bM], A_s)
                else:
                    T.copy(A[by * bM, k * bK], A_s)
                if trans_b:
                    T.copy(B[bx * bN, k * bK], B_s)
                else:
                    T.copy(B[k * bK, bx * bN], B_s)
                T.gemm(A_s, B_s, acc, transpose_A=trans_a, transpose_B=trans_b)
            T.copy(acc, C[by * bM, bx * bN])

    a, b = _rand(rng, a_shape, np.float16), _rand(rng, b_shape, np.float16)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    want = (a64.T if trans_a else a64) @ (b64.T if trans_b else b64)
    return Case("gemm", gemm, {"A": a, "B": b, "C": np.zeros((M, N), np.float32)}, {"C": want},
                rtol=1e-3, atol=1e-3 * np.sqrt(K),
                sizes=dict(M=M, N=N, K=K, bM=bM, bN=bN, bK=bK, trans_a=trans_a, trans_b=trans_b,
                           stages=stages, threads=threads))


# -- split-K with atomics, the K offset bound inside the pipelined body --------------------------------
def splitk_case(rng, M, N, K, bM, bN, bK, splits, threads):
    """C += A[:, part] @ B[part, :] per split, accumulated with T.atomic_add; ``kk`` bound in the
    T.Pipelined body (TileLang's split-K example; it gave a wrong answer on the H200 once)."""
    per_split = -(-K // (splits * bK))  # K tiles per split

    @T.prim_func
    def splitk(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), splits, threads=threads) as (bx, by, bz):
            A_s = T.alloc_shared((bM, bK), "float16")
            B_s = T.alloc_shared((bK, bN), "float16")
            acc = T.alloc_fragment((bM, bN), "float32")
            T.clear(acc)
            for k in T.Pipelined(per_split, num_stages=2):
                kk = bz * per_split + k
                T.copy(A[by * bM, kk * bK], A_s)
                T.copy(B[kk * bK, bx * bN], B_s)
                T.gemm(A_s, B_s, acc)
            for i, j in T.Parallel(bM, bN):
                T.atomic_add(C[by * bM + i, bx * bN + j], acc[i, j])

    a, b = _rand(rng, (M, K), np.float16), _rand(rng, (K, N), np.float16)
    want = a.astype(np.float64) @ b.astype(np.float64)
    return Case("splitk", splitk, {"A": a, "B": b, "C": np.zeros((M, N), np.float32)}, {"C": want},
                rtol=1e-3, atol=1e-3 * np.sqrt(K),
                sizes=dict(M=M, N=N, K=K, bM=bM, bN=bN, bK=bK, splits=splits, threads=threads))


# -- fragments indexed out of loop order, statistics next to shared tiles -------------------------------
def transpose_case(rng, M, N, bM, bN, threads):
    """B = A.T through a fragment written transposed in T.Parallel and a shared tile read back
    transposed from it (both gave silent wrong answers on every SIMT backend)."""
    @T.prim_func
    def transpose(A: T.Tensor((M, N), "float32"), B: T.Tensor((N, M), "float32")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            s = T.alloc_shared((bM, bN), "float32")
            f = T.alloc_fragment((bN, bM), "float32")
            o = T.alloc_shared((bN, bM), "float32")
            T.copy(A[by * bM, bx * bN], s)
            for i, j in T.Parallel(bM, bN):
                f[j, i] = s[i, j]
            for j, i in T.Parallel(bN, bM):
                o[j, i] = f[j, i] * 2.0
            T.copy(o, B[bx * bN, by * bM])

    a = _rand(rng, (M, N))
    return Case("transpose", transpose, {"A": a, "B": np.zeros((N, M), np.float32)}, {"B": 2 * a.T.astype(np.float64)},
                sizes=dict(M=M, N=N, bM=bM, bN=bN, threads=threads))


def centered_case(rng, M, N, bM, threads, dim):
    """O = A - max(A, dim) with the statistic a fragment read in a loop over shared tiles only."""
    stat = N if dim == 0 else bM

    @T.prim_func
    def centered(A: T.Tensor((M, N), "float32"), O: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, bM), threads=threads) as bx:
            s = T.alloc_shared((bM, N), "float32")
            o = T.alloc_shared((bM, N), "float32")
            m = T.alloc_fragment((stat,), "float32")
            T.copy(A[bx * bM, 0], s)
            T.reduce_max(s, m, dim=dim)
            for i, j in T.Parallel(bM, N):
                o[i, j] = s[i, j] - (m[j] if dim == 0 else m[i])
            T.copy(o, O[bx * bM, 0])

    a = _rand(rng, (M, N))
    if dim == 0:  # the tile's rows past M read 0, which the column max sees: pad as the kernel does
        tiles = -(-M // bM)
        padded = np.zeros((tiles * bM, N))
        padded[:M] = a
        want = (padded.reshape(tiles, bM, N) - padded.reshape(tiles, bM, N).max(1, keepdims=True)).reshape(-1, N)[:M]
    else:
        want = a.astype(np.float64) - a.max(1, keepdims=True)
    return Case("centered", centered, {"A": a, "O": np.zeros_like(a)}, {"O": want}, rtol=1e-6, atol=1e-6,
                sizes=dict(M=M, N=N, bM=bM, threads=threads, dim=dim))
