"""The cuda lowering run by the SIMT interpreter (tilelang_cuda.interpreter) against numpy in
float64: copies, swizzles, ldmatrix lane addresses, mma fragments, warp policies, reductions and
T.Parallel thread mapping are checked without a GPU. Barriers and pipelining hazards are not
(lockstep execution): the GPU tests and compute-sanitizer cover those."""

import numpy as np
import pytest

import kernels
from lowered import lower
import tilelang_core.language as T
from tilelang_cuda.interpreter import run_kernel

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("shape,kw", [
    ((128, 128, 64), {}),
    ((200, 136, 96), {}),                                   # ragged in every dimension
    ((128, 128, 64), {"trans_b": True}),
    ((128, 128, 64), {"policy": T.GemmWarpPolicy.FullRow}),
    ((128, 128, 64), {"policy": T.GemmWarpPolicy.FullCol}),
    ((64, 48, 64), {"bm": 64, "bn": 48}),                   # odd number of n8 tiles per warp (x2)
    ((128, 256, 64), {"bn": 256, "threads": 256, "stages": 2}),
    ((64, 64, 128), {"bm": 64, "bn": 64, "bk": 64, "stages": 4, "trans_b": True}),
    ((320, 192, 32), {"bm": 64, "bn": 64, "swizzle": 2}),   # T.use_swizzle with a ragged last band
])
@pytest.mark.parametrize("pipelined", [True, False])
def test_gemm(shape, kw, pipelined):
    M, N, K = shape
    func = lower(kernels.make_gemm(M, N, K, **kw), disable_cp_async=not pipelined)
    a = RNG.standard_normal((M, K)).astype(np.float16)
    b = RNG.standard_normal((N, K) if kw.get("trans_b") else (K, N)).astype(np.float16)
    c = np.full((M, N), np.nan, np.float16)
    run_kernel(func, {"A": a, "B": b, "C": c})
    ref = a.astype(np.float64) @ (b.astype(np.float64).T if kw.get("trans_b") else b.astype(np.float64))
    np.testing.assert_allclose(c.astype(np.float64), ref, atol=0.05, rtol=1e-2)


def test_row_max_reduces_across_lanes():
    func = lower(kernels.make_row_max(256, 64))
    x = RNG.standard_normal((256, 64)).astype(np.float32)
    y = np.zeros(256, np.float32)
    run_kernel(func, {"X": x, "Y": y})
    np.testing.assert_array_equal(y, (2 * x).max(axis=1))


@pytest.mark.parametrize("M,N,bm,threads", [(64, 128, 32, 128), (100, 64, 16, 256), (64, 32, 64, 64)])
def test_softmax(M, N, bm, threads):
    func = lower(kernels.make_softmax(M, N, bm, threads))
    x = RNG.standard_normal((M, N)).astype(np.float32)
    y = np.zeros((M, N), np.float32)
    run_kernel(func, {"X": x, "Y": y})
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("M,N", [(64, 128), (70, 100)])
def test_shared_tile_roundtrip_with_parallel_update(M, N):
    func = lower(kernels.make_shared_add(M, N))
    x = RNG.standard_normal((M, N)).astype(np.float16)
    y = np.full((M, N), np.nan, np.float16)
    run_kernel(func, {"X": x, "Y": y})
    np.testing.assert_array_equal(y, x + np.float16(1))


def test_fill_and_parallel_over_a_spread_fragment():
    func = lower(kernels.make_fill(512))
    y = np.zeros(512, np.float32)
    run_kernel(func, {"Y": y})
    np.testing.assert_array_equal(y, 3.0 + (np.arange(512) % 256))


