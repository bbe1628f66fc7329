"""@autotune on the cpu backend: search, failures, correctness gate, disk cache, timeouts.

No timed asserts: the winner is checked against the candidates' own measurements."""

import pytest

import tilelang_core as tl
import tools_kernels as K
from tilelang_core.autotune import expand_configs
from tilelang_core.errors import AutotuneError, ConfigError

N = K.SIZE


def _flaky(modes, **options):
    options.setdefault("warmup", 1)
    options.setdefault("rep", 5)
    return tl.autotune(configs=[{"mode": m} for m in modes], ref_prog=K.ref_gemm, **options)(K.flaky_gemm)


def test_gemm_search_over_16_configs_compiles_in_parallel_and_finds_the_best(capsys):
    result = K.tuned_gemm(compile_workers=2).tune(N, N, N)
    assert len(result.candidates) == 16 and not result.failed
    assert result.parallel == "2 worker processes"
    best = min(result.candidates, key=lambda c: c.latency)
    assert result.config == best.config and result.latency == best.latency
    # workers compiled into the shared disk cache; the parent only loaded the winner from it
    assert result.kernel.from_cache
    result.kernel.get_profiler().assert_allclose(K.ref_gemm)
    err = capsys.readouterr().err
    assert "autotune gemm: compile" in err and "16/16" in err and "best " in err


def test_calling_the_tuned_function_returns_the_best_kernel():
    tuner = K.tuned_gemm(compile_workers=2, progress=False)
    kernel = tuner(N, N, N)
    assert kernel is tuner.tune(N, N, N).kernel  # tuned once per call arguments
    kernel.get_profiler().assert_allclose(K.ref_gemm)


def test_failing_configs_are_reported_and_skipped(capsys):
    result = _flaky(["raise", "good"], compile_workers=2).tune(N, N, N)
    assert result.config == {"mode": "good"}
    (failed,) = result.failed
    assert failed.config == {"mode": "raise"} and failed.stage == "compile"
    assert "ValueError" in failed.error and "not supported" in failed.error
    assert "Traceback" in failed.detail
    assert "skipped {mode=raise}: [compile] ValueError" in capsys.readouterr().err


def test_a_wrong_result_never_wins():
    result = _flaky(["good", "wrong"], compile_workers=2, cache_results=False).tune(N, N, N)
    assert result.config == {"mode": "good"}
    wrong = next(c for c in result.candidates if c.config == {"mode": "wrong"})
    assert wrong.stage == "check" and "ResultMismatchError" in wrong.error
    # the gate is what keeps it out: unchecked, the zeroing kernel is timed and eligible like any
    # other (which one then wins is a matter of timing, so not asserted)
    unchecked = _flaky(["good", "wrong"], compile_workers=2, skip_check=True,
                       cache_results=False).tune(N, N, N)
    wrong = next(c for c in unchecked.candidates if c.config == {"mode": "wrong"})
    assert not unchecked.failed and wrong.error is None and wrong.latency is not None


def test_every_config_failing_is_an_error_listing_them():
    with pytest.raises(AutotuneError, match=r"none of the 2 configs[\s\S]*mode=raise[\s\S]*mode=wrong") as info:
        _flaky(["raise", "wrong"], compile_workers=2, progress=False).tune(N, N, N)
    assert [c.stage for c in info.value.candidates] == ["compile", "check"]


def test_tuning_results_are_cached_on_disk(isolated_cache):
    first = K.tuned_gemm(compile_workers=2, progress=False).tune(N, N, N)
    assert not first.from_cache
    files = list((isolated_cache / "autotune").rglob("*.json"))
    assert len(files) == 1
    second = K.tuned_gemm(compile_workers=2, progress=False).tune(N, N, N)  # a new tuner object
    assert second.from_cache and second.config == first.config and second.latency == first.latency
    assert [c.config for c in second.candidates] == [c.config for c in first.candidates]
    other_shape = K.tuned_gemm(compile_workers=2, progress=False,
                               cache_results=True).tune(N, N, 2 * N)  # another problem: a search
    assert not other_shape.from_cache


