"""Settings a kernel carries (TileLang's function attributes): the eager style under
``@T.prim_func`` (tensor types in the body, ``T.empty`` outputs returned: ``tilelang_out_idx``),
``T.annotate_pass_configs`` and ``T.annotate_compile_flags``, and ``compile_flags`` on
``tilelang.compile`` / ``@tilelang.jit``."""

import pytest
import torch

import tilelang_core as tilelang
import tilelang_core.language as T
from tilelang_core.errors import ConfigError, FrontendError
from tilelang_core.jit.compiler import kernel_settings


def test_eager_prim_func_returns_its_output():
    @T.prim_func
    def add_one(A):
        A: T.Tensor[[37, 5], T.float32]
        B = T.empty([37, 5], T.float32)
        with T.Kernel(1, threads=32):
            for i, j in T.Parallel(37, 5):
                B[i, j] = A[i, j] + 1.0
        return B

    assert list(add_one.attrs["tilelang_out_idx"]) == [-1]
    assert [p.name for p in add_one.params] == ["A", "B"]
    a = torch.randn(37, 5)
    torch.testing.assert_close(tilelang.compile(add_one, target="cpu")(a), a + 1.0)


def test_eager_prim_func_with_dynamic_sizes_a_scalar_and_two_outputs():
    @T.prim_func
    def shifted(A, n: T.int32):
        m = T.dynamic("m")
        A: T.Tensor[[m], T.float32]
        B = T.empty([m], T.float32)
        C = T.empty([m + 1], T.int32)
        with T.Kernel(1, threads=32):
            for i in T.serial(m):
                B[i] = A[i] + T.cast(n, T.float32)
            for i in T.serial(m + 1):
                C[i] = i * n
        return B, C

    assert list(shifted.attrs["tilelang_out_idx"]) == [-2, -1]
    kernel = tilelang.compile(shifted, target="cpu")
    for m, n in ((1, 3), (29, -2)):
        a = torch.randn(m)
        b, c = kernel(a, n)
        torch.testing.assert_close(b, a + n)
        assert c.shape == (m + 1,) and c.tolist() == [i * n for i in range(m + 1)]


def test_eager_prim_func_without_outputs_has_no_out_idx():
    @T.prim_func
    def copy(A, B):
        A: T.Tensor[[16], T.float32]
        B: T.Tensor[[16], T.float32]
        T.annotate_pass_configs({tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: True})
        with T.Kernel(1, threads=16):
            B[T.get_thread_binding()] = A[T.get_thread_binding()] * 2.0

    assert "tilelang_out_idx" not in copy.attrs
    assert dict(copy.attrs["tilelang_pass_configs"]) == {"tl.enable_fast_math": True}
    a = torch.randn(16)
    torch.testing.assert_close(tilelang.compile(copy, out_idx=[-1], target="cpu")(a), 2 * a)


def test_out_idx_given_for_a_kernel_that_returns_its_outputs_is_a_conflict():
    @T.prim_func
    def ident(A):
        A: T.Tensor[[8], T.float32]
        B = T.empty([8], T.float32)
        with T.Kernel(1, threads=8):
            B[T.get_thread_binding()] = A[T.get_thread_binding()]
        return B

    with pytest.raises(ValueError, match="Out index conflict"):
        tilelang.compile(ident, out_idx=[-1], target="cpu")


def test_eager_prim_func_refuses_what_it_cannot_bind():
    with pytest.raises(FrontendError, match=r"T.const \(M\) binds sizes from the call"):
        @T.prim_func
        def sized(A):
            M = T.const("M")
            A: T.Tensor[[M], T.float32]
            B = T.empty([M], T.float32)
            with T.Kernel(1, threads=8):
                B[0] = A[0]
            return B

    with pytest.raises(FrontendError, match="parameter 'scale' of T.prim_func 'scaled' needs a tensor"):
        @T.prim_func
        def scaled(A, scale):
            A: T.Tensor[[8], T.float32]
            B = T.empty([8], T.float32)
            with T.Kernel(1, threads=8):
                B[0] = A[0] * scale
            return B


