"""The pytest plugin (``-p tlsuite_plugin``) that tools/tilelang_suite.py runs TileLang's suite with.

- A per-test time limit (TLSUITE_TIMEOUT seconds, SIGALRM): a test past it fails with a
  ``SuiteTimeout`` instead of stalling the directory.
- A watchdog for what SIGALRM cannot stop (a kernel that never finishes keeps the process in a
  CUDA call): past the limit and a grace period the test is logged as hung and its process exits;
  pytest-xdist reports the test as crashed and starts a new worker, so the other tests still run.
- TLSUITE_LOG=path: one JSON line per finished test (id, outcome, seconds, the first error lines),
  appended as each ends, so a run stopped from outside still tells what ran and how.
- TLSUITE_FAKE_CUDA=1 (triage without a GPU only): tensors asked for on ``cuda`` are made on the
  CPU, and the few ``torch.cuda`` calls the examples make answer as a Hopper device would.
- TLSUITE_ALSO_COMPILE=<target> (with TILELANG_TARGET=cpu): every kernel the tests compile is
  compiled for that target too (``cuda:sm_90a``), and its error fails the test. The tests run on
  the cpu backend, so kernels after the first one in a test are reached, which a cuda target on
  CPU tensors stops at the first launch.
- TLSUITE_TIMING=<lock file> (speed comparisons, ``tilelang_suite.py run --timing``): the
  implementation's ``do_bench`` (module function and ``Profiler.do_bench``) is replaced by one
  timer that both implementations then share, so the speed lines the examples print are measured
  the same way: CUDA events around each call, the L2 flushed before each, the **median** reported
  where the example asks for the default mean (quantiles and min/max as asked). The timed part
  holds an exclusive lock on the file, so tests of both implementations running at once (compiling
  on the CPU) never time on the GPU at the same time.
"""

import json
import os
import signal
import sys
import threading
import time
import types

import pytest

TIMEOUT = int(os.environ.get("TLSUITE_TIMEOUT", "300"))
# seconds past TIMEOUT before a test that SIGALRM could not stop counts as hung
HANG_GRACE = int(os.environ.get("TLSUITE_HANG_GRACE", "20"))
LOG = os.environ.get("TLSUITE_LOG")


def _log(record: dict) -> None:
    if LOG:
        with open(LOG, "a") as f:  # (one short line per write: concurrent appends stay whole)
            f.write(json.dumps(record) + "\n")


def _hung(nodeid: str) -> None:
    print(f"tlsuite: {nodeid} still running {TIMEOUT + HANG_GRACE} s after it started; exiting",
          file=sys.stderr, flush=True)
    _log({"id": nodeid, "when": "call", "outcome": "hung", "seconds": TIMEOUT + HANG_GRACE, "message": ""})
    os._exit(70)


def _first_errors(report, lines: int = 3) -> str:
    text = report.longreprtext or ""
    errors = [line for line in text.splitlines() if line.startswith("E ")]
    return "\n".join(errors[:lines] or text.splitlines()[-1:])[:600]


def pytest_runtest_logreport(report):
    # The controller logs (under pytest-xdist the workers' reports, and the crash report of a
    # worker that died, all reach it); a worker logging too would write each line twice.
    if "PYTEST_XDIST_WORKER" in os.environ:
        return
    if report.when == "call" or report.outcome != "passed":
        _log({"id": report.nodeid, "when": report.when, "outcome": report.outcome,
              "seconds": round(report.duration, 1), "message": _first_errors(report) if report.failed else ""})


class SuiteTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise SuiteTimeout(f"the test ran past {TIMEOUT} s (tools/tilelang_suite.py --timeout)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(TIMEOUT)
    watchdog = threading.Timer(TIMEOUT + HANG_GRACE, _hung, args=(item.nodeid,))
    watchdog.daemon = True
    watchdog.start()
    # Entered per test: a function mode entered at import time is gone by the time tests run.
    mode = _FAKE_CUDA_MODE() if _FAKE_CUDA_MODE is not None else None
    if mode is not None:
        mode.__enter__()
    try:
        yield
    finally:
        if mode is not None:
            mode.__exit__(None, None, None)
        watchdog.cancel()
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _install_fake_cuda():
    # The references' torch.compile would build for the fake device (inductor asks it for its
    # arch): they run eagerly here.
    os.environ.setdefault("TORCHDYNAMO_DISABLE", "1")
    import torch
    from torch.overrides import TorchFunctionMode

    def cpu(dev):
        text = str(dev)
        return "cpu" if text.startswith("cuda") else dev

    class CpuForCuda(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            if "device" in kwargs and kwargs["device"] is not None:
                kwargs["device"] = cpu(kwargs["device"])
            if func is torch.Tensor.cuda:
                return args[0]
            if func is torch.Tensor.to:
                args = tuple(cpu(a) if isinstance(a, (str, torch.device)) else a for a in args)
            return func(*args, **kwargs)

    class Event:
        def __init__(self, *a, **k):
            self.t = None

        def record(self, *a, **k):
            self.t = time.perf_counter()

        def synchronize(self):
            pass

        def elapsed_time(self, other):
            return (other.t - self.t) * 1e3

    cuda = torch.cuda
    cuda.is_available = lambda: True
    cuda.synchronize = lambda *a, **k: None
    cuda.get_device_capability = lambda *a, **k: (9, 0)
    cuda.get_device_name = lambda *a, **k: "fake cuda (tilelang_suite --fake-cuda)"
    cuda.current_device = lambda: 0
    cuda.get_rng_state = lambda *a, **k: torch.get_rng_state()  # (torch.compile saves it)
    cuda.set_rng_state = lambda *a, **k: None
    cuda.get_device_properties = lambda *a, **k: types.SimpleNamespace(
        name="fake cuda", major=9, minor=0, multi_processor_count=132, total_memory=80 << 30,
        max_threads_per_multi_processor=2048, shared_memory_per_block_optin=227 << 10,
        shared_memory_per_multiprocessor=228 << 10, shared_memory_per_block=48 << 10, regs_per_multiprocessor=65536,
        L2_cache_size=50 << 20, warp_size=32)
    cuda.device_count = lambda: 1
    cuda.manual_seed = lambda *a, **k: None
    cuda.manual_seed_all = lambda *a, **k: None
    cuda.empty_cache = lambda: None
    cuda.Event = Event
    torch.Tensor.cuda = lambda self, *a, **k: self
    return CpuForCuda


def _install_also_compile(target: str):
    from tilelang_core.jit import compiler, decorator

    plain = compiler.compile

    def compile_twice(func, *args, **kwargs):
        kernel = plain(func, *args, **kwargs)
        if len(args) > 1:  # compile(func, out_idx, target, ...)
            args = (args[0], target) + args[2:]
        else:
            kwargs["target"] = target
        kwargs.pop("_backend", None)
        plain(func, *args, **kwargs)
        return kernel

    import tilelang_core
    import tilelang_core.jit

    compiler.compile = decorator._compile = tilelang_core.compile = tilelang_core.jit.compile = compile_twice


def shared_do_bench(fn, warmup=25, rep=100, _n_warmup=0, _n_repeat=0, quantiles=None, return_mode="mean",
                    **_ignored):
    """Milliseconds per call of ``fn`` (TLSUITE_TIMING): the one timer both implementations use."""
    import fcntl
    import statistics

    import torch

    with open(os.environ["TLSUITE_TIMING"], "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        fn()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(5):
            fn()
        end.record()
        torch.cuda.synchronize()
        estimate = max(start.elapsed_time(end) / 5, 1e-4)
        # TileLang's counts from its budgets, bounded so that one timing stays under ~1.5 s
        n_warmup = _n_warmup if _n_warmup > 0 else min(max(1, int(warmup / estimate)), 5000)
        n_repeat = _n_repeat if _n_repeat > 0 else min(max(10, int(rep / estimate)), 1000)
        flush = torch.empty(256 << 18, dtype=torch.int32, device="cuda")  # 256 MB, more than L2
        for _ in range(n_warmup):
            fn()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(n_repeat)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(n_repeat)]
        for s, e in zip(starts, ends):
            flush.zero_()
            s.record()
            fn()
            e.record()
        torch.cuda.synchronize()
    times = sorted(s.elapsed_time(e) for s, e in zip(starts, ends))
    if quantiles is not None:
        got = [times[min(len(times) - 1, int(q * len(times)))] for q in quantiles]
        return got[0] if len(got) == 1 else got
    if return_mode == "min":
        return times[0]
    if return_mode == "max":
        return times[-1]
    return statistics.median(times)


def _install_shared_timer():
    if os.environ.get("TLSUITE_IMPL") == "ours":
        import tilelang_core.profiler as profiler
        from tilelang_core.profiler import bench, profiler as profiler_module

        class Measured:  # what Profiler.do_bench reads from tilelang_core.profiler.measure
            def __init__(self, call, kwargs):
                self.call, self.kwargs = call, kwargs

            def summary(self, return_mode, quantiles):
                k = self.kwargs
                return shared_do_bench(self.call, k.get("warmup_ms", 25), k.get("rep_ms", 100),
                                       k.get("n_warmup", 0), k.get("n_repeat", 0), quantiles, return_mode)

        profiler_module.measure = lambda call, **kwargs: Measured(call, kwargs)
    else:
        import tilelang.profiler as profiler
        from tilelang.profiler import bench
    # (TileLang's Profiler.do_bench calls the do_bench of tilelang.profiler's namespace)
    profiler.do_bench = bench.do_bench = shared_do_bench


_FAKE_CUDA_MODE = None


if os.environ.get("TLSUITE_FAKE_CUDA") == "1":
    _FAKE_CUDA_MODE = _install_fake_cuda()
if os.environ.get("TLSUITE_TIMING"):
    _install_shared_timer()
if os.environ.get("TLSUITE_ALSO_COMPILE"):
    _install_also_compile(os.environ["TLSUITE_ALSO_COMPILE"])
