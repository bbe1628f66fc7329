"""TileLang's tuner API on the cpu backend: ``tilelang.autotuner`` (AutoTuner's builder,
set_autotune_inputs), @autotune above an eager @jit kernel, tuned-parameter rules, results on the
kernel. Numerics against torch float64; no timed asserts."""

import pytest
import torch

import autotuner_compat_kernels as K
import tilelang_core as tl
from tilelang_core.errors import AutotuneError, ConfigError

N = 77  # not a multiple of any block tried


def _ref_add(alpha):
    return lambda a, b: a.double() + alpha * b.double()


def _builder(factory, configs, **profile):
    profile.setdefault("ref_prog", _ref_add(0.5))
    return (tl.autotuner.AutoTuner.from_kernel(kernel=factory, configs=configs)
            .set_compile_args(out_idx=[-1], target="cpu")
            .set_profile_args(**profile))


def test_star_import_gives_tilelangs_names():
    namespace = {}
    exec("from tilelang_core.autotuner import *", namespace)  # noqa: S102
    for name in ("autotune", "AutoTuner", "set_autotune_inputs", "get_autotune_inputs"):
        assert name in namespace
    assert namespace["AutoTuner"] is tl.autotune.__globals__["AutoTuner"]  # one tuner, two paths


def test_builder_searches_a_closure_factory_and_reports_tilelangs_fields():
    configs = [{"block": 16}, {"block": 32}, {"block": 64}]
    result = _builder(K.make_scaled_add(N, 0.5), configs).run(warmup=1, rep=2, timeout=60)
    assert result.config in configs and result.latency > 0
    assert len(result.candidates) == 3 and not result.failed
    assert result.ref_latency is not None and result.ref_latency > 0
    assert result.func is not None and "main" in result.func.script()
    assert result.libcode == result.kernel.get_kernel_source() and result.libcode
    kernel = result.kernel
    assert (kernel.latency, kernel.config, kernel.ref_latency) == (result.latency, result.config,
                                                                    result.ref_latency)
    a, b = torch.randn(N), torch.randn(N)
    torch.testing.assert_close(kernel(a, b).double(), _ref_add(0.5)(a, b), rtol=1e-6, atol=1e-6)


def test_calling_a_builder_runs_it():
    tuner = _builder(K.make_scaled_add(N, 2.0), [{"block": 32}], ref_prog=_ref_add(2.0))
    result = tuner()
    assert result.config == {"block": 32} and result.kernel.out_idx == [3 - 1]


def test_builder_refuses_what_it_cannot_honour():
    tuner = tl.autotuner.AutoTuner.from_kernel(kernel=K.make_scaled_add(N, 1.0), configs=[{"block": 32}])
    with pytest.raises(ConfigError, match="target_host"):
        tuner.set_compile_args(target_host="llvm")
    with pytest.raises(ConfigError, match="execution_backend='ctypes'"):
        tuner.set_compile_args(execution_backend="ctypes")
    tuner.set_compile_args(out_idx=[-1], target="cpu", execution_backend="tvm_ffi")  # TileLang's names
    with pytest.raises(ConfigError, match="manual_check_prog.*give ref_prog"):
        tuner.set_profile_args(manual_check_prog=lambda outs, refs: None)
    with pytest.raises(ConfigError, match="early_stop_factor"):
        tuner.run(early_stop=True, early_stop_factor=0.5)


def test_a_wrong_candidate_is_caught_by_the_reference_in_the_builder():
    wrong = _builder(K.make_scaled_add(N, 0.5), [{"block": 32}], ref_prog=_ref_add(0.25))
    with pytest.raises(AutotuneError, match=r"\[check\] ResultMismatchError"):
        wrong.run(warmup=1, rep=2)


def test_set_autotune_inputs_feeds_the_search_even_a_scalar():
    factory = K.make_scaled_add(N, None)  # C = A + s * B with s a scalar parameter
    seen = []

    def ref(a, b, s):
        seen.append((a, b, s))
        return a.double() + s * b.double()

    tuner = _builder(factory, [{"block": 16}, {"block": 32}], ref_prog=ref)
    with pytest.raises(AutotuneError, match="scalar"):  # random data cannot invent the scalar
        tuner.run(warmup=1, rep=2)
    a, b = torch.randn(N), torch.randn(N)
    with tl.autotuner.set_autotune_inputs(a, b, 3.0):
        assert tl.autotuner.get_autotune_inputs() == [a, b, 3.0]
        result = tuner.run(warmup=1, rep=2)
    assert tl.autotuner.get_autotune_inputs() is None
    assert seen and all(torch.equal(x, a) and torch.equal(y, b) and s == 3.0 for x, y, s in seen)
    torch.testing.assert_close(result.kernel(a, b, 3.0).double(), ref(a, b, 3.0))


def test_manual_check_prog_gets_the_kernels_and_the_references_outputs():
    calls = []

    def check(outs, refs):
        calls.append((len(outs), len(refs)))
        torch.testing.assert_close(outs[0].double(), refs[0], rtol=1e-6, atol=1e-6)

    result = _builder(K.make_scaled_add(N, 0.5), [{"block": 32}], manual_check_prog=check).run(warmup=1, rep=2)
    assert calls == [(1, 1)] and result.config == {"block": 32}
    wrong = _builder(K.make_scaled_add(N, 0.5), [{"block": 32}], ref_prog=_ref_add(0.1),
                     manual_check_prog=check)
    with pytest.raises(AutotuneError, match="check"):
        wrong.run(warmup=1, rep=2)


