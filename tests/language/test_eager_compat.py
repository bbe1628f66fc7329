"""Eager @jit as TileLang writes it: get_kernel_source on the @jit function, header names from the
module, defaults and ``if`` blocks, tensor types in the signature, T.empty(M, N, dtype=...),
get_tir / par_compile. Numerics on the cpu backend against torch float64."""

import pytest
import torch

import tilelang_core as tl
import tilelang_core.language as T
from tilelang_core.errors import FrontendError

DTYPE = T.float32  # a module-level dtype, as TileLang's examples name one


@tl.jit(target="cpu")
def scale_global(A, blk_m):
    M, N = T.const("M, N")
    A: T.Tensor((M, N), DTYPE)
    B = T.empty((M, N), DTYPE)
    with T.Kernel(T.ceildiv(M, blk_m), threads=32) as bx:
        for i, j in T.Parallel(blk_m, N):
            if bx * blk_m + i < M:
                B[bx * blk_m + i, j] = A[bx * blk_m + i, j] * 2.0
    return B


@tl.jit(target="cpu")
def scale_header(A, blk_m, scale=None, transpose=False):
    M, N = T.const("M, N")
    if scale is None:  # an if block of the header feeds the annotation below
        scale = 3.0
    if transpose:
        shape = (N, M)
    else:
        shape = (M, N)
    dtype = T.float32
    A: T.Tensor(shape, dtype)
    B = T.empty(shape[0], shape[1], dtype=dtype)  # TileLang's T.empty(*shape, dtype=...)
    with T.Kernel(T.ceildiv(shape[0], blk_m), threads=32) as bx:
        for i, j in T.Parallel(blk_m, shape[1]):
            if bx * blk_m + i < shape[0]:
                B[bx * blk_m + i, j] = A[bx * blk_m + i, j] * scale
    return B


@tl.jit(target="cpu")
def copy_signature(A: T.Tensor[[8, 4], T.float32], B: T.Tensor[[8, 4], T.float32]):
    with T.Kernel(1, threads=32) as _:
        T.copy(A, B)


@tl.jit(target="cpu")
def broken_header(A):
    M = T.const("M")
    dtype = T.no_such_dtype
    A: T.Tensor((M,), dtype)
    B = T.empty((M,), dtype)
    with T.Kernel(1, threads=32) as _:
        T.copy(A, B)
    return B


@pytest.mark.parametrize("shape", [(37, 5), (1, 1), (16, 1)])
def test_annotation_naming_a_module_level_dtype(shape):
    a = torch.randn(*shape)
    torch.testing.assert_close(scale_global(a, 16).double(), a.double() * 2)
    kernel = scale_global.compile(M=shape[0], N=shape[1], blk_m=16)  # sizes instead of tensors
    torch.testing.assert_close(kernel(a).double(), a.double() * 2)


def test_header_if_blocks_and_tilelangs_empty_form():
    a = torch.randn(9, 3)
    torch.testing.assert_close(scale_header(a, 4).double(), a.double() * 3)
    torch.testing.assert_close(scale_header(a, 4, 0.5).double(), a.double() * 0.5)
    at = torch.randn(3, 9)  # transpose=True: the annotation reads (N, M)
    torch.testing.assert_close(scale_header(at, 4, transpose=True).double(), at.double() * 3)
    kernel = scale_header.compile(M=9, N=3, blk_m=4)
    torch.testing.assert_close(kernel(a).double(), a.double() * 3)


def test_tensor_types_in_the_signature():
    a, b = torch.randn(8, 4), torch.zeros(8, 4)
    copy_signature(a, b)
    assert torch.equal(a, b)
    func = copy_signature.get_tir(T.Tensor((8, 4)), T.Tensor((8, 4)))  # TileLang's stand-ins
    assert [str(p.name) for p in func.params] == ["A", "B"]


def test_a_failing_header_statement_is_reported_at_its_own_line():
    for call in (lambda: broken_header(torch.randn(4)), lambda: broken_header.compile(M=4)):
        with pytest.raises(FrontendError, match=r"no attribute 'no_such_dtype' \(needed by the annotation") as info:
            call()
        assert "dtype = T.no_such_dtype" in str(info.value)


