"""@jit in the lazy (factory) and eager (kernel on tensors) styles."""

from collections import namedtuple

import numpy as np
import pytest
import torch

import jit_kernels as kernels
from jit_test_backend import LlvmTestBackend
from tilelang_core.errors import ConfigError
from tilelang_core.jit import EagerJIT, JITKernel, LazyJIT, detect_mode, jit
from tvm.script import tirx as T

# -- lazy ---------------------------------------------------------------------------------------


def scale_factory(n, factor):
    @T.prim_func
    def scale(A: T.Buffer((n,), "float64"), B: T.Buffer((n,), "float64")):
        T.func_attr({"global_symbol": "scale"})
        for i in range(n):
            B[i] = A[i] * T.float64(factor)

    return scale


def test_lazy_with_parentheses_returns_memoized_kernels_per_arguments():
    backend = LlvmTestBackend()
    scale = jit(out_idx=[-1], _backend=backend)(scale_factory)
    assert isinstance(scale, LazyJIT) and scale.__name__ == "scale_factory"
    k = scale(16, 3.0)
    assert isinstance(k, JITKernel)
    a = torch.rand(16, dtype=torch.float64)
    torch.testing.assert_close(k(a), a * 3.0)
    assert scale(16, 3.0) is k and scale(n=16, factor=3.0) is not None
    k2 = scale(16, 4.0)
    assert k2 is not k
    torch.testing.assert_close(k2(a), a * 4.0)
    assert backend.builds == 2


def test_lazy_without_parentheses_has_no_outputs():
    lazy = jit(kernels.make_scale)  # the plugin lookup is never reached before a call
    assert isinstance(lazy, LazyJIT) and lazy.out_idx is None


def test_lazy_factory_returning_something_else_points_to_eager_mode():
    def not_a_kernel(n):
        @T.prim_func
        def f(A: T.Buffer((n,), "float64")):
            A[0] = T.float64(1)

        return "oops"

    with pytest.raises(ConfigError, match="returned str, not a T.prim_func.*mode='eager'"):
        jit(not_a_kernel, _backend=LlvmTestBackend())(4)


def test_unknown_mode_is_refused():
    with pytest.raises(ConfigError, match="mode='fast'"):
        jit(mode="fast")


# -- mode detection ----------------------------------------------------------------------------


def eager_style(A, B, block_M: int = 128):
    C = T.empty((A.shape[0],), "float64")  # noqa: F841 - never executed by the tests
    return C


def called_style_factory(n):
    @T.prim_func(private=True)
    def main(A: T.Buffer((n,), "float64")):
        A[0] = T.float64(1)

    return main


def factory_calling_a_helper(n):
    return called_style_factory(n)


def eager_launching(A, n: int = 4):
    A: T.Tensor[(n,), "float64"]  # noqa: F842 - never executed by the tests
    with T.Kernel(1):
        pass


def test_a_factory_returning_a_helpers_prim_func_is_lazy():
    """TileLang calls such a function and finds a PrimFunc: lazy, out_idx and all."""
    assert detect_mode(factory_calling_a_helper) == "lazy"
    assert detect_mode(eager_launching) == "eager"
    assert isinstance(jit(factory_calling_a_helper), LazyJIT)


def test_detect_mode_reads_source_without_running_it():
    assert detect_mode(scale_factory) == "lazy"
    assert detect_mode(called_style_factory) == "lazy"
    assert detect_mode(eager_style) == "eager"
    assert detect_mode(eval("lambda n: n")) == "lazy"  # no source: lazy


def test_explicit_mode_overrides_detection():
    assert isinstance(jit(mode="eager")(scale_factory), EagerJIT)
    assert isinstance(jit(mode="lazy")(eager_style), LazyJIT)


# -- eager --------------------------------------------------------------------------------------

Specialization = namedtuple("Specialization", "func out_idx key const_values")


class FakeEagerProgram:
    """Stands in for language.eager.EagerProgram: specializes on A's length."""

    instances = []

    def __init__(self, fn):
        self.fn = fn
        self.specialized = 0
        FakeEagerProgram.instances.append(self)

    def tensors_from_consts(self, args, kwargs):
        return args, kwargs

    def cache_key(self, args, kwargs):
        a = args[0] if args else kwargs["A"]
        return (tuple(a.shape), str(a.dtype), kwargs.get("factor", 2.0))

    def specialize(self, args, kwargs):
        self.specialized += 1
        a = args[0] if args else kwargs["A"]
        factor = kwargs.get("factor", 2.0)
        return Specialization(scale_factory(a.shape[0], factor), [1], None, {"n": a.shape[0]})


def eager_scale(A, factor: float = 2.0):
    B = T.empty(A.shape, "float64")
    return B


def make_eager(backend):
    return jit(eager_scale, _backend=backend, _program_factory=FakeEagerProgram)


def test_eager_call_specializes_compiles_once_runs_and_returns_output():
    backend = LlvmTestBackend()
    f = make_eager(backend)
    assert isinstance(f, EagerJIT)
    a = torch.rand(32, dtype=torch.float64)
    torch.testing.assert_close(f(a), a * 2.0)
    b = torch.rand(32, dtype=torch.float64)
    torch.testing.assert_close(f(b), b * 2.0)
    assert f.program.specialized == 1 and backend.builds == 1


