"""Compile-time errors of the metal backend name the kernel and say what to do."""

import pytest

import tilelang_core.language as T
from metal_cases import lower
from tilelang_core.errors import LayoutError, LoweringError


def copy_kernel(n=64, dtype="float32", tile=(64, 64), threads=128):
    @T.prim_func
    def tile_copy(X: T.Tensor((n, n), dtype), Y: T.Tensor((n, n), dtype)):
        with T.Kernel(1, threads=threads) as bx:
            s = T.alloc_shared(tile, dtype)
            T.copy(X[0, 0], s)
            T.copy(s, Y[0, 0])

    return tile_copy


def test_threadgroup_memory_over_the_limit():
    with pytest.raises(LoweringError, match=r"kernel 'tile_copy' needs 65536 bytes of threadgroup memory, "
                                            r"more than the 32768 bytes .* Use smaller tiles"):
        lower(copy_kernel(n=128, tile=(128, 128)))


def test_float64_is_refused_by_name():
    with pytest.raises(LoweringError, match=r"kernel 'tile_copy' uses float64 \(in 'X'\), which Metal on "
                                            r"apple7 does not support: no Apple GPU has it; use float32"):
        lower(copy_kernel(dtype="float64"))


def test_bfloat16_needs_apple9():
    with pytest.raises(LoweringError, match=r"uses bfloat16 .*: target apple9, or use"):
        lower(copy_kernel(dtype="bfloat16"))
    lower(copy_kernel(dtype="bfloat16"), arch="apple9")


def test_more_than_1024_threads():
    with pytest.raises(LoweringError, match=r"kernel 'tile_copy' asks for 2048 threads per threadgroup"):
        lower(copy_kernel(threads=2048))


def test_register_operand_needs_full_row_simdgroups():
    @T.prim_func
    def chained(A: T.Tensor((64, 32), "float16"), B: T.Tensor((32, 64), "float16"),
                V: T.Tensor((64, 64), "float16"), O: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((64, 32), "float16")
            B_s = T.alloc_shared((32, 64), "float16")
            V_s = T.alloc_shared((64, 64), "float16")
            S = T.alloc_fragment((64, 64), "float32")
            P = T.alloc_fragment((64, 64), "float16")
            O_f = T.alloc_fragment((64, 64), "float32")
            T.copy(A[0, 0], A_s)
            T.copy(B[0, 0], B_s)
            T.copy(V[0, 0], V_s)
            T.clear(S)
            T.clear(O_f)
            T.gemm(A_s, B_s, S)
            T.copy(S, P)
            T.gemm(P, V_s, O_f)  # Square policy: 2x2 simdgroups, so rows of P are split
            T.copy(O_f, O[0, 0])

    with pytest.raises(LayoutError, match="FullRow"):
        lower(chained)


def test_swizzled_annotation_on_a_simdgroup_operand():
    @T.prim_func
    def annotated_gemm(A: T.Tensor((64, 32), "float16"), B: T.Tensor((32, 64), "float16"),
                       C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((64, 32), "float16")
            B_s = T.alloc_shared((32, 64), "float16")
            C_f = T.alloc_fragment((64, 64), "float32")
            T.annotate_layout({A_s: T.Layout((64, 32), lambda i, j: (j, i))})  # the author's exact layout
            T.clear(C_f)
            T.copy(A[0, 0], A_s)
            T.copy(B[0, 0], B_s)
            T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[0, 0])

    with pytest.raises(LoweringError, match=r"kernel 'annotated_gemm': gemm operand 'A_s' has a "
                                            r"T.annotate_layout that is not row-major.*disable_simdgroup_matrix"):
        lower(annotated_gemm)
    _, fma = lower(annotated_gemm, disable_simdgroup_matrix=True)
    assert "tl_simdgroup_gemm" not in fma.script()
    # a make_swizzled_layout is a request for some swizzle: simdgroup's row-major tile answers it
    # (tests/layout/test_bank_swizzles.py runs it)
