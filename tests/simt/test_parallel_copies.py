"""transform/parallel_copies.py: a T.Parallel loop of a T.Pipelined body that copies a global tile
into shared memory becomes that tile's T.copy (the software pipeline's producer); every loop that
would mean something else stays as written. Numerics of rewritten loops (ragged tiles, zero fill):
backends/cuda/tests/test_warp_matrix_interpreted.py, gpu/test_gpu_warp_matrix.py."""

import pytest
import tvm_ffi
from tvm import tirx

import tilelang_core.language as T
from tilelang_core.ir import Copy, TileOp, is_tile_op
from tilelang_core.ir import region as R
from tilelang_core.transform.parallel_copies import parallel_copies

M, K, BM, BK = 96, 80, 32, 16


def kernel(store):
    """A pipelined loop whose body is the macro ``store(A, B, S, by, ko)`` (a T.Parallel loop) then a
    use of S."""
    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((M, K), T.float32), C: T.Tensor((BM, BK), T.float16)):
        with T.Kernel(T.ceildiv(M, BM), threads=64) as by:
            S = T.alloc_shared((BM, BK), T.float16)
            for ko in T.Pipelined(T.ceildiv(K, BK), num_stages=2):
                store(A, B, S, by, ko)
                T.copy(S, C)

    return main


def copies(func):
    found = []
    tvm_ffi.structural_walk(parallel_copies(func.body),
                            [(tirx.TilePrimitiveCall, lambda c: found.append(TileOp.from_stmt(c)) if is_tile_op(c)
                              and isinstance(TileOp.from_stmt(c), Copy) else None)])
    return found


def test_a_tile_load_becomes_its_copy():
    @T.macro
    def load(A, B, S, by, ko):
        for i, k in T.Parallel(BM, BK):
            S[i, k] = A[by * BM + i, ko * BK + k]

    first = copies(kernel(load))[0]
    assert first.src.source.name == "A" and first.dst.source.name == "S"
    assert [R.as_int(e) for e in R.extents_of(first.src)] == [BM, BK]
    assert [R.as_int(e) for e in R.extents_of(first.dst)] == [BM, BK]
    assert "by * 32" in str(first.src.region[0].min) and "ko * 16" in str(first.src.region[1].min)


def test_loop_order_does_not_matter_only_index_order():
    @T.macro
    def load(A, B, S, by, ko):
        for k, i in T.Parallel(BK, BM):
            S[i, k] = A[by * BM + i, ko * BK + k]

    assert len(copies(kernel(load))) == 2


@pytest.mark.parametrize("name", ["transposed", "cast", "two_statements", "strided", "broadcast", "computed"])
def test_loops_that_are_not_a_tile_copy_stay(name):
    @T.macro
    def transposed(A, B, S, by, ko):
        for i, k in T.Parallel(BM, BK):
            S[i, k] = A[by * BM + k, ko * BK + i]

    @T.macro
    def cast(A, B, S, by, ko):
        for i, k in T.Parallel(BM, BK):
            S[i, k] = T.cast(B[by * BM + i, ko * BK + k], "float16")

    @T.macro
    def two_statements(A, B, S, by, ko):
        for i, k in T.Parallel(BM, BK):
            S[i, k] = A[by * BM + i, ko * BK + k]
            S[i, 0] = A[by * BM + i, 0]

    @T.macro
    def strided(A, B, S, by, ko):
        for i, k in T.Parallel(BM, BK // 2):
            S[i, k] = A[by * BM + i, ko * BK + 2 * k]

    @T.macro
    def broadcast(A, B, S, by, ko):
        for i, k in T.Parallel(BM, BK):
            S[i, k] = A[by * BM + i, ko * BK]

    @T.macro
    def computed(A, B, S, by, ko):
        for i, k in T.Parallel(BM, BK):
            S[i, k] = A[by * BM + i, ko * BK + k] * T.float16(2)

    loop = {"transposed": transposed, "cast": cast, "two_statements": two_statements, "strided": strided,
            "broadcast": broadcast, "computed": computed}[name]
    assert len(copies(kernel(loop))) == 1  # only the kernel's own T.copy(S, C)


def test_loops_outside_a_pipelined_body_stay():
    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), C: T.Tensor((BM, BK), T.float16)):
        with T.Kernel(1, threads=64):
            S = T.alloc_shared((BM, BK), T.float16)
            for i, k in T.Parallel(BM, BK):
                S[i, k] = A[i, k]
            T.copy(S, C)

    assert len(copies(main)) == 1


def test_a_tensor_with_a_safe_value_keeps_its_loop():
    """Its reads past the edge give the safe value; a T.copy's would give zeros."""
    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), C: T.Tensor((BM, BK), T.float16)):
        with T.Kernel(T.ceildiv(M, BM), threads=64) as by:
            S = T.alloc_shared((BM, BK), T.float16)
            T.annotate_safe_value({A: 1})
            for ko in T.Pipelined(T.ceildiv(K, BK), num_stages=2):
                for i, k in T.Parallel(BM, BK):
                    S[i, k] = A[by * BM + i, ko * BK + k]
                T.copy(S, C)

    assert len(copies(main)) == 1


def test_columns_and_runs_stay_loops():
    """A column (gdn's ``G_shared[i] = G[b, s0 + i, h]``) or a 1-D run: not a tile of rows, which a
    TMA box or 16-byte cp.async carries; made a T.copy, it would take TMA from the whole pipeline."""
    @T.prim_func
    def main(G: T.Tensor((4, M, 8), T.float32), A: T.Tensor((M, K), T.float16), C: T.Tensor((BM,), T.float32)):
        with T.Kernel(T.ceildiv(M, BM), threads=64) as by:
            S = T.alloc_shared((BM,), T.float32)
            R = T.alloc_shared((BK,), T.float16)
            for ko in T.Pipelined(T.ceildiv(K, BK), num_stages=2):
                for i in T.Parallel(BM):
                    S[i] = G[1, by * BM + i, 3]
                for k in T.Parallel(BK):
                    R[k] = A[by, ko * BK + k]
                T.copy(S, C)

    assert len(copies(main)) == 1
