"""do_bench's CPU path: how many calls it makes and what it returns (no timed asserts)."""

import pytest

from tilelang_core.errors import ConfigError
from tilelang_core.profiler import do_bench, measure


def test_measure_runs_warmup_then_timed_calls_and_keeps_every_sample():
    calls = []
    result = measure(lambda: calls.append(1), warmup_ms=1, rep_ms=2, min_reps=7, max_reps=50)
    assert 7 <= len(result.times_ms) <= 50
    assert len(calls) > len(result.times_ms)  # estimate + warm-up calls come first
    assert result.device == "cpu" and result.min <= result.median <= max(result.times_ms)


@pytest.mark.parametrize("kwargs, message", [
    ({"rep_ms": 0}, "rep_ms > 0"), ({"warmup_ms": -1}, "warmup_ms >= 0"),
    ({"cuda_graph": True}, "needs device='cuda'"), ({"return_mode": "p99"}, "return_mode"),
])
def test_bad_arguments_are_config_errors(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        do_bench(lambda: None, **kwargs)


def test_quantiles():
    from tilelang_core.profiler import BenchResult

    result = BenchResult((5.0, 1.0, 3.0, 2.0, 4.0), "cpu")
    assert (result.median, result.quantile(0.0), result.quantile(1.0), result.quantile(0.5)) == (3.0, 1.0, 5.0, 3.0)
