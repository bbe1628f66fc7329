"""TileLang's hand-written MMA code (T.ptx_ldmatrix / T.ptx_mma and the TensorCoreIntrinEmitter,
tilelang_core/cuda/intrinsics) lowered for sm_80 and run by the SIMT interpreter, whose ldmatrix
and mma.sync are written from the PTX ISA apart from the emitter's lane arithmetic: against a
float64 (int64) matmul, for every operand type, both majors of each operand (ldmatrix, ldmatrix
.trans, element loads where ldmatrix cannot transpose), 16- and 8-wide warp tiles, ragged shapes,
both C tile shapes; and the refusals that keep a wrong answer out."""

from types import SimpleNamespace

import numpy as np
import pytest

import emitter_kernels as ek
from lowered import lower, per_step_fp16
import tilelang_core.language as T
from tilelang_core.errors import FrontendError, LoweringError
from tilelang_cuda.interpreter import run_kernel, tf32_truncate

RNG = np.random.default_rng(11)


def operand(shape, dtype):
    if dtype == "int8":
        return RNG.integers(-128, 128, shape).astype(np.int8)
    return RNG.standard_normal(shape).astype(np.float32 if dtype in ("float32", "bfloat16") else np.float16)


def check(c, a_mk, b_kn, dtype):
    if dtype == "float32":  # tf32: the instruction ignores the operands' low 13 mantissa bits
        a_mk, b_kn = tf32_truncate(a_mk), tf32_truncate(b_kn)
    ref = a_mk.astype(np.float64) @ b_kn.astype(np.float64)
    if dtype == "int8":
        np.testing.assert_array_equal(c, ref.astype(np.int64).astype(np.int32))
    else:
        np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-4 * np.sqrt(a_mk.shape[1]))


@pytest.mark.parametrize("dtype", ["float16", "int8", "float32"])
@pytest.mark.parametrize("trans_a,num_b", [(False, 2), (False, 1), (True, 2)])
def test_one_mma_of_ldmatrix_fragments(dtype, trans_a, num_b):
    if trans_a and dtype != "float16":
        pytest.skip("ldmatrix .trans moves 16-bit elements (refused below)")
    func = lower(ek.one_mma(dtype, trans_a, num_b))
    k = 256 // {"float16": 16, "int8": 8, "float32": 32}[dtype]
    a, bt = operand((16, k), dtype), operand((8, k), dtype)
    c = np.zeros((16, 8), np.int32 if dtype == "int8" else np.float32)
    run_kernel(func, {"A": a.T.copy() if trans_a else a, "Bt": bt, "C": c})
    check(c, a, bt.T, dtype)


CASES = [
    # (M, N, K), dtype, accumulator, emitter keywords
    ((64, 64, 64), "float16", "float32", {}),
    ((64, 64, 64), "bfloat16", "float32", {}),
    ((100, 72, 96), "float16", "float32", {"warp_tiles": (32, 24)}),        # ragged; 8-wide tiles
    ((64, 64, 128), "int8", "int32", {"chunk": 64}),
    ((64, 64, 32), "float32", "float32", {"chunk": 16}),
    ((128, 64, 64), "float16", "float32", {"warps": (4, 1), "layout": "mma", "c_rank": 2, "stages": 3}),
    ((64, 64, 64), "float16", "float32", {"layout": None, "warps": (1, 2), "warp_tiles": (64, 32)}),
    ((100, 72, 96), "float16", "float16", {"warp_tiles": (32, 24)}),        # fp16 accumulate, ragged
]
MAJORS = [(False, True), (False, False), (True, True), (True, False)]  # (a_transposed, b_transposed)


@pytest.mark.parametrize("majors", MAJORS)
@pytest.mark.parametrize("shape,dtype,acc,kw", CASES)
def test_emitter_gemm_matches_float64(shape, dtype, acc, kw, majors):
    M, N, K = shape
    a_t, b_t = majors
    if dtype == "bfloat16":
        pytest.importorskip("ml_dtypes")
    func = lower(ek.emitter_gemm(M, N, K, dtype, acc, a_transposed=a_t, b_transposed=b_t, **kw))
    a, b = operand((M, K), dtype), operand((K, N), dtype)
    if dtype == "bfloat16":
        import ml_dtypes

        a, b = a.astype(ml_dtypes.bfloat16), b.astype(ml_dtypes.bfloat16)
    c = np.zeros((M, N), {"int32": np.int32, "float16": np.float16}.get(acc, np.float32))
    run_kernel(func, {"A": a.T.copy() if a_t else a, "B": b.T.copy() if b_t else b, "C": c})
    if acc == "float16":  # rounded to fp16 once per k16 step, the steps in order
        np.testing.assert_array_equal(c, per_step_fp16(a, b))
        return
    check(c, a.astype(np.float32) if dtype == "bfloat16" else a, b.astype(np.float32) if dtype == "bfloat16" else b,
          dtype)


