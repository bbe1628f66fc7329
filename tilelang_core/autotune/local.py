"""Compiling candidates in parallel on this machine: a spawn-based process pool.

Why processes: lowering and codegen hold the GIL (TVM passes, Python lowering rules), and toolchains
(nvcc, hipcc) are subprocesses anyway. Why spawn: forking a process that has loaded TVM, torch or a
CUDA context is unsafe. Workers compile into the shared disk cache (``jit/cache.py`` is safe across
processes) and return only a status; the parent then loads each kernel from the cache.

Per-candidate timeouts: at most ``workers`` candidates are in flight, and a worker reports when it
begins one, so a deadline counts compile time only (not a fresh worker's imports). A candidate past
its deadline is reported as timed out and the pool is killed (a hung compile cannot be interrupted
otherwise); the other in-flight candidates are resubmitted to a fresh pool. The pool is kept between
searches, since starting a worker costs seconds of imports (torch, tvm). As with any spawn-based
pool, workers run the script that tunes again before their first candidate: when the tuning is at the
script's top level, outside ``if __name__ == "__main__":`` (as TileLang's scripts do), the candidates
are compiled in the calling process instead (``unguarded_main_call``).

    compiler = LocalCompiler(workers=4)
    outcomes = compiler.compile(spec, configs, timeout=60, on_result=print)
"""

from __future__ import annotations

import atexit
import concurrent.futures as cf
import functools
import itertools
import multiprocessing
import sys
import threading
import time
from queue import Empty
from typing import Callable, Mapping, Sequence

from .. import config as _config
from .spec import KernelSpec, compile_candidate, forget_loaded_kernels

_pools: dict[int, tuple[cf.ProcessPoolExecutor, object]] = {}
_pools_lock = threading.Lock()
_started_queue = None  # in a worker: where it says when it begins a candidate


def _init_worker(sys_path: list, started) -> None:
    global _started_queue
    _started_queue = started
    # the parent's import path: tests, scripts and notebooks put their folders there
    for entry in reversed(sys_path):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    # pay the heavy imports before the first candidate's clock starts
    import tilelang_core.jit.compiler  # noqa: F401
    import tilelang_core.language  # noqa: F401


def _compile_task(token: int, spec, config, env) -> dict:
    # a candidate's timeout counts from here, not from its submission: a fresh worker first
    # spends seconds importing torch and tvm
    if _started_queue is not None:
        _started_queue.put((token, time.time()))
    try:
        return compile_candidate(spec, config, env)
    finally:
        forget_loaded_kernels()


def _pool(workers: int):
    with _pools_lock:
        entry = _pools.get(workers)
        if entry is None:
            ctx = multiprocessing.get_context("spawn")
            started = ctx.Queue()
            pool = cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx,
                                          initializer=_init_worker, initargs=(list(sys.path), started))
            entry = _pools[workers] = (pool, started)
        return entry


def _kill(workers: int) -> None:
    with _pools_lock:
        entry = _pools.pop(workers, None)
    if entry is None:
        return
    pool = entry[0]
    if hasattr(pool, "kill_workers"):  # Python 3.14+
        pool.kill_workers()
    else:  # the worker processes are only reachable through the private map before 3.14
        for process in list(getattr(pool, "_processes", {}).values()):
            process.kill()
    pool.shutdown(wait=False, cancel_futures=True)


def prewarm(workers: int | None = None) -> None:
    """Start the compile workers now, without waiting: each spends seconds importing torch and tvm,
    which then overlaps with whatever the program does before its first search.

        from tilelang_core.autotune.local import prewarm
        prewarm()               # at the top of a tuning script, under `if __name__ == "__main__":`
    """
    count = _config.autotune_workers() if workers is None else int(workers)
    if count < 1:
        return
    pool, _ = _pool(count)
    for _ in range(count):  # a submitted task makes the pool spawn a worker for it
        pool.submit(int)


def unguarded_main_call() -> str | None:
    """Why spawned workers cannot start for this call, or None when they can.

    A spawned worker starts by running the parent's ``__main__`` script again (as
    ``__mp_main__``). TileLang scripts tune at module level; run again, that code tunes again inside
    the worker, which then dies in its bootstrap. So when ``__main__`` is on the stack at module
    level, outside an ``if __name__ == "__main__":`` block, the candidates are compiled in this
    process instead (TileLang compiles in threads of the calling process for the same reason)."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if not path:
        return None  # interactive: nothing is re-run (KernelSpec.importable says if the kernel can travel)
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "<module>" and frame.f_globals.get("__name__") == "__main__":
            break
        frame = frame.f_back
    if frame is None or _inside_main_guard(path, frame.f_lineno):
        return None
    return (f"the tuning runs at the top level of the script {path} (line {frame.f_lineno}), which a "
            f"spawned worker would run again; put it under `if __name__ == \"__main__\":` to compile "
            f"in parallel")


@functools.lru_cache(maxsize=16)
def _main_guards(path: str) -> tuple:
    """Line ranges of the script's top-level ``if __name__ == "__main__":`` blocks."""
    import ast

    try:
        tree = ast.parse(open(path, encoding="utf-8").read())
    except (OSError, SyntaxError, ValueError):
        return ()
    ranges = []
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and len(node.test.comparators) == 1:
            sides = [node.test.left, node.test.comparators[0]]
            names = [x.id for x in sides if isinstance(x, ast.Name)]
            consts = [x.value for x in sides if isinstance(x, ast.Constant)]
            if names == ["__name__"] and consts == ["__main__"] and isinstance(node.test.ops[0], ast.Eq):
                ranges.append((node.body[0].lineno, node.end_lineno))
    return tuple(ranges)


