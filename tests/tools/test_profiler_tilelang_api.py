"""The profiler and tensor supply with TileLang's names and value rules (cpu backend, torch float64
references): TensorSupplyType's draws, get_tensor_supply, get_profiler's forms, assert_allclose's
mismatch ratio, manual_assert_close, assert_consistent, do_bench's TileLang keywords."""

import types

import pytest
import torch

import tools_kernels as K
from tilelang_core.errors import ResultMismatchError
from tilelang_core.jit.params import KernelParam
from tilelang_core.profiler import TensorSupplyType as S
from tilelang_core.profiler import make_inputs
from tilelang_core.utils.tensor import get_tensor_supply


def _one(dtype, supply, n=4096):
    (x,) = make_inputs([KernelParam("X", "tensor", dtype, (n,))], supply)
    return x


def test_auto_draws_uniform_floats_and_small_integers():
    for dtype in ("float16", "bfloat16", "float32"):
        x = _one(dtype, S.Auto).float()
        assert x.min() >= -1 and x.max() <= 1 and len(x.unique()) > 100  # uniform [-1, 1)
    assert set(_one("int32", S.Auto).tolist()) <= {-2, -1, 0, 1, 2}
    assert set(_one("uint8", S.Auto).tolist()) <= {0, 1, 2}
    assert set(_one("float64", S.Auto).tolist()) <= {-2.0, -1.0, 0.0, 1.0, 2.0}
    fp8 = _one("float8_e4m3fn", S.Auto).float()
    assert fp8.min() >= -128 and fp8.max() <= 128 and bool((fp8 == fp8.round()).all())
    assert _one("bool", S.Auto).dtype == torch.bool


def test_integer_draws_integers_in_every_float_type():
    for dtype in ("float16", "float32", "float64"):
        assert set(_one(dtype, S.Integer).tolist()) <= {-2.0, -1.0, 0.0, 1.0, 2.0}


def test_uniform_normal_randn_zero_one():
    u = _one("float32", S.Uniform)
    assert u.min() >= -1 and u.max() < 1
    normal = _one("float32", S.Normal, n=20000)
    assert abs(float(normal.mean()) + 1.0) < 0.1  # TileLang's normal(-1, 1)
    assert abs(float(_one("float32", S.Randn, n=20000).mean())) < 0.1
    assert bool((_one("int8", S.Uniform) == 1).all()) and bool((_one("int8", S.Normal) == 1).all())
    assert bool((_one("float16", S.Zero) == 0).all()) and bool((_one("int32", S.One) == 1).all())


def test_get_tensor_supply_takes_tilelang_style_params():
    supply = get_tensor_supply(S.Integer)
    ours = supply(KernelParam("X", "tensor", "float16", (3, 5)))
    theirs = supply(types.SimpleNamespace(name="Y", dtype=torch.bfloat16, shape=[2, 1]))
    assert ours.shape == (3, 5) and ours.dtype == torch.float16 and ours.device.type == "cpu"
    assert theirs.shape == (2, 1) and theirs.dtype == torch.bfloat16
    assert get_tensor_supply().__closure__ is not None  # default: Integer, like TileLang


def test_get_profiler_forms_and_tilelangs_attributes():
    kernel = K.scale(40)
    for profiler in (kernel.get_profiler(S.Integer), kernel.get_profiler(tensor_supply_type="integer")):
        assert profiler.supply_type is S.Integer
        (a,) = profiler._get_inputs()
        assert set(a.tolist()) <= {-2.0, -1.0, 0.0, 1.0, 2.0}
    assert profiler.func is kernel and profiler.result_idx == [1]
    assert [p.name for p in profiler._get_params()] == ["A"]
    assert [p.name for p in profiler._get_params(with_output=True)] == ["A", "C"]
    assert len(profiler._get_inputs(with_output=True)) == 2
    torch.testing.assert_close(profiler(a), a * 2)
    assert kernel.run_once(lambda x: x + 1).shape == (40,)


def test_assert_allclose_allows_exactly_the_mismatch_ratio():
    kernel = K.scale(300)  # C = 2 A
    a = torch.randn(300)

    def ref_with(wrong):
        def ref(x):
            out = x.double() * 2
            out[:wrong] += 1.0
            return out
        return ref

    profiler = kernel.get_profiler()
    profiler.assert_allclose(ref_with(3), input_tensors=[a], max_mismatched_ratio=0.01)  # 3 <= 3
    with pytest.raises(ResultMismatchError, match="4 of 300 elements"):
        profiler.assert_allclose(ref_with(4), input_tensors=[a], max_mismatched_ratio=0.01)
    # rtol is relative to the reference, as torch.isclose: |got - ref| <= atol + rtol * |ref|
    profiler.assert_allclose(lambda x: x.double() * 2 * 1.009, input_tensors=[a], atol=0, rtol=1e-2)
    with pytest.raises(ResultMismatchError):
        profiler.assert_allclose(lambda x: x.double() * 2 * 1.02, input_tensors=[a], atol=0, rtol=1e-2,
                                 max_mismatched_ratio=0)


def test_a_reference_output_of_none_is_not_compared():
    K.scale(64).get_profiler().assert_allclose(lambda x: [None])


def test_manual_assert_close_and_assert_consistent():
    kernel = K.scale(64)
    seen = []
    kernel.get_profiler().manual_assert_close(lambda x: x * 2, manual_check_prog=lambda o, r: seen.append((o, r)))
    (outs, refs), = seen
    assert isinstance(outs, list) and len(outs) == len(refs) == 1
    torch.testing.assert_close(outs[0], refs[0])
    kernel.get_profiler().assert_consistent(repeat=3)


def test_do_bench_with_tilelangs_keywords():
    profiler = K.scale(256).get_profiler()
    assert profiler.do_bench(n_warmup=1, n_repeat=3, return_mode="max") > 0
    assert isinstance(profiler.do_bench(n_repeat=3, quantiles=[0.5]), float)
    assert len(profiler.do_bench(n_repeat=3, quantiles=[0.2, 0.8])) == 2
    with pytest.warns(RuntimeWarning, match="CPU clock"):
        from tilelang_core.profiler import bench

        bench._noted.discard("cupti-cpu")
        assert profiler.do_bench(n_repeat=2, backend="cupti") > 0
    ms = profiler.do_bench(lambda x: x * 2, n_repeat=2, early_stop_baseline=0.0)
    assert ms > 0  # the first estimate already exceeds the baseline: returned as it is


def test_tuner_results_live_on_the_kernel():
    kernel = K.scale(32)
    assert kernel.get_tuner_result() == {"latency": None, "config": None, "ref_latency": None}
    assert kernel.update_tuner_result(1.5, {"block": 32}, 2.0) is kernel
    assert (kernel.latency, kernel.config, kernel.ref_latency) == (1.5, {"block": 32}, 2.0)
