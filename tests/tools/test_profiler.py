"""kernel.get_profiler(): fresh inputs from the kernel's params, assert_allclose, do_bench, run_once."""

import pytest
import torch

import tools_kernels as K
from tilelang_core.errors import ResultMismatchError
from tilelang_core.profiler import Profiler, TensorSupplyType


def test_get_profiler_uses_the_kernels_device_and_params():
    kernel = K.scale(256)
    profiler = kernel.get_profiler(tensor_supply_type="randn")
    assert isinstance(profiler, Profiler) and kernel.device_type == "cpu" == profiler.device
    (a,) = profiler.make_inputs()
    assert a.dtype == torch.float32 and tuple(a.shape) == (256,) and a.device.type == "cpu"


def test_inputs_are_fresh_on_every_draw():
    profiler = K.scale(256).get_profiler()
    (a,), (b,) = profiler.make_inputs(), profiler.make_inputs()
    assert not torch.equal(a, b)


def test_integer_inputs_get_small_ranges():
    from tilelang_core.jit.params import KernelParam
    from tilelang_core.profiler import make_inputs

    (x,) = make_inputs([KernelParam("X", "tensor", "int32", (1000,))], TensorSupplyType.Auto)
    assert x.dtype == torch.int32 and int(x.min()) >= -2 and int(x.max()) <= 2


def test_assert_allclose_accepts_a_correct_kernel():
    K.scale(256).get_profiler().assert_allclose(lambda a: a * 2, atol=1e-5, rtol=1e-5)


def test_assert_allclose_catches_a_wrong_kernel():
    wrong = K.scale(256, factor=3.0)  # computes 3 * A where 2 * A is expected
    with pytest.raises(ResultMismatchError, match=r"output 'C'.*differ from the reference"):
        wrong.get_profiler().assert_allclose(lambda a: a * 2)
    with pytest.raises(AssertionError):  # TileLang's tests expect an AssertionError
        wrong.get_profiler().assert_allclose(lambda a: a * 2)


def test_assert_allclose_checks_gemm_against_torch():
    kernel = K.gemm(K.SIZE, K.SIZE, K.SIZE, block_M=32, block_N=32, block_K=32)
    kernel.get_profiler().assert_allclose(K.ref_gemm, atol=1e-2, rtol=1e-2)
    with pytest.raises(ResultMismatchError):
        kernel.get_profiler().assert_allclose(lambda a, b: K.ref_gemm(a, b).T)


def test_do_bench_times_the_kernel_and_a_reference_on_the_cpu_path():
    profiler = K.scale(4096).get_profiler()
    ms = profiler.do_bench(warmup=1, rep=5)
    assert isinstance(ms, float) and ms > 0
    seen = []
    ref_ms = profiler.do_bench(lambda a: seen.append(a.shape) or a * 2, n_warmup=1, n_repeat=3)
    assert ref_ms > 0 and seen and all(s == (4096,) for s in seen)
    q = profiler.do_bench(warmup=0, rep=1, quantiles=[0.5, 0.9])
    assert len(q) == 2 and q[0] <= q[1]


def test_run_once_returns_the_kernels_output_on_the_profilers_inputs():
    profiler = K.scale(128).get_profiler()
    out = profiler.run_once()
    (a,) = profiler._get_inputs()
    torch.testing.assert_close(out, a * 2)


def test_symbolic_shapes_need_values():
    from tilelang_core.errors import ConfigError
    from tilelang_core.jit.params import KernelParam
    from tilelang_core.profiler import make_inputs

    p = KernelParam("X", "tensor", "float32", ("n", 4))
    with pytest.raises(ConfigError, match="dynamic_shapes"):
        make_inputs([p])
    (x,) = make_inputs([p], dynamic_shapes={"n": 3})
    assert tuple(x.shape) == (3, 4)