def _inside_main_guard(path: str, line: int) -> bool:
    return any(lo <= line <= hi for lo, hi in _main_guards(path))


@atexit.register
def shutdown_pools() -> None:
    """Stop the kept worker pools (tests call this to start from a cold pool)."""
    with _pools_lock:
        pools = [pool for pool, _ in _pools.values()]
        _pools.clear()
    for pool in pools:
        pool.shutdown(wait=True, cancel_futures=True)


class LocalCompiler:
    """Compiles candidates in ``workers`` spawned processes (0: in this process, serially)."""

    def __init__(self, workers: int | None = None):
        self.workers = _config.autotune_workers() if workers is None else int(workers)

    def compile(self, spec: KernelSpec, configs: Sequence[Mapping], timeout: float | None,
                on_result: Callable[[int, dict], None]) -> list[dict]:
        if self.workers == 0:
            return self._in_process(spec, configs, on_result)
        return self._pooled(spec, configs, timeout, on_result)

    def _in_process(self, spec, configs, on_result) -> list[dict]:
        # no timeout here: a compile in this process cannot be interrupted safely
        env = _config.snapshot()
        outcomes = []
        for i, cfg in enumerate(configs):
            outcome = compile_candidate(spec, cfg, env)
            outcomes.append(outcome)
            on_result(i, outcome)
        return outcomes

    def _pooled(self, spec, configs, timeout, on_result) -> list[dict]:
        env = _config.snapshot()
        outcomes: list[dict | None] = [None] * len(configs)
        waiting = list(range(len(configs)))
        running: dict[cf.Future, tuple[int, int]] = {}   # future -> (candidate, token)
        started: dict[int, float] = {}                    # token -> wall time its worker began
        deaths: dict[int, int] = {}
        tokens = itertools.count()

        def fail(i, seconds, error, **extra):
            outcomes[i] = {"ok": False, "seconds": seconds, "key": None, "entry": None,
                           "error": error, "detail": None, **extra}
            on_result(i, outcomes[i])

        while waiting or running:
            pool, queue = _pool(self.workers)
            while waiting and len(running) < self.workers:
                i, token = waiting.pop(0), next(tokens)
                running[pool.submit(_compile_task, token, spec, configs[i], env)] = (i, token)
            _drain(queue, started)
            wait = None
            if timeout:
                ends = [started[t] + timeout for _, t in running.values() if t in started]
                wait = _POLL if len(ends) < len(running) else max(0.0, min(ends) - time.time())
            done, _ = cf.wait(list(running), timeout=wait, return_when=cf.FIRST_COMPLETED)
            broken = False
            for future in done:
                i, token = running.pop(future)
                seconds = time.time() - started.get(token, time.time())
                try:
                    outcome = future.result()
                except cf.process.BrokenProcessPool:
                    # a worker died (a crash in a toolchain, the OOM killer): retry once, since
                    # the death may have been another candidate's
                    broken = True
                    deaths[i] = deaths.get(i, 0) + 1
                    if deaths[i] < 2:
                        waiting.insert(0, i)
                    else:
                        fail(i, seconds, "the compile worker process died twice on this config (from "
                             "a script? spawn re-imports it: put the code that tunes under "
                             "`if __name__ == '__main__':`, or pass compile_workers=0)")
                    continue
                except Exception as exc:  # noqa: BLE001 - e.g. an unpicklable config
                    fail(i, seconds, f"{type(exc).__name__}: {exc}")
                    continue
                outcomes[i] = outcome
                on_result(i, outcome)
            _drain(queue, started)
            now = time.time()
            expired = [f for f, (_, t) in running.items()
                       if timeout and t in started and now - started[t] >= timeout]
            for future in expired:
                i, token = running.pop(future)
                fail(i, now - started[token], f"timed out after {timeout:g} s (compile)", timeout=True)
            if expired or broken:
                waiting[:0] = [i for i, _ in running.values()]
                running.clear()
                _kill(self.workers)
        return outcomes  # type: ignore[return-value]


_POLL = 0.2  # seconds between looks at the start queue while a candidate has not started


def _drain(queue, started: dict) -> None:
    while True:
        try:
            token, when = queue.get_nowait()
        except (Empty, OSError, ValueError):
            return
        started[token] = when