def test_atomics_from_global_tiles_and_scalars():
    M, N = 96, 64
    func = lower(kernels.make_atomic_rowsum(M, N))
    x = RNG.standard_normal((M, N)).astype(np.float32)
    y = np.zeros(N, np.float32)
    z = np.zeros(1, np.float32)
    run_kernel(func, {"X": x, "Y": y, "Z": z})
    np.testing.assert_allclose(y, x.sum(axis=0), rtol=1e-5, atol=1e-5)
    assert z[0] == (M // 32) * 128  # a thread-level atomic: one add per thread (TileLang's)


def test_softmax_rows_wider_than_a_warp_reduce_through_shared_memory():
    func = lower(kernels.make_softmax(8, 512, 4, 128))
    x = RNG.standard_normal((8, 512)).astype(np.float32)
    y = np.zeros((8, 512), np.float32)
    run_kernel(func, {"X": x, "Y": y})
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_row_max_of_a_gemm_accumulator():
    M, N, K = 128, 64, 64
    func = lower(kernels.make_gemm_rowmax(M, N, K))
    a = RNG.standard_normal((M, K)).astype(np.float16)
    b = RNG.standard_normal((N, K)).astype(np.float16)
    r = np.zeros(M, np.float32)
    run_kernel(func, {"A": a, "B": b, "R": r})
    ref = (0.5 * (a.astype(np.float64) @ b.astype(np.float64).T)).max(axis=1)
    np.testing.assert_allclose(r, ref, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("M", [64, 100])
def test_gemm_with_a_dynamic_dimension(M):
    func = lower(kernels.make_dynamic_gemm())
    a = RNG.standard_normal((M, 128)).astype(np.float16)
    b = RNG.standard_normal((128, 256)).astype(np.float16)
    c = np.full((M, 256), np.nan, np.float32)
    run_kernel(func, {"A": a, "B": b, "C": c})
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-3, atol=1e-2)


def attention_reference(q, k, v):
    qd, kd, vd = (x.astype(np.float64).transpose(0, 2, 1, 3) for x in (q, k, v))
    s = qd @ kd.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return (p @ vd).transpose(0, 2, 1, 3)


@pytest.mark.parametrize("S,D,block_m,block_n,threads", [(128, 64, 64, 64, 128), (100, 32, 32, 32, 64)])
def test_flash_attention_forward(S, D, block_m, block_n, threads):
    """Online softmax over K tiles; P goes from the first gemm's accumulator into the second gemm's
    A operand in registers; the last tile is ragged when S % block_n != 0."""
    func = lower(kernels.make_flash_attention(1, 2, S, D, block_m, block_n, threads))
    q, k, v = (RNG.standard_normal((1, S, 2, D)).astype(np.float16) for _ in range(3))
    o = np.full((1, S, 2, D), np.nan, np.float16)
    run_kernel(func, {"Q": q, "K": k, "V": v, "Out": o})
    np.testing.assert_allclose(o.astype(np.float64), attention_reference(q, k, v), atol=2e-3)


def test_gemm_chain_from_registers_with_split_columns_is_refused():
    """Square splits the second gemm's columns over warps: each warp would hold a copy of its rows
    of A, a layout the first gemm's accumulator does not have (no register shuffle converts it)."""
    from tilelang_core.errors import LayoutError

    with pytest.raises(LayoutError, match="'ab_half' gets two different layouts"):
        lower(kernels.make_gemm_from_registers(T.GemmWarpPolicy.Square))


def test_gemm_from_registers():
    func = lower(kernels.make_gemm_from_registers(T.GemmWarpPolicy.FullRow))
    a = RNG.standard_normal((64, 32)).astype(np.float16)
    b = RNG.standard_normal((32, 64)).astype(np.float16)
    c = RNG.standard_normal((64, 64)).astype(np.float16)
    out = np.zeros((64, 64), np.float32)
    run_kernel(func, {"A": a, "B": b, "C": c, "Out": out})
    ab = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float16).astype(np.float64)
    np.testing.assert_allclose(out, ab @ c.astype(np.float64), rtol=1e-2, atol=0.1)