def test_a_hanging_candidate_times_out():
    result = _flaky(["hang", "good"], compile_workers=2, timeout=5).tune(N, N, N)
    assert result.config == {"mode": "good"}
    hung = result.candidates[0]
    assert hung.stage == "timeout" and "timed out after 5 s" in hung.error


def test_in_process_compile_is_the_serial_path():
    result = _flaky(["raise", "good"], compile_workers=0, progress=False).tune(N, N, N)
    assert result.parallel == "in-process" and result.config == {"mode": "good"}


def test_passing_a_tuned_parameter_skips_the_search():
    result = K.tuned_gemm(progress=False).tune(N, N, N, block_M=32, block_N=32)
    assert result.candidates == [] and result.kernel.name == "main"


def test_config_space_forms():
    assert expand_configs({"a": [1, 2], "b": [3, 4]}) == [
        {"a": 1, "b": 3}, {"a": 1, "b": 4}, {"a": 2, "b": 3}, {"a": 2, "b": 4}]
    assert expand_configs([{"a": 1}]) == [{"a": 1}]
    assert expand_configs(lambda M, N: [{"a": M + N}], args=(1, 2, 3)) == [{"a": 3}]
    assert expand_configs(lambda: {"a": [5]}, args=(1,)) == [{"a": 5}]
    assert len(expand_configs(K.SPACE)) == 16
    with pytest.raises(ConfigError, match="empty"):
        expand_configs([])
    with pytest.raises(ConfigError, match="not a dict"):
        expand_configs([1, 2])


def test_a_config_key_that_is_not_a_parameter_is_refused_before_compiling():
    tuner = tl.autotune(configs={"blockM": [32]})(K.gemm)
    with pytest.raises(ConfigError, match=r"\['blockM'\] are not parameters"):
        tuner.tune(N, N, N)


def test_autotune_must_sit_on_a_jit_function():
    with pytest.raises(ConfigError, match="on top of a @jit function"):
        tl.autotune(configs=[{}])(lambda: None)


def test_worker_count_setting_and_prewarm():
    from tilelang_core import config
    from tilelang_core.autotune import local

    assert config.autotune_workers({"TILELANG_AUTOTUNE_WORKERS": "3"}) == 3
    assert config.autotune_workers({"TILELANG_AUTOTUNE_WORKERS": "0"}) == 0
    with pytest.raises(ConfigError, match="TILELANG_AUTOTUNE_WORKERS"):
        config.autotune_workers({"TILELANG_AUTOTUNE_WORKERS": "-1"})
    local.prewarm(2)  # the pool the other tests use: starting it early is a no-op here
    assert 2 in local._pools


def test_a_check_or_bench_past_the_timeout_is_reported_and_abandoned():
    import time

    def slow_reference(a, b):
        time.sleep(20)  # plays a kernel that never finishes; the watchdog leaves it behind
        return K.ref_gemm(a, b)

    tuner = tl.autotune(configs=[{"mode": "good"}], ref_prog=slow_reference, timeout=1,
                        compile_workers=0, progress=False)(K.flaky_gemm)
    with pytest.raises(AutotuneError) as info:
        tuner.tune(N, N, N)
    (c,) = info.value.candidates
    assert c.stage == "timeout" and "timed out after 1 s (check and bench)" in c.error


def test_timing_overlapped_with_compiles_still_checks_and_skips():
    # the GPU schedule (measure each candidate as soon as it compiles), forced on the cpu backend
    result = _flaky(["raise", "wrong", "good"], compile_workers=2, overlap_timing=True,
                    cache_results=False).tune(N, N, N)
    assert result.parallel == "2 worker processes, timing overlapped"
    assert result.config == {"mode": "good"}
    assert [c.stage for c in result.candidates] == ["compile", "check", "bench"]


def test_a_warm_worker_compiles_into_the_current_cache_folder(monkeypatch, tmp_path):
    # a worker kept from an earlier search must not answer from its memory: the parent loads the
    # kernels from the *current* cache folder, and would otherwise compile them all again itself
    from tilelang_core.jit import clear_memory_cache

    for name in ("first", "second"):
        monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path / name))
        clear_memory_cache()
        result = _flaky(["good"], compile_workers=2, cache_results=False, progress=False).tune(N, N, N)
        assert result.kernel.from_cache, name