def test_t_empty_refuses_a_dtype_in_the_shape_position():
    @tl.jit(target="cpu")
    def bad(A):
        M = T.const("M")
        A: T.Tensor((M,), T.float32)
        B = T.empty(M, "float32")
        with T.Kernel(1, threads=32) as _:
            T.copy(A, B)
        return B

    with pytest.raises(FrontendError, match=r"T.empty\(M, 'float32'\)|give the shape as one tuple"):
        bad(torch.randn(4))


def test_get_kernel_source_on_an_eager_jit_is_the_kernel_it_compiles():
    a = torch.randn(10, 3)
    by_tensor = scale_global.get_kernel_source(a, 8)
    by_sizes = scale_global.get_kernel_source(M=10, N=3, blk_m=8)
    assert by_tensor == by_sizes == scale_global.compile(a, 8).get_kernel_source() != ""


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_get_kernel_source_compiles_for_the_jits_target(arch):
    pytest.importorskip("tilelang_cuda")

    @tl.jit(target=f"cuda:{arch}")
    def twice(A, blk_m=16):
        M, N = T.const("M, N")
        A: T.Tensor[[M, N], T.float32]
        B = T.empty(M, N, dtype=T.float32)
        with T.Kernel(T.ceildiv(M, blk_m), threads=32) as bx:
            for i, j in T.Parallel(blk_m, N):
                if bx * blk_m + i < M:
                    B[bx * blk_m + i, j] = A[bx * blk_m + i, j] * 2.0
        return B

    source = twice.get_kernel_source(M=20, N=3)
    assert "__global__" in source
    assert str(twice.compile(M=20, N=3).target) == f"cuda:{arch}"


def test_get_kernel_source_on_a_lazy_jit():
    @tl.jit(out_idx=[-1], target="cpu")
    def add_one(n, block=32):
        @T.prim_func
        def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
            with T.Kernel(T.ceildiv(n, block), threads=32) as bx:
                for i in T.Parallel(block):
                    if bx * block + i < n:
                        B[bx * block + i] = A[bx * block + i] + 1.0
        return main

    assert add_one.get_kernel_source(33) == add_one(33).get_kernel_source() != ""
    k16, k32 = add_one.par_compile([{"n": 33, "block": 16}, (33, 32)])
    a = torch.randn(33)
    for kernel in (k16, k32):
        torch.testing.assert_close(kernel(a).double(), a.double() + 1)


def test_par_compile_reports_or_skips_a_failing_config():
    @tl.jit(out_idx=[-1], target="cpu", mode="lazy")
    def picky(n):
        if n < 0:
            raise ValueError("n must be >= 0")
        return scale_like(n)

    with pytest.raises(ValueError, match="n must be"):
        picky.par_compile([(-1,)])
    with pytest.warns(RuntimeWarning, match="par_compile of 'picky'"):
        kernels = picky.par_compile([(-1,), {"n": 5}], ignore_error=True)
    assert kernels[0] is None and kernels[1] is not None


def scale_like(n):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=32) as _:
            T.copy(A, B)
    return main


@tl.jit
def dynamic_rows(x, block=32):
    M = T.dynamic("M")
    N = T.const("N")
    x: T.Tensor[(M, N), T.float32]
    y = T.empty((M, N), T.float32)
    with T.Kernel(T.ceildiv(M, block), threads=128) as bx:
        for i, j in T.Parallel(block, N):
            y[bx * block + i, j] = x[bx * block + i, j] * 2.0
    return y


def test_a_dynamic_size_is_one_variable_in_annotations_empties_and_body():
    with tl.Target("cpu"):
        for rows in (70, 1, 33):  # one kernel serves every row count
            x = torch.randn(rows, 16)
            torch.testing.assert_close(dynamic_rows(x), 2 * x)


