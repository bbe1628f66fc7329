"""do_bench with TileLang's signature: counts, return modes, quantiles, backends, devices, units.

The clock is replaced by a fake one (each call of the timed function takes a chosen number of
milliseconds), so the statistics are exact and nothing depends on this machine's speed. The CUDA
paths run against a fake ``torch`` whose events read the same fake clock."""

import types
import warnings

import pytest

from tilelang_core.errors import ConfigError
from tilelang_core.profiler import bench, do_bench


class FakeClock:
    """``perf_counter`` in seconds; ``fn`` advances it by the next duration (ms), cycling."""

    def __init__(self, durations_ms):
        self.now, self.durations, self.calls = 0.0, list(durations_ms), 0

    def perf_counter(self):
        return self.now

    def fn(self):
        self.now += self.durations[self.calls % len(self.durations)] / 1e3
        self.calls += 1


@pytest.fixture
def clock(monkeypatch):
    def make(durations):
        c = FakeClock(durations)
        monkeypatch.setattr(bench.time, "perf_counter", c.perf_counter)
        return c
    return make


def test_counts_fix_the_calls_and_the_default_statistic_is_the_mean(clock):
    c = clock([1.0, 1.0, 1.0, 9.0])  # estimate call, then samples 1, 1, 9, 1, 1, 1, 9, ...
    ms = do_bench(c.fn, 25, 100, 2, 4, device="cpu")  # TileLang's positional order, counts given
    assert c.calls == 1 + 2 + 4
    # samples are calls 4..7 (1-based): 9, 1, 1, 1 -> mean 3, median 1
    assert ms == pytest.approx(3.0)
    c = clock([1.0, 1.0, 1.0, 9.0])
    assert do_bench(c.fn, _n_warmup=2, _n_repeat=4, return_mode="median", device="cpu") == pytest.approx(1.0)
    c = clock([1.0, 1.0, 1.0, 9.0])
    assert do_bench(c.fn, _n_warmup=2, _n_repeat=4, return_mode="max", device="cpu") == pytest.approx(9.0)


def test_time_budgets_are_milliseconds(clock):
    c = clock([2.0])  # 2 ms a call: 10 ms of warm-up is 5 calls, 40 ms of timing 20 calls
    assert do_bench(c.fn, warmup=10, rep=40, device="cpu") == pytest.approx(2.0)
    assert c.calls == 1 + 5 + 20


def test_quantiles_interpolate_and_one_quantile_is_a_float(clock):
    c = clock([5.0, 1.0, 2.0, 3.0, 4.0, 5.0])
    q = do_bench(c.fn, _n_warmup=1, _n_repeat=4, quantiles=[0.5, 0.0, 1.0], device="cpu")
    # samples 2, 3, 4, 5: median 3.5 (interpolated, as torch.quantile), min 2, max 5
    assert q == pytest.approx([3.5, 2.0, 5.0])
    c = clock([1.0])
    assert isinstance(do_bench(c.fn, _n_repeat=3, quantiles=[0.5], device="cpu"), float)


def test_early_stop_returns_the_estimate_without_measuring(clock):
    c = clock([7.0])
    assert do_bench(c.fn, early_stop_baseline=5.0, device="cpu") == pytest.approx(7.0)
    assert c.calls == 1


