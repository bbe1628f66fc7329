"""T.annotate_safe_value: T.Parallel reads past a global tensor's edge give the tensor's value
instead of 0 (TileLang's pad value), on every reference path; the refusals."""

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core import FrontendError
from tilelang_core.testing.oracle import PATHS, run


def shifted(M, N, bM, bN, pad, shift=3):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=64) as (bx, by):
            A_s = T.alloc_shared((bM, bN), "float32")
            if pad is not None:
                T.annotate_safe_value({A: pad})
            for i, j in T.Parallel(bM, bN):
                A_s[i, j] = A[by * bM + i - shift, bx * bN + j]
            for i, j in T.Parallel(bM, bN):
                B[by * bM + i, bx * bN + j] = A_s[i, j]

    return main


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("pad", [None, 0, 10, -2.5])
def test_reads_past_the_edge_give_the_safe_value(path, pad):
    M, N = 20, 12  # ragged against 16 x 8 tiles: reads past both the top and the right edge
    a = np.random.default_rng(1).standard_normal((M, N)).astype(np.float32)
    out = run(path, shifted(M, N, 16, 8, pad), A=a, B=np.zeros_like(a))
    want = np.full_like(a, 0 if pad is None else pad)
    want[3:] = a[:-3]
    np.testing.assert_array_equal(out["B"], want)


def padded_copies(N, pad, out_dtype="float32"):
    """T.copy from a padded tensor: into shared memory and back (a ragged last tile), global to
    global with a conversion, and one element per iteration inside T.Parallel (TileLang's tests)."""
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((32,), "float32"), C: T.Tensor((32,), out_dtype),
             D: T.Tensor((32,), "float32")):
        with T.Kernel(2, threads=32) as bx:
            s = T.alloc_shared((16,), "float32")
            T.annotate_safe_value({A: pad})
            T.copy(A[bx * 16], s)
            T.copy(s, B[bx * 16])
            T.copy(A[bx * 16:(bx + 1) * 16], C[bx * 16:(bx + 1) * 16])
            for i in T.Parallel(16):
                T.copy(A[bx * 16 + i], D[bx * 16 + i])

    return main


@pytest.mark.parametrize("path", PATHS)
def test_copies_from_a_padded_tensor_pad_with_its_value(path):
    N = 21
    a = np.random.default_rng(2).standard_normal(N).astype(np.float32)
    out = run(path, padded_copies(N, -99.0), A=a, B=np.zeros(32, np.float32), C=np.zeros(32, np.float32),
              D=np.zeros(32, np.float32))
    want = np.full(32, -99.0, np.float32)
    want[:N] = a
    for name in "BCD":
        np.testing.assert_array_equal(out[name], want)


def test_a_padded_copy_converts_the_value_to_the_destination_type():
    import torch

    import tilelang_core as tilelang

    a = torch.randn(21)
    b, c, d = torch.zeros(32), torch.zeros(32, dtype=torch.float16), torch.zeros(32)
    tilelang.compile(padded_copies(21, -99.5, "float16"), target="cpu")(a, b, c, d)
    assert c[:21].tolist() == a.half().tolist() and (c[21:] == -99.5).all()


def test_a_padded_copy_of_run_time_extent_is_refused():
    with pytest.raises(FrontendError, match=r"T.copy reads 'A'.*nonzero.*known only at run time"):
        @T.prim_func
        def bad(A: T.Tensor((20,), "float32"), B: T.Tensor((20,), "float32"), n: T.int32):
            with T.Kernel(1, threads=32):
                T.annotate_safe_value({A: 1.0})
                T.copy(A[0:n], B[0:n])


def test_a_padded_copy_of_several_elements_inside_parallel_is_refused():
    with pytest.raises(FrontendError, match=r"T.copy of several elements of 'A' inside a T.Parallel loop"):
        @T.prim_func
        def bad(A: T.Tensor((8, 8), "float32"), B: T.Tensor((8, 8), "float32")):
            with T.Kernel(1, threads=32):
                T.annotate_safe_value({A: 1.0})
                for i in T.Parallel(8):
                    T.copy(A[i, 0:8], B[i, 0:8])


def test_a_safe_value_for_shared_memory_is_refused():
    with pytest.raises(FrontendError, match=r"in shared(\.dyn)? memory"):
        @T.prim_func
        def bad(A: T.Tensor((16,), "float32")):
            with T.Kernel(1, threads=32):
                s = T.alloc_shared((16,), "float32")
                T.annotate_safe_value({s: 1.0})
                T.copy(A, s)


@pytest.mark.parametrize("second", [-99, -1])
def test_a_second_safe_value_for_one_tensor(second):
    """Two different values for one tensor are refused (each would apply to every read, the earlier
    copies' too: a silent change of their padding); the same value twice is one annotation."""
    def kernel():
        @T.prim_func
        def main(A: T.Tensor((60, 60), "int32"), Out: T.Tensor((64, 64), "int32")):
            with T.Kernel(1, threads=128):
                a = T.alloc_shared((64, 64), "int32")
                b = T.alloc_shared((64, 64), "int32")
                T.annotate_safe_value({A: -1})
                T.copy(A[0:64, 0:64], a)
                T.annotate_safe_value({A: second})
                T.copy(A[0:64, 0:64], b)
                for i, j in T.Parallel(64, 64):
                    Out[i, j] = a[i, j] + b[i, j]

        return main

    if second == -1:
        out = run("cpu", kernel(), A=np.ones((60, 60), np.int32), Out=np.zeros((64, 64), np.int32))
        assert out["Out"][0, 0] == 2 and out["Out"][63, 63] == -2
        return
    with pytest.raises(FrontendError, match=r"gives 'A' two safe values \((-1 and -99|-99 and -1)\)"):
        kernel()