@tl.jit
def blocks_of_groups(A, sizes, block_M=16):
    K = T.const("K")
    total = sum((s + block_M - 1) // block_M for s in sizes)  # a generator, as TileLang kernels write
    A: T.Tensor[(total * block_M, K), T.float32]
    with T.Kernel(total, threads=64) as bx:
        for i, j in T.Parallel(block_M, K):
            A[bx * block_M + i, j] = A[bx * block_M + i, j] + bx


def test_list_arguments_and_generator_expressions_in_the_header():
    with tl.Target("cpu"):
        a = torch.zeros(48, 8)
        blocks_of_groups(a, [5, 20])  # a list compile-time argument (keyed as a tuple)
        expected = torch.arange(3).repeat_interleave(16)[:, None].float().expand(48, 8)
        torch.testing.assert_close(a, expected)


@tl.jit(target="cpu")
def static_shift(A: T.Tensor((64,), T.float32), B: T.Tensor((64,), T.float32)):
    with T.Kernel(2, threads=32) as bx:
        for i in T.Parallel(32):
            x = A[bx * 32 + i] + 1.0
            B[bx * 32 + i] = x


def test_a_kernel_with_static_annotations_compiles_without_arguments():
    """TileLang's let tests: `@jit def f(A: T.Tensor((64,), ...))` then `f.get_kernel_source()`
    (was: "missing a required argument: 'A'")."""
    assert "define" in static_shift.get_kernel_source()
    kernel = static_shift.compile()
    a, b = torch.randn(64), torch.zeros(64)
    kernel(a, b)
    torch.testing.assert_close(b, a + 1)
    with pytest.raises(FrontendError, match="missing"):  # a size-dependent program still needs them
        scale_global.compile()


def test_module_level_par_compile():
    """TileLang's ``tilelang.par_compile(funcs, ...)``: each PrimFunc with the same options, in
    order; a failing one raises, or is None with a warning under ignore_error."""
    funcs = [scale_like(4), scale_like(9)]
    kernels = tl.par_compile(funcs, out_idx=[-1], target="cpu")
    for n, kernel in zip((4, 9), kernels):
        a = torch.randn(n)
        torch.testing.assert_close(kernel(a), a)
    with pytest.warns(RuntimeWarning, match="par_compile of the PrimFunc"):
        kernels = tl.par_compile([scale_like(3), "not a kernel"], out_idx=[-1], target="cpu", ignore_error=True)
    assert kernels[0] is not None and kernels[1] is None
    with pytest.raises(Exception):
        tl.par_compile(["not a kernel"], target="cpu")


@tl.jit(target="cpu")
def axpy_ptr(X: T.ptr, Y: T.ptr, Out: T.ptr, M: int, N: int, dtype: T.dtype, blk: int = 32):
    """TileLang's pointer kernels in eager form: ``T.ptr`` parameters made tensors."""
    X = T.make_tensor(X, (M, N), dtype)
    Y = T.make_tensor(Y, (M, N), dtype)
    Out = T.make_tensor(Out, (M, N), dtype)
    with T.Kernel(T.ceildiv(M, blk), threads=32) as bx:
        for i, j in T.Parallel(blk, N):
            if bx * blk + i < M:
                Out[bx * blk + i, j] = X[bx * blk + i, j] * 2.0 + Y[bx * blk + i, j]


@pytest.mark.parametrize("M, N", [(37, 5), (1, 1), (64, 16)])
def test_eager_pointer_parameters_take_tensors_or_addresses(M, N):
    x, y = torch.randn(M, N), torch.randn(M, N)
    want = x.double() * 2 + y.double()
    out = torch.full((M, N), float("nan"))
    axpy_ptr(x, y, out, M, N, T.float32)
    torch.testing.assert_close(out.double(), want, rtol=1e-6, atol=1e-6)
    out2 = torch.full((M, N), float("nan"))
    axpy_ptr(x.data_ptr(), y.data_ptr(), out2.data_ptr(), M, N, T.float32)  # raw addresses, on trust
    torch.testing.assert_close(out2.double(), want, rtol=1e-6, atol=1e-6)
    # the pointers do not key the kernel; the sizes do
    assert axpy_ptr.compile(X=T.ptr(), Y=T.ptr(), Out=T.ptr(), M=M, N=N, dtype=T.float32) is \
        axpy_ptr.compile(X=x, Y=y, Out=out, M=M, N=N, dtype=T.float32)


def test_eager_pointer_parameter_checks_a_tensor_against_its_make_tensor_shape():
    x, y, out = torch.randn(8, 4), torch.randn(8, 4), torch.empty(8, 5)
    with pytest.raises(Exception, match="Out"):
        axpy_ptr(x, y, out, 8, 4, T.float32)