@pytest.mark.parametrize("dtype,accum", [("float32", "float32"), ("int8", "int32"), ("float16", "float32")])
@pytest.mark.parametrize("M,N,K,policy,threads", [
    (64, 64, 32, T.GemmWarpPolicy.FullRow, 128),
    (32, 32, 64, T.GemmWarpPolicy.Square, 128),   # w4a8's split: 2 x 2 warps, A held twice
    (64, 32, 64, T.GemmWarpPolicy.Square, 256),
])
def test_gemm_with_a_from_registers_of_every_tensor_core_type(dtype, accum, M, N, K, policy, threads):
    """A register operand of tf32 (float32), int8 and fp16 gemms, any warp split (tf32 and int8
    were refused: only m16n8k16 A fragments were laid out)."""
    func = lower(kernels.make_register_a_gemm(M, N, K, dtype, accum, policy, threads))
    if dtype == "int8":
        a = RNG.integers(-100, 100, (M, K)).astype(np.int8)
        b = RNG.integers(-100, 100, (K, N)).astype(np.int8)
    else:
        a = RNG.standard_normal((M, K)).astype(dtype)
        b = RNG.standard_normal((K, N)).astype(dtype)
    c = np.full((M, N), 7, accum)
    run_kernel(func, {"A": a, "B": b, "C": c})
    if dtype == "int8":
        np.testing.assert_array_equal(c, a.astype(np.int64) @ b.astype(np.int64))
        return
    ref = a.astype(np.float64) @ b.astype(np.float64)
    tol = 2e-2 * np.sqrt(K)  # tf32 keeps 10 mantissa bits, as fp16 operands do
    np.testing.assert_allclose(c.astype(np.float64), ref, atol=tol, rtol=1e-2)


def test_fragment_touched_outside_parallel_loops_is_held_whole():
    # TileLang's rule (was refused): every thread holds f, the plain store updates every copy
    y = np.full(128, np.nan, np.float32)
    run_kernel(lower(kernels.make_fragment_outside_parallel()), {"Y": y})
    np.testing.assert_array_equal(y, np.r_[2.0, np.ones(127)].astype(np.float32))


def test_copy_of_part_of_a_fragment_moves_that_part():
    # was refused; TileLang moves the part (its GQA decoding epilogue copies acc_o[:valid_h, :])
    y = np.full(64, np.nan, np.float32)
    run_kernel(lower(kernels.make_partial_fragment_copy()), {"Y": y})
    np.testing.assert_array_equal(y, np.ones(64, np.float32))


def test_annotated_shared_layouts_are_used():
    func = lower(kernels.make_annotated_shared())
    assert "j * 64 + i" not in func.script()  # applied, not left as an attribute
    x = RNG.standard_normal((64, 64)).astype(np.float16)
    y = np.zeros((64, 64), np.float16)
    run_kernel(func, {"X": x, "Y": y})
    np.testing.assert_array_equal(y, x * np.float16(2))


@pytest.mark.parametrize("dim,reverse", [(1, False), (0, False), (1, True)])
def test_cumsum_in_shared_memory(dim, reverse):
    func = lower(kernels.make_cumsum(32, 48, dim, reverse))
    x = RNG.standard_normal((32, 48)).astype(np.float32)
    y = np.zeros((32, 48), np.float32)
    run_kernel(func, {"X": x, "Y": y})
    ref = np.flip(np.cumsum(np.flip(x, dim), dim), dim) if reverse else np.cumsum(x, dim)
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)


def test_gemm_epilogue_through_shared_memory():
    func = lower(kernels.make_gemm_shared_epilogue(96, 80, 64))
    a = RNG.standard_normal((96, 64)).astype(np.float16)
    b = RNG.standard_normal((64, 80)).astype(np.float16)
    c = np.full((96, 80), np.nan, np.float16)
    run_kernel(func, {"A": a, "B": b, "C": c})
    np.testing.assert_allclose(c.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64),
                               atol=0.05, rtol=1e-2)


def test_column_sums_of_a_gemm_accumulator():
    func = lower(kernels.make_gemm_colsum())
    a = RNG.standard_normal((64, 32)).astype(np.float16)
    b = RNG.standard_normal((32, 64)).astype(np.float16)
    r = np.zeros(64, np.float32)
    run_kernel(func, {"A": a, "B": b, "R": r})
    np.testing.assert_allclose(r, (a.astype(np.float64) @ b.astype(np.float64)).sum(0), rtol=1e-4,
                               atol=1e-3)


