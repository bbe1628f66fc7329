"""tools/tilelang_suite.py: the import rewrite a TileLang user makes, and the comparison table."""

import importlib.util
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parents[2] / "tools"
spec = importlib.util.spec_from_file_location("tilelang_suite", TOOLS / "tilelang_suite.py")
suite = importlib.util.module_from_spec(spec)
spec.loader.exec_module(suite)


@pytest.mark.parametrize("before, after", [
    ("import tilelang", "import tilelang_core as tilelang"),
    ("import tilelang as tl", "import tilelang_core as tl"),
    ("import tilelang.language as T", "import tilelang_core.language as T"),
    # binds `tilelang` as a side effect, which the test files rely on
    ("import tilelang.testing", "import tilelang_core.testing; import tilelang_core as tilelang"),
    ("from tilelang import tvm as tvm", "from tilelang_core import tvm as tvm"),
    ("    from tilelang.utils.tensor import x  # why", "    from tilelang_core.utils.tensor import x  # why"),
    ("from tilelang_utils import helper", "from tilelang_utils import helper"),
    ("import tilelangx", "import tilelangx"),
    ("x = 'import tilelang'", "x = 'import tilelang'"),
])
def test_rewrite_imports(before, after):
    assert suite.rewrite_imports(before) == after


def test_rewrite_keeps_line_numbers():
    text = "import tilelang\nimport tilelang.testing\n\ndef f():\n    from tilelang.language import copy\n"
    assert suite.rewrite_imports(text).count("\n") == text.count("\n")


def test_table_counts_passes_where_the_reference_passes():
    ref = {"results": {"examples/a/test_a.py::t1": {"outcome": "passed", "message": ""},
                       "examples/a/test_a.py::t2": {"outcome": "passed", "message": ""},
                       "examples/b/test_b.py::t3": {"outcome": "skipped", "message": ""}}}
    ours = {"results": {"examples/a/test_a.py::t1": {"outcome": "passed", "message": ""},
                        "examples/a/test_a.py::t2": {"outcome": "failed", "message": "boom | bad"},
                        "examples/b/test_b.py::t3": {"outcome": "passed", "message": ""}}}
    text = suite.table(ref, ours, failures=True)
    assert "| examples/a | 2 | 2 | 1 | 1 |" in text
    assert "| examples/b | 1 | 0 | 1 | 0 |" in text
    assert "| **all** | 3 | 2 | 2 | 1 |" in text
    assert "examples/a/test_a.py::t2 | failed | boom \\| bad |" in text


def test_perf_table_shows_the_speed_lines_not_the_logging():
    out = "INFO tilelang.jit.kernel: TileLang begins to compile kernel `k`\nTile-lang: 0.03 ms\nTile-lang: 261.6 TFlops\n"
    ref = {"results": {"examples/a/test_a.py::t": {"outcome": "passed", "message": "", "output": out}}}
    ours = {"results": {"examples/a/test_a.py::t": {"outcome": "passed", "message": "", "output": "Tile-lang: 0.02 ms"}}}
    text = suite.table(ref, ours, failures=False, perf=True)
    assert "| test_a.py::t | Tile-lang: 0.03 ms / Tile-lang: 261.6 TFlops | Tile-lang: 0.02 ms | 1.50 |" in text


@pytest.mark.parametrize("theirs, ours, ratios", [
    # times: TileLang's over ours; rates: ours over TileLang's; the baselines' lines left out
    ("Ref: 0.03 TFlops\nTilelang: 0.01 ms\nTilelang: 1.50 TFlops", "Ref: 9 TFlops\nTilelang: 0.02 ms\nTilelang: 0.75 TFlops",
     [0.5, 0.5]),
    ("latency: 0.4 ms\ntflops: 50", "latency: 0.2 ms\ntflops: 100", [2.0, 2.0]),
    ("logits_tflops: 80, logits_ms: 0.02", "logits_tflops: 40, logits_ms: 0.04", [0.5, 0.5]),
    ("Sparse TFLOPS: 20, Latency: 1e-04 s", "Sparse TFLOPS: 30, Latency: 5e-05 s", [1.5, 2.0]),
    ("torch: 5.2 TFlops\ntilelang: 0.24 ms", "torch: 6.0 TFlops\ntilelang: 0.30 ms", [0.8]),
    # TileLang's log lines are not speed lines; bare "number unit" lines are
    ("2026-12-07 23:44:45  [TileLang:tilelang.cache.kernel_cache:WARNING] (kernel_cache.py:379): Found\n"
     "latency: 0.05 ms", "latency: 0.10 ms", [0.5]),
    ("All checks passed!\n0.08 ms\n53.11 TFlops\n", "0.06 ms\n66.61 TFlops", [0.08 / 0.06, 66.61 / 53.11]),
    # the two printed different things: nothing compared from there on
    ("tilelang: 0.2 ms\nbest: 0.1 ms", "other: 0.1 ms", []),
])
def test_speed_ratios(theirs, ours, ratios):
    assert suite.speed_ratios(theirs, ours) == pytest.approx(ratios)


def test_shared_timer_reports_the_median_under_the_lock(tmp_path, monkeypatch):
    """The plugin's timer (TLSUITE_TIMING): what both implementations' do_bench become."""
    import fcntl
    import types

    import torch

    plugin_spec = importlib.util.spec_from_file_location("tlsuite_plugin_t", TOOLS / "tilelang_suite_plugin.py")
    plugin = importlib.util.module_from_spec(plugin_spec)
    plugin_spec.loader.exec_module(plugin)
    lock = tmp_path / "gpu.lock"
    monkeypatch.setenv("TLSUITE_TIMING", str(lock))
    clock = {"t": 0.0, "calls": 0}
    durations = iter([0.5] * 6 + [0.1] * 1000)  # first call + the 5 of the estimate, then warmup/timed

    class Event:
        def __init__(self, **_):
            self.t = None

        def record(self):
            self.t = clock["t"]

        def elapsed_time(self, other):
            return other.t - self.t

    def fn():
        clock["calls"] += 1
        # another process must not hold the lock while we time
        with open(lock) as other:
            with pytest.raises(BlockingIOError):
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        clock["t"] += next(durations, 0.1) if clock["calls"] < 20 else (5.0 if clock["calls"] % 7 == 0 else 0.1)

    fake_cuda = types.SimpleNamespace(Event=Event, synchronize=lambda: None)
    monkeypatch.setattr(torch, "cuda", fake_cuda)
    monkeypatch.setattr(torch, "empty", lambda *a, **k: torch.zeros(1))
    got = plugin.shared_do_bench(fn, warmup=1, rep=10, _n_warmup=2, _n_repeat=50)
    assert got == pytest.approx(0.1)  # the median; the mean would have the 5 ms outliers
    assert plugin.shared_do_bench(fn, _n_warmup=1, _n_repeat=40, quantiles=[0.5, 0.99]) == pytest.approx([0.1, 5.0])
