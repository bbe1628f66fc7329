"""T.reshape / T.view (TileLang's): a view shares its buffer's memory, with another shape (and,
for global tensors, another dtype). Views of fragments keep the registers the tile is in (a gemm
accumulator read as (N, Q, H), a row of 192 reduced in groups of 32 that straddle threads);
views of shared tiles address the tile's swizzled slot. Generated cases on cpu and every SIMT
interpreter against float64; refusals say what to do."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tilelang_core.language as T
from tilelang_core.errors import LoweringError
from tilelang_core.testing.oracle import PATHS, run

SIMT_PATHS = [p for p in PATHS if p != "cpu"]


def global_view(rows, cols, dtype, view_dtype, view_cols):
    @T.prim_func
    def main(A: T.Tensor((rows * cols,), dtype), B: T.Tensor((rows, view_cols), view_dtype)):
        with T.Kernel(1, threads=32):
            T.copy(T.view(A, (rows, view_cols), dtype=view_dtype), B)

    return main


def shared_reshape(rows, cols, to_flat):
    shape, out = ((rows, cols), (rows * cols,)) if to_flat else ((rows * cols,), (rows, cols))

    @T.prim_func
    def main(A: T.Tensor(shape, "float32"), B: T.Tensor(out, "float32")):
        with T.Kernel(1, threads=64):
            S = T.alloc_shared(shape, "float32")
            T.copy(A, S)
            T.copy(T.reshape(S, out), B)

    return main


def grouped_sum(tm, group, gk, threads):
    @T.prim_func
    def main(A: T.Tensor((tm, group * gk), "float32"), B: T.Tensor((tm, group), "float32")):
        with T.Kernel(1, threads=threads):
            src = T.alloc_fragment((tm, group * gk), "float32")
            dst = T.alloc_fragment((tm, group), "float32")
            for i, j in T.Parallel(tm, group * gk):
                src[i, j] = A[i, j]
            T.reduce_sum(T.reshape(src, (tm, group, gk)), dst, dim=2)
            for i, g in T.Parallel(tm, group):
                B[i, g] = dst[i, g]

    return main


def scaled_logits(bn, bq, heads, d):
    """TileLang's fp8 lightning indexer in miniature: a gemm accumulator of (bn, bq * heads)
    written and reduced through its (bn, bq, heads) view."""
    @T.prim_func
    def main(Q: T.Tensor((bq * heads, d), "float16"), K: T.Tensor((bn, d), "float16"),
             W: T.Tensor((bq, heads), "float32"), L: T.Tensor((bn, bq), "float32")):
        with T.Kernel(1, threads=128):
            qs = T.alloc_shared((bq * heads, d), "float16")
            ks = T.alloc_shared((bn, d), "float16")
            s = T.alloc_fragment((bn, bq * heads), "float32")
            s3 = T.reshape(s, (bn, bq, heads))
            w = T.alloc_fragment((bq, heads), "float32")
            logits = T.alloc_fragment((bn, bq), "float32")
            T.copy(Q, qs)
            T.copy(K, ks)
            T.copy(W, w)
            T.gemm(ks, qs, s, transpose_B=True, clear_accum=True)
            for i, j, h in T.Parallel(bn, bq, heads):
                s3[i, j, h] = T.max(s3[i, j, h], 0) * w[j, h]
            T.reduce_sum(s3, logits, dim=-1, clear=True)
            T.copy(logits, L)

    return main


def shared_dtype_view(rows, cols, dtype, view_dtype, view_cols, out_dtype):
    """TileLang's shared reinterpreting view: written through the tile (swizzled: 2-D), read
    through the view, whose layout must induce the same bytes."""
    @T.prim_func
    def main(A: T.Tensor((rows, cols), dtype), B: T.Tensor((rows, view_cols), out_dtype)):
        with T.Kernel(1, threads=64):
            S = T.alloc_shared((rows, cols), dtype)
            V = T.view(S, (rows, view_cols), dtype=view_dtype)
            T.copy(A, S)
            for i, j in T.Parallel(rows, view_cols):
                B[i, j] = T.cast(V[i, j], out_dtype)

    return main


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=3, deadline=None)
@given(rows=st.integers(1, 9), cols=st.sampled_from([8, 16, 64]),
       pair=st.sampled_from([("float32", "float16"), ("float16", "float32"), ("int32", "int8"),
                             ("float32", "bfloat16"), ("int8", "int32")]), seed=st.integers(0, 999))
def test_shared_view_with_another_dtype_reads_the_tiles_bytes(path, rows, cols, pair, seed):
    dtype, view_dtype = pair
    np_view = {"bfloat16": np.uint16}.get(view_dtype, view_dtype)
    view_cols = cols * np.dtype(dtype).itemsize // np.dtype(np_view).itemsize
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal((rows, cols)) * 100).astype(dtype)
    out_dtype = "float32" if view_dtype == "bfloat16" else view_dtype
    got = run(path, shared_dtype_view(rows, cols, dtype, view_dtype, view_cols, out_dtype), A=a,
              B=np.zeros((rows, view_cols), out_dtype))["B"]
    expected = a.view(np_view).reshape(rows, view_cols)
    if view_dtype == "bfloat16":  # the bit patterns, read as bfloat16 (the upper half of a float)
        expected = (expected.astype(np.uint32) << 16).view(np.float32)
    np.testing.assert_array_equal(got.view(np.uint8), expected.view(np.uint8))


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=3, deadline=None)
@given(rows=st.integers(1, 6), cols=st.sampled_from([4, 8, 16]),
       pair=st.sampled_from([("float32", "float32"), ("float32", "float16"), ("int32", "int8"),
                             ("int32", "float32")]), seed=st.integers(0, 999))
def test_global_view_reads_the_same_bytes(path, rows, cols, pair, seed):
    dtype, view_dtype = pair
    view_cols = cols * np.dtype(dtype).itemsize // np.dtype(view_dtype).itemsize
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal(rows * cols) * 100).astype(dtype)
    out = run(path, global_view(rows, cols, dtype, view_dtype, view_cols), A=a,
              B=np.zeros((rows, view_cols), view_dtype))
    np.testing.assert_array_equal(out["B"].view(np.uint8), a.view(view_dtype).reshape(rows, view_cols).view(np.uint8))


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=3, deadline=None)
@given(rows=st.integers(1, 9), cols=st.sampled_from([4, 8, 32]), to_flat=st.booleans(),
       seed=st.integers(0, 999))
def test_shared_reshape_addresses_the_tiles_slot(path, rows, cols, to_flat, seed):
    """A 2-D shared tile is swizzled; its flat view must still read element k as element k."""
    a = np.random.default_rng(seed).standard_normal(rows * cols).astype(np.float32)
    src, out = (a.reshape(rows, cols), np.zeros(rows * cols, np.float32)) if to_flat else \
        (a, np.zeros((rows, cols), np.float32))
    got = run(path, shared_reshape(rows, cols, to_flat), A=src, B=out)["B"]
    np.testing.assert_array_equal(got.reshape(-1), a)


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=3, deadline=None)
@given(tm=st.integers(1, 3), group=st.sampled_from([1, 2, 3, 6]), gk=st.sampled_from([4, 8, 32]),
       threads=st.sampled_from([32, 64, 128]), seed=st.integers(0, 999))
def test_reduction_through_a_fragment_view(path, tm, group, gk, threads, seed):
    """Groups of ``gk`` columns reduced through a (tm, group, gk) view; with 128 threads over a row
    of 192 (TileLang's straddle regression) a group spans threads and registers."""
    a = np.random.default_rng(seed).standard_normal((tm, group * gk)).astype(np.float32)
    out = run(path, grouped_sum(tm, group, gk, threads), A=a, B=np.full((tm, group), np.nan, np.float32))
    np.testing.assert_allclose(out["B"], a.astype(np.float64).reshape(tm, group, gk).sum(-1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("path", PATHS)
def test_gemm_accumulator_written_and_reduced_through_a_view(path):
    bn, bq, heads, d = 32, 2, 16, 32
    rng = np.random.default_rng(3)
    q = rng.standard_normal((bq * heads, d)).astype(np.float16)
    k = rng.standard_normal((bn, d)).astype(np.float16)
    w = rng.standard_normal((bq, heads)).astype(np.float32)
    out = run(path, scaled_logits(bn, bq, heads, d), Q=q, K=k, W=w, L=np.full((bn, bq), np.nan, np.float32))
    s = np.maximum(k.astype(np.float64) @ q.astype(np.float64).T, 0).reshape(bn, bq, heads)
    np.testing.assert_allclose(out["L"], (s * w).sum(-1), rtol=1e-3, atol=1e-3)


def test_a_view_that_does_not_cover_its_buffer_is_an_assertion():
    """TileLang asserts the bit count; test code expecting AssertionError keeps working, and the
    message names the buffer and both sizes."""
    with pytest.raises(AssertionError, match="'A'.*8448 bits"):
        @T.prim_func
        def main(A: T.Tensor((256,), "float32"), B: T.Tensor((8, 33), "float32")):
            with T.Kernel(1):
                T.copy(T.reshape(A, [8, 33]), B)


@pytest.mark.parametrize("path", SIMT_PATHS)
def test_widening_view_of_elements_not_side_by_side_is_refused(path):
    """A float32 view of a float16 tile laid out column-major would need two elements that are
    not neighbours in memory: refused, naming both."""
    from tilelang_core.testing.oracle import lower

    @T.prim_func
    def main(A: T.Tensor((16, 16), "float16"), B: T.Tensor((16, 8), "float32")):
        with T.Kernel(1, threads=32):
            S = T.alloc_shared((16, 16), "float16")
            T.annotate_layout({S: T.Layout((16, 16), lambda i, j: j * 16 + i)})
            T.copy(A, S)
            T.copy(T.view(S, (16, 8), dtype="float32"), B)

    with pytest.raises(LoweringError, match="are not side by side in its layout"):
        lower(path, main)


@pytest.mark.parametrize("path", SIMT_PATHS)
def test_fragment_view_with_another_dtype_is_refused(path):
    from tilelang_core.testing.oracle import lower

    @T.prim_func
    def main(A: T.Tensor((64,), "float32"), B: T.Tensor((128,), "float16")):
        with T.Kernel(1, threads=32):
            f = T.alloc_fragment((64,), "float32")
            T.copy(A, f)
            T.copy(T.view(f, (128,), dtype="float16"), B)

    with pytest.raises(LoweringError, match="T.view of local.fragment buffer 'f' \\(float32\\) as float16"):
        lower(path, main)


@pytest.mark.parametrize("path", PATHS)
def test_row_major_annotation_on_a_shared_view_lays_its_tile_out_row_major(path):
    """TileLang's annotated dtype-changing view: T.annotate_layout on the view (row-major) makes
    the tile row-major; what is written through the tile is read through the view."""
    @T.prim_func
    def main(A: T.Tensor((16, 16), "float16"), B: T.Tensor((16, 32), "int8")):
        with T.Kernel(1, threads=64):
            stage = T.alloc_shared((2, 16, 16), "float16")
            as_i8 = T.view(stage, (2, 16, 32), dtype="int8")
            T.annotate_layout({as_i8: T.Layout((2, 16, 32), lambda s, i, j: s * 512 + i * 32 + j)})
            for i, j in T.Parallel(16, 16):
                stage[1, i, j] = A[i, j]
            for i, j in T.Parallel(16, 32):
                B[i, j] = as_i8[1, i, j]

    a = np.random.default_rng(0).standard_normal((16, 16)).astype(np.float16)
    out = run(path, main, A=a, B=np.zeros((16, 32), np.int8))
    np.testing.assert_array_equal(out["B"], a.view(np.int8).reshape(16, 32))


@pytest.mark.parametrize("path", SIMT_PATHS)
def test_other_annotation_on_a_shared_view_is_refused(path):
    from tilelang_core.testing.oracle import lower

    @T.prim_func
    def main(A: T.Tensor((16, 16), "float16"), B: T.Tensor((16, 16), "float16")):
        with T.Kernel(1, threads=64):
            S = T.alloc_shared((16, 16), "float16")
            V = T.reshape(S, (16, 16))
            T.annotate_layout({V: T.Layout((16, 16), lambda i, j: j * 16 + i)})
            T.copy(A, S)
            T.copy(V, B)

    with pytest.raises(LoweringError, match="a view's layout follows its tile's; annotate 'S' instead"):
        lower(path, main)


def register_view(n, dtype, view_dtype, vec, view_shape):
    """TileKernels' swiglu cast in miniature: each thread fills its registers ``r`` (``n`` of
    ``dtype``) and reads them back through ``T.view(r, view_shape, view_dtype)``, the second
    loop vectorized."""
    view_n = int(np.prod(view_shape))

    @T.prim_func
    def main(A: T.Tensor((32, n), dtype), B: T.Tensor((32, view_n), view_dtype)):
        with T.Kernel(1, threads=32):
            tid = T.get_thread_binding()
            r = T.alloc_local((n,), dtype)
            rv = T.view(r, view_shape, view_dtype)
            for j in T.serial(n):
                r[j] = A[tid, j]
            if len(view_shape) == 1:
                for j in T.vectorized(vec):
                    B[tid, j] = rv[j]
            else:
                for j in T.vectorized(vec):
                    B[tid, j] = rv[j // view_shape[1], j % view_shape[1]]

    return main


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype,view_dtype,n,view_shape", [
    ("int32", "int8", 2, (8,)), ("float32", "int32", 4, (4,)), ("int8", "int32", 8, (2,)),
    ("float32", "float32", 6, (2, 3))])
def test_a_view_of_a_threads_registers_reads_their_bytes(path, dtype, view_dtype, n, view_shape):
    """A view of ``T.alloc_local`` registers shares them (was: the view's declaration dropped, "Buffer
    ... is used before its definition" from TVM on CUDA and the cpu backend)."""
    rng = np.random.default_rng(n)
    a = (rng.standard_normal((32, n)) * 1000).astype(dtype)
    view_n = int(np.prod(view_shape))
    out = run(path, register_view(n, dtype, view_dtype, view_n, view_shape), A=a,
              B=np.zeros((32, view_n), view_dtype))
    np.testing.assert_array_equal(out["B"], a.view(view_dtype).reshape(32, view_n))


@pytest.mark.parametrize("target", ["cuda:sm_80", "cuda:sm_90a"])
def test_a_register_view_compiles_to_a_reinterpreting_access(target):
    import tilelang_core as tl

    source = tl.compile(register_view(2, "int32", "int8", 8, (8,)), target=target).get_kernel_source()
    assert "(signed char*)r_ptr" in source or "(int8_t*)r_ptr" in source