def test_supply_prog_gets_the_input_parameters():
    got = []

    def supply(params):
        got.append([(p.name, p.shape) for p in params])
        return [torch.ones(N), torch.full((N,), 2.0)]

    _builder(K.make_scaled_add(N, 0.5), [{"block": 32}], supply_prog=supply).run(warmup=1, rep=2)
    assert got and got[0] == [("A", (N,)), ("B", (N,))]  # no output parameter


def test_early_stop_and_cached_inputs_still_pick_a_checked_config():
    result = _builder(K.make_scaled_add(N, 0.5), [{"block": 16}, {"block": 32}, {"block": 64}],
                      cache_input_tensors=True).run(warmup=1, rep=2, early_stop=True, early_stop_factor=1.0)
    assert not result.failed and result.config in ({"block": 16}, {"block": 32}, {"block": 64})


def test_autotune_above_an_eager_jit_tunes_then_runs_on_the_callers_tensors():
    x = torch.randn(37, 5)  # 37 rows: not a multiple of 8 or 16
    y = K.twice_plus_one(x)
    torch.testing.assert_close(y.double(), x.double() * 2 + 1, rtol=1e-6, atol=1e-6)
    result = K.twice_plus_one.tune(x)
    assert result is K.twice_plus_one.tune(torch.randn(37, 5))  # same shapes: no second search
    assert len(result.candidates) == 2 and not result.failed and result.config in K.ROW_CONFIGS
    assert result.parallel == "2 worker processes"  # the eager kernel compiled in workers too
    assert result.kernel.config == result.config


def test_each_eager_shape_gets_its_own_search():
    tuner = tl.autotune(configs=K.ROW_CONFIGS, warmup=1, rep=2, compile_workers=0, progress=False,
                        ref_prog=lambda x: x.double() * 2 + 1)(K.twice_plus_one.jit)
    for shape in ((1, 3), (17, 1)):  # size-1 dims, rows not a multiple of the blocks
        x = torch.randn(*shape)
        torch.testing.assert_close(tuner(x).double(), x.double() * 2 + 1, rtol=1e-6, atol=1e-6)
    first, second = tuner.tune(torch.randn(1, 3)), tuner.tune(torch.randn(17, 1))
    assert first is not second and len(first.candidates) == len(second.candidates) == 2
    assert tuple(first.kernel.params[0].shape) == (1, 3)


def test_an_eager_call_with_a_tuned_parameter_skips_the_search():
    x = torch.randn(9, 4)
    result = K.twice_plus_one.tune(x, blk_m=4)       # by keyword, as example_topk does
    assert result.candidates == [] and result.kernel is not None
    assert K.twice_plus_one.tune(x, 4).candidates == []   # by position
    torch.testing.assert_close(K.twice_plus_one(x, blk_m=4).double(), x.double() * 2 + 1)
    assert K.twice_plus_one.compile(x, blk_m=4) is result.kernel


def test_a_lazy_tuned_parameter_given_by_position_skips_the_search():
    @tl.jit(out_idx=[-1], target="cpu", mode="lazy")
    def add(n, block=32):
        return K.make_scaled_add(n, 1.0)(block)

    tuner = tl.autotune(configs=[{"block": 16}, {"block": 32}], progress=False)(add)
    assert tuner.tune(N, 16).candidates == []
    assert len(tuner.tune(N).candidates) == 2


def test_do_not_specialize_reuses_the_config_but_compiles_for_each_value():
    @tl.jit(out_idx=[-1], target="cpu", mode="lazy")
    def add(n, alpha, block=32):
        return K.make_scaled_add(n, alpha)(block)

    tuner = tl.autotune(configs=[{"block": 16}, {"block": 32}], do_not_specialize=["alpha"],
                        ref_prog=None, warmup=1, rep=2, progress=False, compile_workers=0)(add)
    first = tuner.tune(N, 0.5)
    second = tuner.tune(N, 3.0)
    assert second.config == first.config and second.candidates is first.candidates  # one search
    a, b = torch.randn(N), torch.randn(N)
    torch.testing.assert_close(second.kernel(a, b).double(), _ref_add(3.0)(a, b))
    torch.testing.assert_close(first.kernel(a, b).double(), _ref_add(0.5)(a, b))


def test_autotune_refuses_a_plain_function():
    with pytest.raises(ConfigError, match="on top of a @jit function"):
        tl.autotune(configs=[{"block": 32}])(K.make_scaled_add(N, 1.0))


def test_jit_takes_tilelangs_execution_backend_and_verbose():
    @tl.jit(out_idx=[-1], target="cpu", mode="lazy", execution_backend="tvm_ffi", verbose=True)
    def add(n):
        return K.make_scaled_add(n, 1.0)(32)

    a, b = torch.randn(N), torch.randn(N)
    torch.testing.assert_close(add(N)(a, b).double(), _ref_add(1.0)(a, b))
    with pytest.raises(ConfigError, match="execution_backend='ctypes'"):
        tl.jit(execution_backend="ctypes")
    with pytest.raises(ConfigError, match="target_host"):
        tl.jit(target_host="llvm")


def test_tilelang_top_level_tensor_supply_type_is_the_profilers():
    from tilelang_core.profiler import TensorSupplyType
    from tilelang_core.utils.tensor import TensorSupplyType as FromUtils

    assert tl.TensorSupplyType is TensorSupplyType is FromUtils