def test_eager_respecializes_on_new_shape_and_compile_time_argument():
    backend = LlvmTestBackend()
    f = make_eager(backend)
    a16, a8 = np.random.rand(16), np.random.rand(8)
    np.testing.assert_array_equal(f(a16), a16 * 2.0)
    np.testing.assert_array_equal(f(a8), a8 * 2.0)
    np.testing.assert_array_equal(f(a8, factor=5.0), a8 * 5.0)
    np.testing.assert_array_equal(f(A=a8, factor=5.0), a8 * 5.0)  # keyword tensor argument
    assert f.program.specialized == 4 and backend.builds == 3


class KeyedFakeEagerProgram(FakeEagerProgram):
    """Also has EagerProgram's positional_key, and counts the cache_key calls it saves."""

    def __init__(self, fn):
        super().__init__(fn)
        self.key_calls = 0

    @staticmethod
    def _factor(args, kwargs):
        return args[1] if len(args) > 1 else kwargs.get("factor", 2.0)

    def cache_key(self, args, kwargs):
        self.key_calls += 1
        return (tuple(args[0].shape), str(args[0].dtype), self._factor(args, kwargs))

    def specialize(self, args, kwargs):
        self.specialized += 1
        n = args[0].shape[0]
        return Specialization(scale_factory(n, self._factor(args, kwargs)), [1], None, {"n": n})

    def positional_key(self):
        def key(args):
            return (len(args), args[0].shape, args[0].dtype, *args[1:])

        return key


def test_eager_positional_calls_skip_cache_key_but_not_specialization_or_checks():
    from tilelang_core.errors import LaunchError

    f = jit(eager_scale, _backend=LlvmTestBackend(), _program_factory=KeyedFakeEagerProgram)
    a = torch.rand(8, dtype=torch.float64)
    torch.testing.assert_close(f(a, 3.0), a * 3.0)
    seen = f.program.key_calls
    torch.testing.assert_close(f(a, 3.0), a * 3.0)
    assert f.program.key_calls == seen  # answered by the per-call memo
    torch.testing.assert_close(f(a, 4.0), a * 4.0)  # another compile-time value: another kernel
    b = torch.rand(5, dtype=torch.float64)
    torch.testing.assert_close(f(b, 3.0), b * 3.0)  # another shape: another kernel
    assert f.program.specialized == 3
    # a memo hit still launches through the checking launcher
    with pytest.raises(LaunchError, match=r"parameter 'A'.*not contiguous"):
        f(torch.rand(16, dtype=torch.float64)[::2], 3.0)
    seen = f.program.key_calls
    torch.testing.assert_close(f(a, factor=3.0), a * 3.0)
    assert f.program.key_calls > seen  # keywords take the cache_key route
    torch.testing.assert_close(f(a), a * 2.0)  # factor left to its default
    seen = f.program.key_calls
    torch.testing.assert_close(f(a), a * 2.0)
    assert f.program.key_calls == seen


def test_eager_per_call_memo_follows_the_active_target(isolated_cache):
    import tilelang_core as tl

    f = jit(eager_scale, _program_factory=KeyedFakeEagerProgram)  # target="auto"
    a = torch.rand(16, dtype=torch.float64)
    with tl.Target("cpu:x86-64"):
        torch.testing.assert_close(f(a, 3.0), a * 3.0)
        torch.testing.assert_close(f(a, 3.0), a * 3.0)
    with tl.Target("cpu:x86-64-v3"):
        torch.testing.assert_close(f(a, 3.0), a * 3.0)
    assert f.program.specialized == 2  # the first target's kernel was not reused
    assert {str(k.target) for k, _ in f._kernels.values()} == {"cpu:x86-64", "cpu:x86-64-v3"}


def test_eager_compile_returns_the_kernel_without_running():
    f = make_eager(LlvmTestBackend())
    kernel = f.compile(torch.rand(4, dtype=torch.float64))
    assert isinstance(kernel, JITKernel) and kernel.out_idx == [1]


def test_get_kernel_returns_the_memoized_kernel_in_both_styles():
    backend = LlvmTestBackend()
    f = make_eager(backend)
    a = torch.rand(4, dtype=torch.float64)
    assert f.get_kernel(a) is f.compile(a) and backend.builds == 1
    f(a)
    assert f.program.specialized == 1
    lazy = jit(out_idx=[-1], _backend=backend)(scale_factory)
    assert lazy.get_kernel(4, 1.0) is lazy(4, 1.0)


def test_target_auto_kernels_are_memoized_per_active_target(isolated_cache):
    """With target='auto', `with Target(...)` decides the target: a kernel built inside one block
    is not handed out inside another (found when the Ascend simulator and dav-c220 shared one)."""
    import tilelang_core as tl

    scale = jit(out_idx=[-1])(scale_factory)
    with tl.Target("cpu:x86-64"):
        k1 = scale(16, 3.0)
        assert scale(16, 3.0) is k1
    with tl.Target("cpu:x86-64-v3"):
        k2 = scale(16, 3.0)
    assert k2 is not k1 and "x86-64-v3" in str(k2.target) and "v3" not in str(k1.target)
    with tl.Target("cpu:x86-64"):
        assert scale(16, 3.0) is k1
    a = torch.rand(16, dtype=torch.float64)
    torch.testing.assert_close(k2(a), a * 3.0)