def test_emitter_loads_are_one_pipelined_async_copy_each():
    """The example's T.Parallel tile loads run as the pipeline's cp.async producers
    (transform/parallel_copies.py), 16 bytes a copy, through the swizzled layout."""
    func = lower(ek.emitter_gemm(128, 128, 128, warp_tiles=(64, 64)))
    text = str(func)
    assert "tl_cp_async_16" in text and "tl_cp_async_commit" in text
    # per k-step: 4 A and 4 B ldmatrix.x4, 4 x 4 tiles of two n8 mma.sync each
    assert text.count('"tl_ldmatrix_x4"') == 8 and text.count('"tl_mma_m16n8k16_f16_f32"') == 32


def test_a_row_that_is_not_16_byte_aligned_is_refused():
    @T.prim_func
    def bad(A: T.Tensor((16, 24), T.float16), C: T.Tensor((16,), T.float16)):
        with T.Kernel(1, threads=32):
            As = T.alloc_shared((16, 24), T.float16)
            a = T.alloc_local((8,), T.float16)
            T.copy(A, As)
            tx = T.get_thread_binding()
            T.ptx_ldmatrix(False, 4, T.access_ptr(As[tx % 16, tx // 16 * 4], "r"), T.access_ptr(a[0], "w"))
            C[tx % 16] = a[0]

    with pytest.raises(LoweringError, match="cannot be proved aligned"):
        lower(bad)


def test_a_layout_that_splits_an_ldmatrix_row_is_refused():
    @T.prim_func
    def bad(A: T.Tensor((16, 16), T.float16), C: T.Tensor((16,), T.float16)):
        with T.Kernel(1, threads=32):
            As = T.alloc_shared((16, 16), T.float16)
            a = T.alloc_local((8,), T.float16)
            # each row's elements reversed: 8 consecutive ones are not side by side in order
            T.annotate_layout({As: T.Layout((16, 16), lambda i, j: [i, 15 - j])})
            T.copy(A, As)
            tx = T.get_thread_binding()
            T.ptx_ldmatrix(False, 4, T.access_ptr(As[tx % 16, tx // 16 * 8], "r"), T.access_ptr(a[0], "w"))
            C[tx % 16] = a[0]

    with pytest.raises(LoweringError, match="does not keep 8 elements of a row side by side"):
        lower(bad)


def _frontend_error(body_fn, match):
    with pytest.raises(FrontendError, match=match):
        body_fn()


def test_ldmatrix_and_mma_refuse_what_they_cannot_mean():
    def trans_int8():
        @T.prim_func
        def k(A: T.Tensor((16, 32), T.int8)):
            with T.Kernel(1, threads=32):
                As = T.alloc_shared((16, 32), T.int8)
                a = T.alloc_local((16,), T.int8)
                T.ptx_ldmatrix(True, 4, T.access_ptr(As[0, 0], "r"), T.access_ptr(a[0], "w"))

    def shared_destination():
        @T.prim_func
        def k(A: T.Tensor((16, 16), T.float16)):
            with T.Kernel(1, threads=32):
                As = T.alloc_shared((16, 16), T.float16)
                Bs = T.alloc_shared((16, 16), T.float16)
                T.ptx_ldmatrix(False, 4, T.access_ptr(As[0, 0], "r"), T.access_ptr(Bs[0, 0], "w"))

    def three_matrices():
        @T.prim_func
        def k(A: T.Tensor((16, 16), T.float16)):
            with T.Kernel(1, threads=32):
                As = T.alloc_shared((16, 16), T.float16)
                a = T.alloc_local((8,), T.float16)
                T.ptx_ldmatrix(False, 3, T.access_ptr(As[0, 0], "r"), T.access_ptr(a[0], "w"))

    def bf16_accumulators():
        @T.prim_func
        def k(A: T.Tensor((16, 16), T.float16)):
            with T.Kernel(1, threads=32):
                a = T.alloc_local((8,), T.bfloat16)
                b = T.alloc_local((4,), T.bfloat16)
                c = T.alloc_local((4,), T.bfloat16)
                T.ptx_mma(T.bfloat16, "m16n8k16", "row", "col", "bf16", "bf16", "bf16", a.data, 0, b.data, 0,
                          c.data, 0, False)

    def wrong_register_type():
        @T.prim_func
        def k(A: T.Tensor((16, 16), T.float16)):
            with T.Kernel(1, threads=32):
                a = T.alloc_local((8,), T.bfloat16)
                b = T.alloc_local((4,), T.float16)
                c = T.alloc_local((4,), T.float32)
                T.ptx_mma(T.float32, "m16n8k16", "row", "col", "fp16", "fp16", "fp32", a.data, 0, b.data, 0,
                          c.data, 0, False)

    _frontend_error(trans_int8, "transposes 16-bit elements")
    _frontend_error(shared_destination, "must be the thread's registers")
    _frontend_error(three_matrices, "1, 2 or 4 matrices")
    _frontend_error(bf16_accumulators, "no mma.sync form m16n8k16 bf16/bf16 -> bf16")
    _frontend_error(wrong_register_type, "'a' is bfloat16; this form takes float16")


def test_emitter_refuses_what_it_does_not_provide():
    from tilelang_core.cuda.intrinsics import TensorCoreIntrinEmitter

    with pytest.raises(FrontendError, match="float64"):
        TensorCoreIntrinEmitter(a_dtype="float64", b_dtype="float64", accum_dtype="float64")
    emitter = TensorCoreIntrinEmitter(a_dtype="float16", b_dtype="float16", accum_dtype="float32",
                                      warp_row_tiles=16, warp_col_tiles=16)
    with pytest.raises(FrontendError, match="make_mma_load_layout"):
        emitter.make_mma_load_layout(None)
    with pytest.raises(FrontendError, match="chunk=8 is less than one mma.sync k-step"):
        TensorCoreIntrinEmitter(a_dtype="float16", b_dtype="float16", accum_dtype="float32", chunk=8,
                                warp_row_tiles=16, warp_col_tiles=16)


FRAGMENT_CASES = [
    # (M, N, K), dtype, accumulator, emitter keywords
    ((64, 64, 64), "float16", "float32", {}),
    ((100, 72, 96), "float16", "float32", {"warp_tiles": (32, 24)}),        # ragged; 8-wide tiles
    ((64, 64, 128), "int8", "int32", {"chunk": 64}),
    ((128, 64, 64), "float16", "float32", {"warps": (4, 1), "layout": "mma", "c_rank": 2, "stages": 3}),
    ((64, 128, 32), "float32", "float32", {"chunk": 16, "warps": (1, 4)}),
]


@pytest.mark.parametrize("store", ["copy", "stmatrix"])
@pytest.mark.parametrize("shape,dtype,acc,kw", FRAGMENT_CASES)
def test_a_fragment_accumulator_laid_out_by_make_mma_store_layout(shape, dtype, acc, kw, store):
    """TileLang's other way to hold C: a T.alloc_fragment annotated with the emitter's
    make_mma_store_layout, which mma accumulates into in place and a T.copy (or stmatrix) stores."""
    M, N, K = shape
    func = lower(ek.emitter_gemm(M, N, K, dtype, acc, c_fragment=store, **kw))
    a, b = operand((M, K), dtype), operand((K, N), dtype)
    c = np.zeros((M, N), np.int32 if acc == "int32" else np.float32)
    run_kernel(func, {"A": a, "B": b.T.copy(), "C": c})
    check(c, a, b, dtype)


def test_a_fragment_accumulator_without_the_emitters_layout_is_refused():
    """Without make_mma_store_layout nothing spreads the fragment over the threads: each would
    accumulate into its own whole copy, and the T.copy store one thread's. Refused (it was a wrong
    answer, 14.5 off, on the interpreter before the refusal)."""
    from tilelang_core.cuda.intrinsics import TensorCoreIntrinEmitter

    emitter = TensorCoreIntrinEmitter(a_dtype="float16", b_dtype="float16", accum_dtype="float32",
                                      block_row_warps=1, block_col_warps=1, warp_row_tiles=16, warp_col_tiles=16)

    @T.prim_func
    def gemm(A: T.Tensor((16, 16), "float16"), B: T.Tensor((16, 16), "float16"), C: T.Tensor((16, 16), "float32")):
        with T.Kernel(1, threads=32):
            A_shared = T.alloc_shared((16, 16), "float16")
            B_shared = T.alloc_shared((16, 16), "float16")
            A_local = T.alloc_local((emitter.local_size_a,), "float16")
            B_local = T.alloc_local((emitter.local_size_b,), "float16")
            C_local = T.alloc_fragment((16, 16), "float32")
            T.copy(A, A_shared)
            T.copy(B, B_shared)
            T.clear(C_local)
            emitter.ldmatrix_a(A_local, A_shared, 0)
            emitter.ldmatrix_b(B_local, B_shared, 0)
            emitter.mma(A_local, B_local, C_local)
            T.copy(C_local, C)

    with pytest.raises(LoweringError, match="fragment 'C_local' .* depends on the thread, but every thread holds the whole"):
        lower(gemm)
    with pytest.raises(FrontendError, match=r"must be the block's C tile, shape \[16, 16\]"):
        emitter.make_mma_store_layout(SimpleNamespace(shape=(16, 32)))  # (only its shape is read)