@pytest.mark.parametrize("dtype,trans_b", [("float32", False), ("float32", True), ("float64", False)])
def test_gemm_fma_fallback_for_types_without_tensor_cores(dtype, trans_b):
    """float64, and float32 with disable_tf32 (else it runs on tf32 tensor cores)."""
    func = lower(kernels.make_gemm(40, 72, 24, bm=32, bn=64, bk=16, dtype=getattr(T, dtype),
                                   out_dtype=getattr(T, dtype), trans_b=trans_b), disable_tf32=True)
    assert "tl_mma" not in func.script()
    a = RNG.standard_normal((40, 24)).astype(dtype)
    b = RNG.standard_normal((72, 24) if trans_b else (24, 72)).astype(dtype)
    c = np.full((40, 72), np.nan, dtype)
    run_kernel(func, {"A": a, "B": b, "C": c})
    np.testing.assert_allclose(c, a.astype(np.float64) @ (b.T if trans_b else b), rtol=1e-4, atol=1e-4)


def test_elementwise_add_over_global_memory():
    M, N = 70, 100
    func = lower(kernels.make_elementwise_add(M, N))
    a, b = (RNG.standard_normal((M, N)).astype(np.float32) for _ in range(2))
    c = np.zeros((M, N), np.float32)
    run_kernel(func, {"A": a, "B": b, "C": c})
    np.testing.assert_array_equal(c, a + b)


def test_rms_norm():
    M, N = 10, 256
    func = lower(kernels.make_rms_norm(M, N))
    a = RNG.standard_normal((M, N)).astype(np.float32)
    w = RNG.standard_normal(N).astype(np.float32)
    b = np.zeros((M, N), np.float32)
    run_kernel(func, {"A": a, "W": w, "B": b})
    ref = a / np.sqrt((a.astype(np.float64) ** 2).mean(1, keepdims=True) + 1e-6) * w
    np.testing.assert_allclose(b, ref, rtol=1e-4, atol=1e-5)


def test_fused_bias_relu_epilogue_reads_a_ragged_bias_safely():
    """bias[bx * bn + j] runs past N in the last column of blocks: guarded, like TileLang."""
    M, N, K = 100, 72, 64
    func = lower(kernels.make_matmul_bias_relu(M, N, K))
    a = RNG.standard_normal((M, K)).astype(np.float16)
    b = RNG.standard_normal((K, N)).astype(np.float16)
    bias = RNG.standard_normal(N).astype(np.float32)
    c = np.zeros((M, N), np.float16)
    run_kernel(func, {"A": a, "B": b, "bias": bias, "C": c})
    ref = np.maximum(a.astype(np.float64) @ b.astype(np.float64) + bias, 0)
    np.testing.assert_allclose(c.astype(np.float64), ref, atol=0.05, rtol=1e-2)


def test_row_sum_of_a_tile_that_is_not_a_power_of_two():
    M, N = 40, 96
    func = lower(kernels.make_row_sum(M, N))
    a = RNG.standard_normal((M, N)).astype(np.float16)
    out = np.zeros(M, np.float32)
    run_kernel(func, {"A": a, "out": out})
    np.testing.assert_allclose(out, a.astype(np.float64).sum(1), rtol=1e-3, atol=1e-3)


def test_per_thread_scalars_with_alloc_var():
    func = lower(kernels.make_local_var_loop(256))
    a = RNG.standard_normal(256).astype(np.float32)
    out = np.zeros(256, np.float32)
    run_kernel(func, {"A": a, "out": out})
    np.testing.assert_allclose(out, a * 6, rtol=1e-5)


def test_parallel_loops_vectorize_aligned_global_accesses():
    """W[j] in the RMSNorm scale loop becomes one 16-byte load per 4 registers; a ragged bias
    is a vector load where the run's columns are inside the tensor and a guarded load per lane
    elsewhere (simt/transform/lane_guards.py)."""
    script = lower(kernels.make_rms_norm(64, 1024)).script()
    (w_line,) = [line for line in script.splitlines() if "W[" in line]
    assert "vi" in w_line
    ragged = lower(kernels.make_matmul_bias_relu(100, 72, 64)).script()
    vector, lanes = [line for line in ragged.splitlines() if "bias[" in line]
    assert "vi]" in vector and "if_then_else" not in vector
    assert "vs]" in lanes and "if_then_else" in lanes


def test_pipelined_buffer_used_after_the_loop_is_a_clear_error():
    from tilelang_core.errors import LoweringError

    with pytest.raises(LoweringError, match="A_s are filled by a T.Pipelined loop"):
        lower(kernels.make_stage_buffer_used_after_loop())
