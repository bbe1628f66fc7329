"""TVM's scalar intrinsics and low-level statements under TileLang's ``T.`` names: numerics on the
cpu backend against torch, and the CUDA source compiled for sm_80 and sm_90a."""

import numpy as np
import pytest
import torch

import tilelang_core as tilelang
import tilelang_core.language as T
from tilelang_core import FrontendError


def bit_kernel(n=256, threads=128):
    @T.prim_func
    def bits(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "uint32"), Z: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, threads), threads=threads) as bx:
            s = T.alloc_shared((threads,), "float32")
            tx = T.get_thread_binding()
            s[tx] = X[bx * threads + tx]
            T.sync_threads()  # each thread reads its mirror's value
            Y[bx * threads + tx] = T.bitwise_or(T.shift_right(T.reinterpret(s[threads - 1 - tx], T.uint32), 1),
                                                T.shift_left(T.uint32(1), 31))
            Z[bx * threads + tx] = T.log1p(T.abs(s[tx])) + T.Cast("float32", T.popcount(T.uint32(tx)))
            T.assume(tx < threads)

    return bits


def test_bit_manipulation_and_barrier_on_cpu():
    k = tilelang.compile(bit_kernel(), target="cpu")
    x = torch.randn(256)
    y = torch.zeros(256, dtype=torch.uint32)
    z = torch.zeros(256)
    k(x, y, z)
    mirrored = x.view(2, 128).flip(1).reshape(-1).numpy().view(np.uint32)
    np.testing.assert_array_equal(y.numpy(), (mirrored >> 1) | np.uint32(1 << 31))
    popcounts = torch.tensor([bin(t).count("1") for t in range(128)] * 2, dtype=torch.float64)
    torch.testing.assert_close(z.double(), torch.log1p(x.double().abs()) + popcounts, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_cuda_source_has_the_intrinsics(arch):
    src = tilelang.compile(bit_kernel(), target=f"cuda:{arch}").get_kernel_source()
    assert "__syncthreads()" in src
    assert "__popc" in src and "log1pf" in src


def test_reinterpret_takes_either_argument_order():
    import tvm

    x = tvm.tirx.Var("x", "float32")
    assert str(T.reinterpret(x, T.uint32).ty) == "uint32"
    assert str(T.reinterpret(T.uint32, x).ty) == "uint32"


def test_serial_is_tilelangs_spelling_of_serial():
    @T.prim_func
    def prefix(A: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=1):
            for i in T.Serial(1, 16):
                A[i] = A[i] + A[i - 1]

    a = torch.rand(16)
    tilelang.compile(prefix, target="cpu")(a_copy := a.clone())
    torch.testing.assert_close(a_copy, torch.cumsum(a, 0))


def test_disable_warp_group_reg_alloc_is_a_hint_inside_a_kernel():
    @T.prim_func
    def hinted(A: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            T.disable_warp_group_reg_alloc()
            for i in T.Parallel(128):
                A[i] = A[i] * 2.0

    a = torch.rand(128)
    out = a.clone()
    tilelang.compile(hinted, target="cpu")(out)
    torch.testing.assert_close(out, a * 2)
    with pytest.raises(FrontendError, match="inside 'with T.Kernel"):
        @T.prim_func
        def outside(A: T.Tensor((128,), "float32")):
            T.disable_warp_group_reg_alloc()
            with T.Kernel(1, threads=128):
                for i in T.Parallel(128):
                    A[i] = A[i] * 2.0


FAST = ["__exp", "__exp10", "__log", "__log2", "__log10", "__tan", "__cos", "__sin"]


@pytest.mark.parametrize("name", FAST)
def test_fast_math_refuses_non_float_inputs(name):
    from tvm import tirx

    for dtype in ("int32", "uint8", "bool", "float8_e4m3fn"):
        with pytest.raises(TypeError, match=rf"T\.{name} only supports floating-point inputs, but got {dtype}"):
            getattr(T, name)(tirx.Var("v", dtype))
    assert str(getattr(T, name)(tirx.Var("v", "bfloat16")).ty) == "bfloat16"


def test_fast_math_computes_the_function():
    fexp, fsin = getattr(T, "__exp"), getattr(T, "__sin")

    @T.prim_func
    def fast(X: T.Tensor((64,), "float32"), Y: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(64):
                Y[i] = fexp(X[i]) + fsin(X[i])

    x = torch.randn(64)
    y = torch.zeros(64)
    tilelang.compile(fast, target="cpu")(x, y)
    torch.testing.assert_close(y.double(), x.double().exp() + x.double().sin(), rtol=1e-5, atol=1e-5)


def extern_exp(form):
    @T.prim_func
    def k(A: T.Tensor((16,), "float32"), B: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=16):
            tx = T.get_thread_binding()
            if form == "tvm":
                B[tx] = T.call_extern("float32", "expf", A[tx])
            else:  # TileLang's spelling: the name first, the result type by keyword
                B[tx] = T.call_extern("expf", A[tx], dtype="float32")

    return k


@pytest.mark.parametrize("form", ["tvm", "tilelang"])
def test_call_extern_in_both_spellings(form):
    import numpy as np

    from tilelang_core.testing.oracle import run

    a = np.linspace(-2, 2, 16).astype(np.float32)
    b = np.zeros(16, np.float32)
    run("cpu", extern_exp(form), A=a, B=b)
    np.testing.assert_allclose(b, np.exp(a.astype(np.float64)), rtol=1e-6)
    assert 'T.call_extern("float32", "expf"' in extern_exp(form).script()


def test_call_extern_without_a_name_is_refused():
    with pytest.raises(FrontendError, match="function name must be a string"):
        @T.prim_func
        def k(A: T.Tensor((16,), "float32")):
            with T.Kernel(1, threads=16):
                A[0] = T.call_extern("float32", A[0])
