"""``T.ptr`` parameters and pointer tables made tensors with ``T.make_tensor``, ``T.StridedTensor``
parameters, and TileLang's ``execution_backend`` knob: cpu numerics against torch in float64, the
calling conventions TileLang's adapters take (tensors; ``data_ptr()`` integers for ``T.ptr``), and
the refusals."""

import pytest
import torch

import tilelang_core as tilelang
import tilelang_core.language as T
from tilelang_core.errors import CompileError, ConfigError, FrontendError, LaunchError
from tilelang_core.jit.args import tensor_at

GEN = torch.Generator().manual_seed(7)


def randn(*shape, dtype=torch.float32):
    return torch.randn(*shape, generator=GEN, dtype=torch.float64).to(dtype)


def scale_rows(K, rows=4):
    @T.prim_func
    def main(a_ptr: T.ptr, c_ptr: T.ptr, m: T.int32):
        A = T.make_tensor(a_ptr, (m, K), T.float32)
        C = T.make_tensor(c_ptr, (m, K), T.float32)
        with T.Kernel(T.ceildiv(m, rows), threads=32) as bx:
            for i, j in T.Parallel(rows, K):
                C[bx * rows + i, j] = A[bx * rows + i, j] * 2.0 + 1.0

    return main


def test_a_pointer_parameter_made_a_tensor_is_a_tensor_parameter():
    func = scale_rows(8)
    assert [str(p.name) for p in func.params] == ["A", "C", "m"]
    kernel = tilelang.compile(func, target="cpu")
    assert [(p.kind, p.dtype, p.shape, p.pointer) for p in kernel.params] == [
        ("tensor", "float32", ("m", 8), True), ("tensor", "float32", ("m", 8), True),
        ("scalar", "int32", (), False)]


@pytest.mark.parametrize("m", [1, 10])
def test_a_pointer_parameter_takes_a_tensor_or_its_data_pointer(m):
    kernel = tilelang.compile(scale_rows(8), target="cpu")
    a = randn(m, 8)
    want = a.double() * 2.0 + 1.0
    for make_args in (lambda c: (a, c, m), lambda c: (a.data_ptr(), c.data_ptr(), m),
                      lambda c: (a, c.data_ptr(), m)):
        c = torch.zeros(m, 8)
        kernel(*make_args(c))
        torch.testing.assert_close(c.double(), want)


def test_a_size_given_twice_must_agree():
    kernel = tilelang.compile(scale_rows(8), target="cpu")
    a, c = randn(10, 8), torch.zeros(10, 8)
    with pytest.raises(LaunchError, match=r"parameter 'm' \(argument 2\) is 9, but 'A' dimension 0 set m=10"):
        kernel(a, c, 9)
    with pytest.raises(LaunchError, match="parameter 'A' .* got the address 0"):
        kernel(0, c, 10)


def sized_by_pointer_only(K):
    n = T.dynamic("n")

    @T.prim_func
    def main(a_ptr: T.ptr, B: T.Tensor((K,), T.float32)):
        A = T.make_tensor(a_ptr, (n, K), T.float32)
        with T.Kernel(1, threads=32) as _:
            for j in T.Parallel(K):
                B[j] = A[0, j]

    return main


def test_a_data_pointer_whose_shape_is_unknown_is_refused():
    kernel = tilelang.compile(sized_by_pointer_only(4), target="cpu")
    a = randn(3, 4)
    b = torch.zeros(4)
    kernel(a, b)
    torch.testing.assert_close(b, a[0])
    with pytest.raises(LaunchError, match=r"dimension 0 \(n\) of its shape .* n is set by no other "
                                          r"argument; pass the tensor itself"):
        kernel(a.data_ptr(), b)


def table_copy(G, N):
    @T.prim_func
    def main(src_ptrs: T.Tensor([G], T.ptr), out: T.Tensor([G, N], T.float32)):
        with T.Kernel(G, threads=32) as g:
            src = T.make_tensor(src_ptrs[g], (N,), T.float32)
            for i in T.Parallel(N):
                out[g, i] = src[i] - 0.5

    return main


def test_a_pointer_table_is_an_int64_tensor():
    func = table_copy(4, 8)
    assert str(func.params[0].ty.dtype) == "int64"
    assert [int(d) for d in func.params[0].ty.shape] == [4]


@pytest.mark.parametrize("G,N", [(1, 1), (3, 20), (2, 64)])
def test_tensors_viewed_through_a_pointer_table(G, N):
    srcs = [randn(N) for _ in range(G)]
    table = torch.tensor([s.data_ptr() for s in srcs], dtype=torch.int64)
    out = torch.zeros(G, N)
    tilelang.compile(table_copy(G, N), target="cpu")(table, out)
    torch.testing.assert_close(out.double(), torch.stack(srcs).double() - 0.5)


