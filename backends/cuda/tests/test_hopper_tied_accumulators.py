"""Gemms whose accumulators must share a layout run on one instruction family on sm_90a: wgmma and
mma.sync lay a fragment out differently, so where one of them cannot take wgmma (here: an operand
the author laid out with T.annotate_layout), the others fall back with it. TileLang's GDN
backward (examples/gdn chunk_o_bwd) accumulates dq from two such gemms and combines two
accumulators element by element. Numerics: tests/gpu/test_gpu_hopper.py."""

import pytest

import kernels
import tilelang_core.language as T
from test_hopper_lowering import cuda_source


def tied_gemms(tie: str):
    """C = A1 @ B1 + A2 @ B2, with B2 laid out by the author; ``tie``: "accumulator" (both gemms
    into C) or "parallel" (two accumulators added element by element)."""

    @T.prim_func
    def main(A1: T.Tensor((64, 64), T.float16), B1: T.Tensor((64, 64), T.float16), A2: T.Tensor((64, 64), T.float16),
             B2: T.Tensor((64, 64), T.float16), C: T.Tensor((64, 64), T.float32)):
        with T.Kernel(1, threads=128):
            a1 = T.alloc_shared((64, 64), T.float16)
            b1 = T.alloc_shared((64, 64), T.float16)
            a2 = T.alloc_shared((64, 64), T.float16)
            b2 = T.alloc_shared((64, 64), T.float16)
            c = T.alloc_fragment((64, 64), T.float32)
            d = T.alloc_fragment((64, 64), T.float32)
            T.annotate_layout({b2: T.Layout((64, 64), lambda i, j: (j, i))})
            T.copy(A1, a1)
            T.copy(B1, b1)
            T.copy(A2, a2)
            T.copy(B2, b2)
            T.clear(c)
            T.gemm(a1, b1, c)
            if tie == "accumulator":
                T.gemm(a2, b2, c)
            else:
                T.clear(d)
                T.gemm(a2, b2, d)
                for i, j in T.Parallel(64, 64):
                    c[i, j] = c[i, j] + d[i, j]
            T.copy(c, C)

    return main


@pytest.mark.parametrize("tie", ["accumulator", "parallel"])
def test_gemms_tied_to_one_that_cannot_take_wgmma_fall_back_with_it(tie):
    source, kernel = cuda_source(tied_gemms(tie))
    notes = source[:source.find("#ifdef")]
    assert "gemm(a2, b2" in notes and "b2 has a T.annotate_layout layout" in notes
    assert "gemm(a1, b1 -> c): not wgmma (its accumulator c shares a layout with gemm(a2, b2" in notes
    assert "tl_wgmma" not in kernel and "tl_mma_m16n8k16" in kernel


def test_untied_gemms_keep_wgmma():
    """The same first gemm alone (its accumulator tied to nothing) still runs on wgmma."""
    _, kernel = cuda_source(kernels.make_gemm(64, 64, 64, bm=64, bn=64, bk=64, stages=1, out_dtype=T.float32))
    assert "tl_wgmma_ss" in kernel