def test_cupti_on_the_cpu_notes_once_and_keeps_milliseconds(clock, monkeypatch):
    monkeypatch.setattr(bench, "_noted", set())
    c = clock([3.0])
    with pytest.warns(RuntimeWarning, match="CPU clock"):
        assert do_bench(c.fn, _n_repeat=3, backend="cupti", device="cpu") == pytest.approx(3.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        do_bench(c.fn, _n_repeat=3, backend="cupti", device="cpu")  # said once only


@pytest.mark.parametrize("kwargs, message", [
    ({"backend": "nsys"}, "backend='nsys'"), ({"device": "mps"}, "device='mps'"),
    ({"backend": "cudagraph", "device": "cpu"}, "needs device='cuda'"),
    ({"quantiles": [1.5]}, "outside"),
])
def test_what_cannot_be_honoured_is_refused(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        do_bench(lambda: None, **{"device": "cpu", **kwargs})


def test_device_arguments():
    assert bench.resolve_device("cpu") == ("cpu", None)
    assert bench.resolve_device("cuda") == ("cuda", None)
    assert bench.resolve_device("cuda:1") == ("cuda", 1)
    assert bench.resolve_device(2) == ("cuda", 2)
    import torch

    assert bench.resolve_device(torch.device("cuda", 3)) == ("cuda", 3)
    # TileLang's default: the GPU when torch sees one, else (here) the CPU clock
    assert bench.resolve_device(None) == (("cuda", None) if torch.cuda.is_available() else ("cpu", None))


# -- the CUDA paths, on a fake torch -------------------------------------------------------------
def _fake_torch(c: FakeClock, profiler_events=None):
    class Event:
        def __init__(self, enable_timing=False):
            self.t = None

        def record(self):
            self.t = c.now

        def elapsed_time(self, other):  # torch: milliseconds
            return (other.t - self.t) * 1e3

    class Cache:
        def zero_(self):
            pass

    class Profile:
        def __init__(self, activities):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def events(self):
            if profiler_events is None:
                raise RuntimeError("CUPTI_ERROR_NOT_INITIALIZED")
            return profiler_events

    class RecordFunction:
        def __init__(self, name):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    profiler = types.SimpleNamespace(ProfilerActivity=types.SimpleNamespace(CPU=0, CUDA=1),
                                     profile=Profile, record_function=RecordFunction)
    cuda = types.SimpleNamespace(is_available=lambda: True, synchronize=lambda *a: None, Event=Event)
    return types.SimpleNamespace(cuda=cuda, int32="int32", empty=lambda *a, **k: Cache(),
                                 profiler=profiler)


def _kernel_event(name, us, annotation=False):
    return types.SimpleNamespace(device_type=types.SimpleNamespace(name="CUDA"), name=name,
                                 is_user_annotation=annotation, self_device_time_total=us,
                                 device_time_total=us)


def test_cuda_events_give_milliseconds_per_call(monkeypatch):
    c = FakeClock([0.5])
    monkeypatch.setattr(bench.time, "perf_counter", c.perf_counter)
    result = bench._measure_cuda(c.fn, _fake_torch(c), 0, 10, True, "event", 5, 10000, 0, 0, 256, None)
    assert result.method == "cuda-event" and result.mean == pytest.approx(0.5)
    assert len(result.times_ms) == 20  # 10 ms of timing at 0.5 ms a call


def test_cupti_sums_kernel_time_without_the_flushes(monkeypatch):
    import sys

    c = FakeClock([0.5])
    events = [_kernel_event("gemm", 300.0), _kernel_event("gemm", 300.0), _kernel_event("fill", 50.0),
              _kernel_event(bench._FLUSH_LABEL, 50.0, annotation=True)]
    fake = _fake_torch(c, events)
    monkeypatch.setitem(sys.modules, "torch.profiler", fake.profiler)
    result = bench._measure_cuda(c.fn, fake, 0, 0, True, "cupti", 1, 10000, 0, 2, 256, None)
    # (300 + 300 + 50 - 50) us over 2 calls = 0.3 ms a call
    assert result.method == "cupti" and result.mean == pytest.approx(0.3)


def test_cupti_unavailable_falls_back_to_events_with_a_note(monkeypatch):
    import sys

    monkeypatch.setattr(bench, "_noted", set())
    c = FakeClock([0.25])
    fake = _fake_torch(c, None)  # the profiler raises, as without CUPTI
    monkeypatch.setitem(sys.modules, "torch.profiler", fake.profiler)
    with pytest.warns(RuntimeWarning, match="timing with CUDA events instead"):
        result = bench._measure_cuda(c.fn, fake, 0, 0, True, "cupti", 1, 10000, 0, 4, 256, None)
    assert result.method == "cuda-event" and result.mean == pytest.approx(0.25)
