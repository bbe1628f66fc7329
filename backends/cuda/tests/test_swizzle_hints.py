"""Annotated swizzles and wgmma on sm_90a. TileLang's examples (GDN, dequantized GEMM) annotate gemm
operands with ``make_swizzled_layout``: a request for a bank-conflict-free tile, which wgmma's own
128-/64-byte swizzle answers, so those gemms stay on wgmma (they fell back to mma.sync before). A
bank swizzle equal to wgmma's layout (TileLang's full bank swizzle on whole 128-byte rows, the half
bank one on 64-byte rows) is kept as it is, and wgmma reads it; any other layout the author wrote
keeps the gemm on mma.sync, which reads it where it lies. Numerics on the H200:
tests/gpu/test_gpu_hopper.py::test_swizzle_annotated_gemm_matches_torch."""

import pytest

import tilelang_core.language as T
from test_build import pytestmark as needs_nvcc
from test_build import sass_counts
from test_hopper_lowering import cuda_source
from tilelang_core.layout import (make_full_bank_swizzled_layout, make_half_bank_swizzled_layout,
                                  make_quarter_bank_swizzled_layout, make_swizzled_layout)
from tilelang_cuda.hopper.wgmma import wgmma_shared_layout


def annotated_gemm(M, N, K, maker, block_K=None):
    block_K = block_K or K

    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((N, K), T.float16), C: T.Tensor((M, N), T.float32)):
        with T.Kernel(1, threads=128):
            a = T.alloc_shared((M, block_K), T.float16)
            b = T.alloc_shared((N, block_K), T.float16)
            c = T.alloc_fragment((M, N), T.float32)
            T.annotate_layout({a: maker(a), b: maker(b)})
            T.clear(c)
            for k in T.Pipelined(K // block_K, num_stages=2):
                T.copy(A[0, k * block_K], a)
                T.copy(B[0, k * block_K], b)
                T.gemm(a, b, c, transpose_B=True)
            T.copy(c, C)

    return main


def notes_and_kernel(func):
    source, kernel = cuda_source(func)
    return source[:source.find("#ifdef")], kernel


@pytest.mark.parametrize("maker, block_K", [(make_swizzled_layout, 64), (make_swizzled_layout, 128),
                                            (make_swizzled_layout, 32), (make_full_bank_swizzled_layout, 64),
                                            (make_full_bank_swizzled_layout, 128),
                                            (make_half_bank_swizzled_layout, 32)])
def test_swizzles_wgmma_can_take_keep_the_gemm_on_wgmma(maker, block_K):
    notes, kernel = notes_and_kernel(annotated_gemm(64, 64, 256, maker, block_K))
    assert "gemm(a, b -> c): wgmma m64n64k16" in notes, notes
    assert "tl_wgmma_ss" in kernel and "tl_mma_m16n8k16" not in kernel


@pytest.mark.parametrize("maker, block_K", [(make_half_bank_swizzled_layout, 64),  # wgmma: 128-byte swizzle
                                            (make_quarter_bank_swizzled_layout, 64)])
def test_other_bank_swizzles_keep_their_layout_on_mma_sync(maker, block_K):
    notes, kernel = notes_and_kernel(annotated_gemm(64, 64, 256, maker, block_K))
    assert "a has a T.annotate_layout layout" in notes
    assert "tl_wgmma" not in kernel and "tl_mma_m16n8k16" in kernel


@pytest.mark.parametrize("rows, cols", [(8, 64), (64, 64), (64, 128), (128, 256), (16, 192)])
def test_full_bank_swizzle_is_wgmma_s_128_byte_layout(rows, cols):
    import tvm

    buf = tvm.tirx.decl_buffer((rows, cols), "float16", name="s", scope="shared")
    mine, wgmma = make_full_bank_swizzled_layout(buf), wgmma_shared_layout(rows, cols, 16)
    assert all(mine.offset(i, j) == wgmma.offset(i, j) for i in range(rows) for j in range(cols))


@pytest.mark.parametrize("rows", [8, 64])
def test_half_bank_swizzle_is_wgmma_s_64_byte_layout(rows):
    import tvm

    buf = tvm.tirx.decl_buffer((rows, 32), "float16", name="s", scope="shared")
    mine, wgmma = make_half_bank_swizzled_layout(buf), wgmma_shared_layout(rows, 32, 16)
    assert all(mine.offset(i, j) == wgmma.offset(i, j) for i in range(rows) for j in range(32))


@needs_nvcc
def test_hinted_gemm_compiles_to_hgmma(tmp_path):
    from test_build import compile_kernel

    compile_kernel(annotated_gemm(64, 64, 256, make_swizzled_layout, 64), "sm_90a", tmp_path)
    counts = sass_counts(tmp_path / "kernel.cubin")
    assert counts["HGMMA"] >= 4 and counts["HMMA"] == 0 and counts["UTMALDG"] >= 2