def grouped_gemm(sizes, N, K, bm=16, bn=16, bk=16):
    """Each group's A (padded to the largest M) and C through pointer tables; B shared."""
    G, max_m = len(sizes), max(sizes)
    starts = [0]
    for m in sizes[:-1]:
        starts.append(starts[-1] + -(-m // bm))
    tiles = starts[-1] + -(-sizes[-1] // bm)

    @T.prim_func
    def main(a_ptrs: T.Tensor([G], T.ptr), c_ptrs: T.Tensor([G], T.ptr), B: T.Tensor((K, N), T.float32),
             first_tile: T.Tensor([G], T.int32)):
        with T.Kernel(tiles, T.ceildiv(N, bn), threads=32) as (bx, by):
            group = T.alloc_var(T.int32, 0)
            for g in T.serial(G):
                if bx >= first_tile[g]:
                    group = g
            row = (bx - first_tile[group]) * bm
            A = T.make_tensor(a_ptrs[group], (max_m, K), T.float32)
            C = T.make_tensor(c_ptrs[group], (max_m, N), T.float32)
            A_s = T.alloc_shared((bm, bk), T.float32)
            B_s = T.alloc_shared((bk, bn), T.float32)
            acc = T.alloc_fragment((bm, bn), T.float32)
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=1):
                T.copy(A[row, k * bk], A_s)
                T.copy(B[k * bk, by * bn], B_s)
                T.gemm(A_s, B_s, acc)
            T.copy(acc, C[row, by * bn])

    return main, starts


def test_a_grouped_gemm_through_pointer_tables():
    sizes, N, K = [5, 16, 21], 24, 20
    func, starts = grouped_gemm(sizes, N, K)
    a = [torch.zeros(max(sizes), K) for _ in sizes]
    for t, m in zip(a, sizes):
        t[:m] = randn(m, K)
    c = [torch.full((max(sizes), N), float("nan")) for _ in sizes]
    b = randn(K, N)
    kernel = tilelang.compile(func, target="cpu")
    kernel(torch.tensor([t.data_ptr() for t in a]), torch.tensor([t.data_ptr() for t in c]), b,
           torch.tensor(starts, dtype=torch.int32))
    for t, out, m in zip(a, c, sizes):
        torch.testing.assert_close(out[:m].double(), t[:m].double() @ b.double(), rtol=1e-5, atol=1e-5)


def test_make_tensor_of_a_pointer_parameter_inside_a_kernel_is_refused():
    with pytest.raises(FrontendError, match="pointer parameter 'p' must come before the first T.Kernel") as err:
        @T.prim_func
        def main(p: T.ptr, B: T.Tensor((4,), T.float32)):
            with T.Kernel(1, threads=32) as _:
                A = T.make_tensor(p, (4,), T.float32)
                B[0] = A[0]
    assert err.value.lineno is not None


def test_make_tensor_twice_of_one_pointer_is_refused():
    with pytest.raises(FrontendError, match="'p' is already a tensor; make one tensor per pointer"):
        @T.prim_func
        def main(p: T.ptr, B: T.Tensor((4,), T.float32)):
            A = T.make_tensor(p, (4,), T.float32)
            A2 = T.make_tensor(p, (2, 2), T.float32)
            with T.Kernel(1, threads=32) as _:
                B[0] = A[0] + A2[0, 0]


def test_a_32_bit_address_is_refused():
    with pytest.raises(FrontendError, match="the address .* is int32; addresses are 64-bit"):
        @T.prim_func
        def main(t: T.Tensor((2,), T.int32), B: T.Tensor((4,), T.float32)):
            with T.Kernel(1, threads=32) as _:
                A = T.make_tensor(t[0], (4,), T.float32)
                B[0] = A[0]


def test_a_pointer_never_made_a_tensor_is_refused_at_compile():
    @T.prim_func
    def main(p: T.ptr, B: T.Tensor((4,), T.float32)):
        with T.Kernel(1, threads=32) as _:
            B[0] = 1.0

    with pytest.raises(ConfigError, match="parameter 'p' is a T.ptr that no T.make_tensor turns into a tensor"):
        tilelang.compile(main, target="cpu")


@pytest.mark.parametrize("target", ["hip:gfx942", "metal:apple7", "ascend"])
def test_backends_without_address_tensors_refuse_pointer_tables(target):
    kind = target.split(":")[0]
    pytest.importorskip(f"tilelang_{kind}")
    with pytest.raises(CompileError, match=rf"the {kind} backend cannot view memory at an address .*tensor 'src'"):
        tilelang.compile(table_copy(2, 8), target=target)


def test_tensor_at_views_host_memory_with_strides():
    base = randn(4, 6)
    view = tensor_at(base.data_ptr() + 4 * 1, (4, 3), "float32", (6, 2), "cpu")
    assert view.data_ptr() == base.data_ptr() + 4
    torch.testing.assert_close(view, base[:, 1::2])
    assert tensor_at(base.data_ptr(), (0, 3), "float32", None, "cpu").shape == (0, 3)


# -- T.StridedTensor ------------------------------------------------------------------------------
def strided_copy(M, N, ld):
    @T.prim_func
    def main(A: T.StridedTensor((M, N), (ld, 1), T.float32), B: T.Tensor[(M, N), T.float32]):
        with T.Kernel(M, threads=32) as bx:
            for j in T.Parallel(N):
                B[bx, j] = A[bx, j] + 1.0

    return main


def strided_dynamic(N):
    m, ld = T.dynamic("m"), T.dynamic("ld")

    @T.prim_func
    def main(A: T.StridedTensor[(m, N), (ld, 1), T.float32], B: T.Tensor((m, N), T.float32)):
        with T.Kernel(m, threads=32) as bx:
            for j in T.Parallel(N):
                B[bx, j] = A[bx, j] * 3.0

    return main


@pytest.mark.parametrize("M,N,ld", [(1, 5, 9), (4, 5, 9), (3, 32, 33)])
def test_a_strided_tensor_takes_a_slice_of_a_wider_tensor(M, N, ld):
    x = randn(M, ld)
    b = torch.zeros(M, N)
    tilelang.compile(strided_copy(M, N, ld), target="cpu")(x[:, :N], b)
    torch.testing.assert_close(b.double(), x[:, :N].double() + 1.0)


def test_strides_given_by_the_call():
    kernel = tilelang.compile(strided_dynamic(6), target="cpu")
    for rows, ld in ((1, 6), (5, 11)):
        x = randn(rows, ld)
        b = torch.zeros(rows, 6)
        kernel(x[:, :6], b)
        torch.testing.assert_close(b.double(), x[:, :6].double() * 3.0)


def test_wrong_strides_are_refused_naming_the_parameter():
    kernel = tilelang.compile(strided_copy(4, 5, 9), target="cpu")
    with pytest.raises(LaunchError, match=r"parameter 'A' .*has other strides than compiled \(strides \(10, 1\), "
                                          r"expected \(9, 1\)\)"):
        kernel(randn(4, 10)[:, :5], torch.zeros(4, 5))


def test_strided_tensor_spelling_errors():
    with pytest.raises(FrontendError, match="2 dimensions but 1 strides"):
        T.StridedTensor((4, 5), (1,), T.float32)
    with pytest.raises(FrontendError, match=r"write T.StridedTensor\[shape, strides, dtype\]"):
        T.StridedTensor[(4, 5), T.float32]
    assert repr(T.StridedTensor((4, 5), (9, 1), "float16")) == "T.StridedTensor((4, 5), (9, 1), 'float16')"


# -- execution_backend ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["auto", "tvm_ffi", "cython", "nvrtc", "torch", "cutedsl", None])
def test_compile_accepts_tilelang_execution_backends(name):
    kernel = tilelang.compile(strided_copy(2, 3, 4), target="cpu", execution_backend=name, verbose=False)
    x, b = randn(2, 4), torch.zeros(2, 3)
    kernel(x[:, :3], b)
    torch.testing.assert_close(b, x[:, :3] + 1.0)


def test_compile_refuses_an_unknown_execution_backend_and_target_host():
    with pytest.raises(ConfigError, match=r"compile\(execution_backend='ctypes'\) is not one of auto, tvm_ffi"):
        tilelang.compile(strided_copy(2, 3, 4), target="cpu", execution_backend="ctypes")
    with pytest.raises(ConfigError, match="target_host"):
        tilelang.compile(strided_copy(2, 3, 4), target="cpu", target_host="llvm")


def test_jit_accepts_execution_backend():
    @tilelang.jit(execution_backend="tvm_ffi", target="cpu")
    def factory(M):
        @T.prim_func
        def main(A: T.StridedTensor((M, 3), (4, 1), T.float32), B: T.Tensor((M, 3), T.float32)):
            with T.Kernel(M, threads=32) as bx:
                for j in T.Parallel(3):
                    B[bx, j] = A[bx, j] + 1.0

        return main

    x, b = randn(2, 4), torch.zeros(2, 3)
    factory(2)(x[:, :3], b)
    torch.testing.assert_close(b, x[:, :3] + 1.0)
