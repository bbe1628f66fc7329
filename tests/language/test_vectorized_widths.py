"""``T.vectorized`` loops the kernel wrote, at widths the target takes (simt/transform/
vectorized_loops.py): a loop wider than a 16-byte vector is split into runs, a run whose first
element is not provably aligned is narrowed (the GPU faults on a misaligned vector access), and
a load invariant over a run is read once. Numerics on every reference path against numpy; the
CUDA source shows the width picked, and nvcc compiles it."""

import numpy as np
import pytest

import tilelang_core as tilelang
import tilelang_core.language as T
from tilelang_core.testing.oracle import PATHS, run

RNG = np.random.default_rng(3)


def row_copy(rows, row_len, n):
    """B[c, :n] = A[c, :n] + 1 for each of ``rows`` threads; a row is ``row_len`` elements long,
    so a row's first element is aligned to a vector of v only when v divides ``row_len``."""
    @T.prim_func
    def kernel(A: T.Tensor((rows, row_len), T.float32), B: T.Tensor((rows, row_len), T.float32)):
        with T.Kernel(1, threads=rows):
            c = T.get_thread_binding()
            for r in T.vectorized(n):
                B[c, r] = A[c, r] + 1.0

    return kernel


def scaled_by_group(rows, n, group):
    """B[r, j] = A[r, j] * C[r, j // group]: C's element is the same over runs of ``group``."""
    @T.prim_func
    def kernel(A: T.Tensor((rows, n), T.float32), B: T.Tensor((rows, n), T.float32),
               C: T.Tensor((rows, n // group), T.float32)):
        with T.Kernel(1, threads=rows):
            r = T.get_thread_binding()
            for j in T.vectorized(n):
                B[r, j] = A[r, j] * C[r, j // group]

    return kernel


def strided_columns(n, m, stride_a, stride_b):
    """TileLang's strided-tensor test: columns of column-major views, one per thread."""
    @T.prim_func
    def kernel(A: T.StridedTensor((n, m), (1, stride_a), T.float32),
               B: T.StridedTensor((n, m), (1, stride_b), T.float32)):
        with T.Kernel(m // 32, threads=32) as bx:
            col = bx * 32 + T.get_thread_binding()
            for row in T.vectorized(n):
                B[row, col] = A[row, col]

    return kernel


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(("row_len", "n"), [(64, 64), (66, 64), (67, 64), (8, 6)])
def test_wide_and_misaligned_rows(path, row_len, n):
    a = RNG.standard_normal((4, row_len)).astype(np.float32)
    b = np.zeros((4, row_len), np.float32)
    run(path, row_copy(4, row_len, n), A=a, B=b)
    expect = np.zeros_like(a)
    expect[:, :n] = a[:, :n] + 1
    np.testing.assert_array_equal(b, expect)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("group", [2, 4, 6])
def test_a_load_invariant_over_a_run(path, group):
    n = 24
    a = RNG.standard_normal((4, n)).astype(np.float32)
    c = RNG.standard_normal((4, n // group)).astype(np.float32)
    b = np.zeros((4, n), np.float32)
    run(path, scaled_by_group(4, n, group), A=a, B=b, C=c)
    np.testing.assert_allclose(b, a * np.repeat(c, group, axis=1), rtol=1e-6)


def _kernel_source(func, arch="sm_90a") -> str:
    source = tilelang.compile(func, target=f"cuda:{arch}").get_kernel_source()
    return source[source.find('extern "C" __global__'):].split("#include")[0]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_nvcc_compiles_the_planned_loops(arch, tmp_path):
    from test_printer_limits import _cuda_source

    for i, func in enumerate([row_copy(4, 66, 64), scaled_by_group(4, 24, 6), strided_columns(128, 64, 130, 132)]):
        (tmp_path / str(i)).mkdir()
        _cuda_source(func, arch, tmp_path / str(i))


@pytest.mark.parametrize(("row_len", "vector"), [(64, "float4"), (66, "float2"), (67, None)])
def test_cuda_width_follows_the_alignment(row_len, vector):
    pytest.importorskip("tilelang_cuda")
    kernel = _kernel_source(row_copy(4, row_len, 64))
    for v in ("float4", "float2"):
        assert (f"*({v}*)" in kernel) == (v == vector), kernel


@pytest.mark.parametrize(("stride_a", "stride_b", "vector"), [(128, 128, "float4"), (130, 132, "float2"),
                                                             (132, 136, "float4"), (129, 128, None)])
def test_cuda_strided_tensor_width(stride_a, stride_b, vector):
    pytest.importorskip("tilelang_cuda")
    kernel = _kernel_source(strided_columns(128, 64, stride_a, stride_b))
    for v in ("float4", "float2"):
        assert (f"*({v}*)" in kernel) == (v == vector), kernel


def test_cuda_invariant_load_is_read_once_per_run():
    pytest.importorskip("tilelang_cuda")
    kernel = _kernel_source(scaled_by_group(4, 24, 4))
    assert "*(float4*)(A_ptr" in kernel and "*(float4*)(B_ptr" in kernel
    assert "j_o * 4) / 4" not in kernel  # the run's first element, not a per-lane division


def every_other_column(rows=16, cols=64, block=32):
    """T.copy global -> global and through shared between views whose last stride is 2 (TileLang's
    eager copy of ``A[:, 0, :, 0]``): the 16-byte vectors a compact row takes would move the
    elements in between."""
    @T.prim_func
    def kernel(A: T.StridedTensor((rows, cols), (4 * cols, 2), T.float32),
               B: T.StridedTensor((rows, cols), (4 * cols, 2), T.float32),
               C: T.StridedTensor((rows, cols), (2 * cols, 2), T.float32)):
        with T.Kernel(cols // block, threads=64) as bx:
            s = T.alloc_shared((rows, block), T.float32)
            T.copy(A[0:rows, bx * block:(bx + 1) * block], B[0:rows, bx * block:(bx + 1) * block])
            T.copy(A[0:rows, bx * block:(bx + 1) * block], s)
            T.copy(s, C[0:rows, bx * block:(bx + 1) * block])
            for i, j in T.Parallel(rows, block):
                B[i, bx * block + j] = B[i, bx * block + j] + 1.0

    return kernel


@pytest.mark.parametrize("path", PATHS)
def test_views_with_a_last_stride_of_two_copy_element_by_element(path):
    """Found on the H200 (TileLang's test_jit2_many_annot): the copy moved float4 vectors."""
    base_a = RNG.standard_normal((16, 2, 64, 2)).astype(np.float32)
    base_b = np.full((16, 2, 64, 2), 7.0, np.float32)
    base_c = np.full((16, 64, 2), 7.0, np.float32)
    a, b, c = base_a[:, 0, :, 0], base_b[:, 0, :, 0], base_c[:, :, 0]
    if path == "cpu":  # numpy views, bound by their strides
        run(path, every_other_column(), A=a, B=b, C=c)
    else:  # the interpreters address flat memory through the buffers' strides
        run(path, every_other_column(), A=base_a, B=base_b, C=base_c)
    np.testing.assert_array_equal(b, a + 1.0)
    np.testing.assert_array_equal(c, a)
    untouched_b = base_b.copy()
    untouched_b[:, 0, :, 0] = 7.0
    assert (untouched_b == 7.0).all() and (base_c[:, :, 1] == 7.0).all()


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_cuda_keeps_strided_views_scalar(arch):
    pytest.importorskip("tilelang_cuda")
    kernel = _kernel_source(every_other_column(), arch)
    for v in ("float4", "float2", "tl_store_16", "tl_store_8", "cp_async"):
        assert v not in kernel, kernel
