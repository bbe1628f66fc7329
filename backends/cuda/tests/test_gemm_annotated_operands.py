"""T.gemm on mma.sync with shared operands the author laid out (T.annotate_layout): ldmatrix reads
16 contiguous bytes per row, so an operand whose layout does not keep 8-element runs of a row
contiguous (a transposed tile) is read element by element at its layout's positions instead.
Before, ldmatrix read such tiles as if swizzled: a silent wrong answer (relative error ~1).
Run by the SIMT interpreter for sm_80 and sm_90a's mma.sync path against numpy in float64."""

import numpy as np
import pytest

import tilelang_core.language as T
from lowered import lower
from tilelang_cuda.interpreter import run_kernel
from tilelang_core.layout import Layout

LAYOUTS = {"transposed": lambda i, j: (j, i), "row_major": lambda i, j: (i, j),
           "row_blocks": lambda i, j: (i // 8, j, i % 8)}


def annotated_gemm(M, N, K, trans_a, trans_b, layout_a, layout_b):
    a_shape = (K, M) if trans_a else (M, K)
    b_shape = (N, K) if trans_b else (K, N)

    @T.prim_func
    def main(A: T.Tensor(a_shape, T.float16), B: T.Tensor(b_shape, T.float16), C: T.Tensor((M, N), T.float32)):
        with T.Kernel(1, threads=128):
            a = T.alloc_shared(a_shape, T.float16)
            b = T.alloc_shared(b_shape, T.float16)
            c = T.alloc_fragment((M, N), T.float32)
            T.annotate_layout({a: T.Layout(a_shape, LAYOUTS[layout_a or "row_major"]),
                               b: T.Layout(b_shape, LAYOUTS[layout_b or "row_major"])})
            T.copy(A, a)
            T.copy(B, b)
            T.clear(c)
            T.gemm(a, b, c, transpose_A=trans_a, transpose_B=trans_b)
            T.copy(c, C)

    return main


@pytest.mark.parametrize("arch, options", [("sm_80", {}), ("sm_90a", {"disable_wgmma": True})])
@pytest.mark.parametrize("trans_a, trans_b", [(False, False), (False, True), (True, False)])
@pytest.mark.parametrize("layout_a, layout_b", [(None, "transposed"), ("transposed", None),  # (None: row-major)
                                                ("row_blocks", "row_major"), ("transposed", "transposed")])
def test_gemm_reads_annotated_operands_at_their_layout(arch, options, trans_a, trans_b, layout_a, layout_b):
    M, N, K = 64, 64, 32
    rng = np.random.default_rng(1)
    a = rng.standard_normal((K, M) if trans_a else (M, K)).astype(np.float16)
    b = rng.standard_normal((N, K) if trans_b else (K, N)).astype(np.float16)
    c = np.full((M, N), np.nan, np.float32)
    run_kernel(lower(annotated_gemm(M, N, K, trans_a, trans_b, layout_a, layout_b), arch=arch, **options),
               {"A": a, "B": b, "C": c})
    ref = (a.T if trans_a else a).astype(np.float64) @ (b.T if trans_b else b).astype(np.float64)
    np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-4)


def test_only_layouts_with_contiguous_row_runs_suit_ldmatrix():
    import tvm

    from tilelang_core.simt.transform.apply_layouts import _enumerated_contiguous, vector_contiguous

    def ok(fn, vec=8):
        return vector_contiguous(Layout((64, 64), fn, "annotated"), vec, tvm.sym.Analyzer())

    assert ok(LAYOUTS["row_major"])
    assert ok(LAYOUTS["row_blocks"]) is False  # i % 8 innermost
    assert ok(LAYOUTS["transposed"]) is False
    assert ok(LAYOUTS["row_major"], vec=48) is False  # a run would cross rows
    # an XOR swizzle written by hand, which the analyzer may not see through: checked by value
    xor = Layout((64, 64), lambda i, j: i * 64 + ((j // 8) ^ (i % 8)) * 8 + j % 8, "annotated")
    assert ok(xor.fn) and _enumerated_contiguous(xor, 8)
    assert _enumerated_contiguous(Layout((8, 16), lambda i, j: i * 16 + (15 - j), "annotated"), 8) is False