def test_annotated_settings_merge_under_the_call_s():
    @T.prim_func
    def k(A: T.Tensor((8,), T.float32)):
        T.annotate_pass_configs({"tl.enable_fast_math": True, "tl.disable_tma_lower": True})
        T.annotate_compile_flags(["--use_fast_math"])
        T.annotate_compile_flags("-lineinfo")
        with T.Kernel(1, threads=8):
            A[T.get_thread_binding()] = 0.0

    assert list(k.attrs["tilelang_compile_flags"]) == ["--use_fast_math", "-lineinfo"]
    out_idx, configs = kernel_settings(k, "k", None, {"tl.disable_tma_lower": False}, ["-O2"])
    assert out_idx is None
    assert configs == {"tl.enable_fast_math": True, "tl.disable_tma_lower": False,
                       "tl.device_compile_flags": ("--use_fast_math", "-lineinfo", "-O2")}
    with pytest.raises(ConfigError, match="must be strings"):
        kernel_settings(k, "k", None, None, [3])


def test_annotations_outside_a_kernel_are_refused():
    with pytest.raises(FrontendError, match="inside a kernel"):
        T.annotate_pass_configs({"tl.enable_fast_math": True})
    with pytest.raises(FrontendError, match="inside a kernel"):
        T.annotate_compile_flags(["-O3"])


def test_compile_flags_reach_the_device_compilers_options():
    pytest.importorskip("tilelang_cuda")
    from tilelang_cuda.options import CudaOptions

    options = CudaOptions.from_pass_configs({"tl.device_compile_flags": ("--use_fast_math", "-lineinfo")})
    assert options.extra_nvcc_flags == ("--use_fast_math", "-lineinfo")


def test_jit_takes_compile_flags():
    @tilelang.jit(target="cpu", compile_flags=["-O3"])
    def scale(A):
        A: T.Tensor[[16], T.float32]
        B = T.empty([16], T.float32)
        with T.Kernel(1, threads=16):
            B[T.get_thread_binding()] = A[T.get_thread_binding()] * 3.0
        return B

    assert scale.pass_configs == {"tl.device_compile_flags": ("-O3",)}
    a = torch.randn(16)
    torch.testing.assert_close(scale(a), 3 * a)
    with pytest.raises(ConfigError, match="must be strings"):
        tilelang.jit(compile_flags=[1])


def test_eager_jit_of_compile_time_values_only():
    """No tensor inputs at all: the outputs' sizes come from compile-time values."""
    @tilelang.jit(target="cpu")
    def iota(m: int):
        B = T.empty([m + 1], T.float32)
        with T.Kernel(1, threads=1):
            for i in T.serial(m + 1):
                B[i] = T.cast(i, T.float32)
        return B

    torch.testing.assert_close(iota(23), torch.arange(24, dtype=torch.float32))


def min_blocks_kernel(min_blocks):
    @T.prim_func
    def main(A: T.Tensor((37, 50), "float32"), B: T.Tensor((37, 50), "float32")):
        with T.Kernel(37, threads=64) as bx:
            T.annotate_min_blocks_per_sm(min_blocks)
            for i in T.serial(50):
                B[bx, i] = A[bx, i] * 2.0 + 1.0

    return main


@pytest.mark.parametrize("path", __import__("tilelang_core.testing.oracle", fromlist=["PATHS"]).PATHS)
def test_min_blocks_per_sm_is_a_hint_that_changes_no_value(path):
    import numpy as np
    from tilelang_core.testing.oracle import run

    a = np.random.default_rng(3).standard_normal((37, 50)).astype(np.float32)
    b = np.full((37, 50), np.nan, np.float32)
    run(path, min_blocks_kernel(2), A=a, B=b)
    np.testing.assert_allclose(b, a.astype(np.float64) * 2.0 + 1.0, rtol=1e-6)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_min_blocks_per_sm_is_cudas_second_launch_bound(arch, tmp_path):
    from test_printer_limits import _cuda_source

    assert "__launch_bounds__(64, 3) main_kernel(" in _cuda_source(min_blocks_kernel(3), arch, tmp_path)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_min_blocks_per_sm_takes_a_positive_integer(bad):
    with pytest.raises(FrontendError, match="T.annotate_min_blocks_per_sm takes a positive"):
        min_blocks_kernel(bad)
