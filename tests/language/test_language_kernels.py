"""Whole kernels (GEMM, softmax) parse to the IR that docs/tile-ir.md promises."""

import tvm
from language_irutil import allocs, ext, launches, loop_kind, loops, mins, op_names, tile_ops

import tilelang_core.language as T
from tilelang_core.ir import Copy, Fill, Gemm, GemmWarpPolicy, Reduce


def make_gemm(M=1024, N=512, K=256, bM=128, bN=64, bK=32, stages=3, transpose_B=False):
    b_shape = (N, K) if transpose_B else (K, N)
    bs_shape = (bN, bK) if transpose_B else (bK, bN)

    @T.prim_func
    def gemm(A: T.Tensor((M, K), T.float16), B: T.Tensor(b_shape, T.float16),
             C: T.Tensor((M, N), T.float32)):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=128) as (bx, by):
            A_shared = T.alloc_shared((bM, bK), T.float16)
            B_shared = T.alloc_shared(bs_shape, T.float16)
            C_local = T.alloc_fragment((bM, bN), T.float32)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=stages):
                T.copy(A[by * bM, k * bK], A_shared)
                if transpose_B:
                    T.copy(B[bx * bN:(bx + 1) * bN, k * bK:(k + 1) * bK], B_shared)
                else:
                    T.copy(B[k * bK, bx * bN], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_B=transpose_B,
                       policy=T.GemmWarpPolicy.FullRow)
            T.copy(C_local, C[by * bM, bx * bN])

    return gemm


def test_gemm_is_a_primfunc_with_global_params():
    f = make_gemm()
    assert isinstance(f, tvm.tirx.PrimFunc)
    assert [str(p.name) for p in f.params] == ["A", "B", "C"]
    assert [str(p.ty.storage_scope) for p in f.params] == ["global"] * 3
    assert [list(map(int, p.ty.shape)) for p in f.params] == [[1024, 256], [256, 512],
                                                              [1024, 512]]
    assert f.attrs["global_symbol"] == "gemm"


def test_gemm_kernel_launches_blocks_and_threads():
    assert launches(make_gemm()) == {"blockIdx.x": 8, "blockIdx.y": 8, "threadIdx.x": 128}


def test_gemm_allocations_have_tilelang_scopes():
    assert allocs(make_gemm()) == {
        "A_shared": ([128, 32], "float16", "shared.dyn"),
        "B_shared": ([32, 64], "float16", "shared.dyn"),
        "C_local": ([128, 64], "float32", "local.fragment"),
    }


def test_gemm_tile_ops_in_order_with_full_regions():
    f = make_gemm()
    assert op_names(f) == ["tl.tile.fill", "tl.tile.copy", "tl.tile.copy", "tl.tile.gemm",
                           "tl.tile.copy"]
    fill, copy_a, copy_b, gemm, copy_c = tile_ops(f)
    assert isinstance(fill, Fill) and float(fill.value.value) == 0.0
    # start-index form: the extent comes from the shared operand
    assert isinstance(copy_a, Copy)
    assert ext(copy_a.src) == [128, 32] and mins(copy_a.src) == ["by * 128", "k * 32"]
    assert ext(copy_a.dst) == [128, 32] and mins(copy_a.dst) == ["0", "0"]
    assert ext(copy_b.src) == [32, 64] and mins(copy_b.src) == ["k * 32", "bx * 64"]
    assert isinstance(gemm, Gemm) and gemm.policy is GemmWarpPolicy.FullRow
    assert [str(r.source.name) for r in gemm.args()] == ["A_shared", "B_shared", "C_local"]
    # store direction: fragment -> global with the extent of the fragment
    assert str(copy_c.src.source.name) == "C_local" and ext(copy_c.dst) == [128, 64]
    assert mins(copy_c.dst) == ["by * 128", "bx * 64"]


def test_gemm_pipelined_loop_is_annotated_serial():
    (k_loop,) = loops(make_gemm(stages=4))
    assert loop_kind(k_loop) == "serial"
    assert int(k_loop.extent) == 8
    assert dict(k_loop.annotations) == {"tl.num_stages": 4}


def test_gemm_transpose_b_with_slice_copy():
    f = make_gemm(transpose_B=True)
    copy_b = tile_ops(f)[2]
    assert ext(copy_b.src) == [64, 32] and mins(copy_b.src) == ["bx * 64", "k * 32"]
    gemm = tile_ops(f)[3]
    assert gemm.transpose_B and gemm.config()["transpose_B"] is True


def make_softmax(M=256, N=1024, bM=4):
    scale = 1.44269504

    @T.prim_func
    def softmax(X: T.Tensor((M, N), T.float16), Y: T.Tensor((M, N), T.float16)):
        with T.Kernel(T.ceildiv(M, bM), threads=128) as bx:
            x = T.alloc_fragment((bM, N), T.float32)
            row_max = T.alloc_fragment((bM,), T.float32)
            row_sum = T.alloc_fragment((bM,), T.float32)
            T.copy(X[bx * bM:(bx + 1) * bM, :], x)
            T.fill(row_max, -T.infinity(T.float32))
            T.reduce_max(x, row_max, dim=1, clear=False)
            for i, j in T.Parallel(bM, N):
                x[i, j] = T.exp2(x[i, j] * scale - row_max[i] * scale)
            T.reduce_sum(x, row_sum, dim=1)
            for i, j in T.Parallel(bM, N):
                x[i, j] /= row_sum[i]
            T.copy(x, Y[bx * bM, 0])

    return softmax


def test_softmax_ops_and_conversions():
    f = make_softmax()
    assert op_names(f) == ["tl.tile.copy", "tl.tile.fill", "tl.tile.reduce", "tl.tile.reduce",
                           "tl.tile.copy"]
    load, fill, rmax, rsum, store = tile_ops(f)
    assert ext(load.src) == [4, 1024]  # the ':' slice covers the whole dimension
    assert str(load.src.source.ty.dtype) == "float16" and str(load.dst.source.ty.dtype) == \
        "float32"
    assert "inf" in str(fill.value)
    assert isinstance(rmax, Reduce) and rmax.config() == {"kind": "max", "dim": 1,
                                                          "clear": False, "nan_propagate": False}
    assert rsum.config() == {"kind": "sum", "dim": 1, "clear": True, "nan_propagate": False}
    assert ext(store.dst) == [4, 1024]


def test_softmax_parallel_loops_are_annotated_nests():
    ls = loops(make_softmax())
    assert len(ls) == 4
    assert all(loop_kind(lp) == "parallel" for lp in ls)
    assert all(dict(lp.annotations) == {"tl.parallel": 1} for lp in ls)
    assert [int(lp.extent) for lp in ls] == [4, 1024, 4, 1024]
    inner = ls[1]
    assert isinstance(inner.body, tvm.tirx.BufferStore)
    assert "T.exp2" in inner.body.script()


def make_flash_attention(batch=2, heads=4, seq_len=256, dim=64, is_causal=True, block_M=64,
                         block_N=64):
    """TileLang's flash-attention example, unchanged but for the import."""
    scale = (1.0 / dim) ** 0.5 * 1.44269504
    shape = [batch, seq_len, heads, dim]
    dtype = "float16"
    accum_dtype = "float"

    @T.macro
    def rescale(acc_o: T.Tensor, scores_scale: T.Tensor):
        for i, j in T.Parallel(block_M, dim):
            acc_o[i, j] *= scores_scale[i]

    @T.prim_func
    def main(Q: T.Tensor(shape, dtype), K: T.Tensor(shape, dtype), V: T.Tensor(shape, dtype),
             Output: T.Tensor(shape, dtype)):
        with T.Kernel(T.ceildiv(seq_len, block_M), heads, batch, threads=128) as (bx, by, bz):
            Q_shared = T.alloc_shared([block_M, dim], dtype)
            K_shared = T.alloc_shared([block_N, dim], dtype)
            V_shared = T.alloc_shared([block_N, dim], dtype)
            acc_s = T.alloc_fragment([block_M, block_N], accum_dtype)
            acc_s_cast = T.alloc_fragment([block_M, block_N], dtype)
            acc_o = T.alloc_fragment([block_M, dim], accum_dtype)
            scores_max = T.alloc_fragment([block_M], accum_dtype)
            scores_max_prev = T.alloc_fragment([block_M], accum_dtype)
            scores_scale = T.alloc_fragment([block_M], accum_dtype)
            scores_sum = T.alloc_fragment([block_M], accum_dtype)
            logsum = T.alloc_fragment([block_M], accum_dtype)

            T.copy(Q[bz, bx * block_M:(bx + 1) * block_M, by, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum_dtype))
            loop_range = (
                T.min(T.ceildiv(seq_len, block_N), T.ceildiv((bx + 1) * block_M, block_N))
                if is_causal else T.ceildiv(seq_len, block_N))
            for k in T.Pipelined(loop_range, num_stages=2):
                T.copy(K[bz, k * block_N:(k + 1) * block_N, by, :], K_shared)
                if is_causal:
                    for i, j in T.Parallel(block_M, block_N):
                        acc_s[i, j] = T.if_then_else(bx * block_M + i >= k * block_N + j, 0,
                                                     -T.infinity(acc_s.dtype))
                else:
                    T.clear(acc_s)
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True,
                       policy=T.GemmWarpPolicy.FullRow)
                T.copy(scores_max, scores_max_prev)
                T.fill(scores_max, -T.infinity(accum_dtype))
                T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                for i in T.Parallel(block_M):
                    scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                for i, j in T.Parallel(block_M, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                T.reduce_sum(acc_s, scores_sum, dim=1)
                for i in T.Parallel(block_M):
                    logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                T.copy(acc_s, acc_s_cast)
                rescale(acc_o, scores_scale)
                T.copy(V[bz, k * block_N:(k + 1) * block_N, by, :], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, Output[bz, bx * block_M:(bx + 1) * block_M, by, :])

    return main


def test_flash_attention_example_ports_unchanged():
    f = make_flash_attention()
    assert launches(f) == {"blockIdx.x": 4, "blockIdx.y": 4, "blockIdx.z": 2,
                           "threadIdx.x": 128}
    names = [o.name for o in tile_ops(f)]
    assert names == ["copy", "fill", "fill", "fill", "copy", "gemm", "copy", "fill", "reduce",
                     "reduce", "copy", "copy", "gemm", "copy"]
    q_load = tile_ops(f)[0]
    assert ext(q_load.src) == [1, 64, 1, 64]  # mixed index/slice access on a 4-D tensor
    assert mins(q_load.src) == ["bz", "bx * 64", "by", "0"]
    gemm_qk, gemm_pv = [o for o in tile_ops(f) if isinstance(o, Gemm)]
    assert gemm_qk.transpose_B and not gemm_pv.transpose_B
    assert str(gemm_pv.A.source.ty.storage_scope) == "local.fragment"
    (k_loop,) = [lp for lp in loops(f) if "tl.num_stages" in lp.annotations]
    assert "T.min(" in str(k_loop.extent) or isinstance(k_loop.extent, tvm.ir.Var)
    # the macro's loop nest is inlined in the pipelined loop
    assert sum(1 for lp in loops(f) if "tl.parallel" in lp.annotations) == 10
