"""``@autotune(executor="ray")``: the candidates of a search as Ray tasks.

Ray does the scheduling; we only express the work and its resources:
- compile tasks (``num_cpus=1``) build a candidate and ship its cache entry back (a node of the
  cluster may not share the driver's cache folder), at most as many in flight as the cluster has
  CPUs so that a task's timeout counts from its start;
- check-and-time tasks install the shipped entry in their node's cache, load the kernel, check it
  against ``ref_prog`` and time it. On a GPU target each asks for ``num_gpus=1``, so Ray runs at
  most one timing per GPU; on the cpu target they run one at a time, after every compile is done,
  so compiles never share the cores being measured.
A task past its timeout is cancelled (``ray.cancel(force=True)`` kills its worker) and reported.

A module-level kernel factory travels by name, with the driver's ``sys.path``, and is imported
on the worker (as in the local pool); one defined inside a function travels by value (Ray's
cloudpickle). On a real cluster, give workers the code with
``ray.init(runtime_env={"working_dir": ...})``.

    ray.init(num_cpus=2, include_dashboard=False)     # or connect to a cluster; else a local one
    kernel = tl.autotune(configs=space, executor="ray")(gemm)(1024, 1024, 1024)
"""

from __future__ import annotations

import sys
import time
from typing import Mapping, Sequence

from .. import config as _config
from ..errors import ConfigError


def _load(sys_path: Sequence[str], payload: bytes):
    for entry in reversed(sys_path):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    from ray import cloudpickle

    return cloudpickle.loads(payload)


def ray_compile(sys_path, spec_payload: bytes, config: Mapping, env: Mapping[str, str]) -> dict:
    """Ray task: compile one candidate and return its outcome with the cache entry's bytes."""
    from .spec import compile_candidate, forget_loaded_kernels

    spec = _load(sys_path, spec_payload)
    try:
        return compile_candidate(spec, config, env, ship=True)
    finally:
        forget_loaded_kernels()


def ray_check_and_time(sys_path, spec_payload: bytes, settings_payload: bytes, config: Mapping,
                       entry: Mapping | None, env: Mapping[str, str]) -> dict:
    """Ray task: load the shipped kernel on this node, check it and time it."""
    from .measure import check_and_time
    from .spec import error_summary, forget_loaded_kernels, install_entry

    _config.apply_snapshot(env)
    try:
        spec = _load(sys_path, spec_payload)
        settings = _load(sys_path, settings_payload)
        install_entry(entry)
        kernel = spec.compile(config)
    except Exception as exc:  # noqa: BLE001
        forget_loaded_kernels()
        return {"ok": False, "latency": None, "stage": "compile", "error": error_summary(exc),
                "detail": None}
    try:
        return check_and_time(kernel, settings)
    finally:
        forget_loaded_kernels()


class RayTuner:
    """Runs one search of ``tuner`` (an AutoTuner) on the Ray instance this process is connected to."""

    def __init__(self, tuner, settings=None):
        self.tuner = tuner
        self.settings = tuner.settings if settings is None else settings

    def run(self, spec, configs: Sequence[Mapping], backend):
        try:
            import ray
            from ray import cloudpickle
        except ImportError:
            raise ConfigError("autotune(executor='ray') needs Ray: pip install ray "
                              "(or use executor='local')") from None
        from .tuner import CandidateResult

        if not ray.is_initialized():
            self.tuner._note("autotune: no Ray instance connected; starting a local one (ray.init())")
            ray.init()
        gpu = getattr(backend, "device_type", None) not in (None, "cpu")
        resources = ray.cluster_resources()
        if gpu and not resources.get("GPU"):
            raise ConfigError(f"autotune(executor='ray') for a {backend.device_type} target needs GPUs "
                              f"in the Ray cluster; it has {resources}")
        env = _config.snapshot()
        path = list(sys.path)
        spec_payload = cloudpickle.dumps(spec)
        settings_payload = cloudpickle.dumps(self.settings)
        compile_task = ray.remote(num_cpus=1, max_retries=0)(ray_compile)
        time_task = ray.remote(num_cpus=0 if gpu else 1, num_gpus=1 if gpu else 0,
                               max_retries=0)(ray_check_and_time)
        candidates = [CandidateResult(config=dict(c)) for c in configs]
        entries: dict[int, dict] = {}

        bar = self.tuner._bar(len(configs), "compile (ray)")
        t0 = time.perf_counter()

        def compiled(i, outcome):
            c = candidates[i]
            c.compile_seconds = outcome.get("seconds", 0.0)
            if outcome["ok"]:
                entries[i] = outcome["entry"]
            else:
                c.error, c.detail = outcome["error"], outcome.get("detail")
                c.stage = "timeout" if outcome.get("timeout") else "compile"
                self.tuner._report_failure(c, bar)
            bar.update(1)

        slots = max(1, int(resources.get("CPU", 1)))
        self._drain(ray, [(i, lambda i=i: compile_task.remote(path, spec_payload, configs[i], env))
                          for i in range(len(configs))], slots, compiled, "compile")
        compile_wall = time.perf_counter() - t0
        bar.close()

        bar = self.tuner._bar(len(entries), "bench (ray)")
        best = [None]

        def timed(i, outcome):
            c = candidates[i]
            self.tuner.record(c, outcome, bar)
            if c.ok and (best[0] is None or c.latency < best[0].latency):
                best[0] = c
                bar.set_postfix_str(f"best {c.latency:.4g} ms")
            bar.update(1)

        slots = max(1, int(resources.get("GPU", 0))) if gpu else 1
        self._drain(ray, [(i, lambda i=i: time_task.remote(path, spec_payload, settings_payload,
                                                           configs[i], entries[i], env))
                          for i in sorted(entries)], slots, timed, "check and bench")
        bar.close()
        from .spec import install_entry

        if best[0] is not None:  # the driver loads the winner from the shipped entry
            install_entry(entries[candidates.index(best[0])])
        return candidates, compile_wall, f"ray ({slots} timing slot{'s' if slots > 1 else ''})"

    def _drain(self, ray, jobs, slots: int, done_cb, what: str) -> None:
        """Keep ``slots`` tasks in flight; deliver outcomes; cancel tasks past the timeout."""
        timeout = self.tuner.timeout
        pending = list(jobs)
        running: dict = {}
        while pending or running:
            while pending and len(running) < slots:
                i, submit = pending.pop(0)
                running[submit()] = (i, time.monotonic())
            wait = None
            if timeout:
                wait = max(0.0, min(start + timeout for _, start in running.values()) - time.monotonic())
            ready, _ = ray.wait(list(running), num_returns=1, timeout=wait)
            for ref in ready:
                i, start = running.pop(ref)
                try:
                    outcome = ray.get(ref)
                except Exception as exc:  # noqa: BLE001 - a worker crash, an unpicklable result
                    outcome = {"ok": False, "latency": None, "stage": what.split()[0],
                               "error": f"Ray task failed: {type(exc).__name__}: "
                                        f"{str(exc).strip().splitlines()[0] if str(exc).strip() else ''}",
                               "detail": str(exc)}
                done_cb(i, outcome)
            now = time.monotonic()
            for ref, (i, start) in list(running.items()):
                if timeout and now - start >= timeout:
                    ray.cancel(ref, force=True)
                    del running[ref]
                    done_cb(i, {"ok": False, "latency": None, "stage": "timeout", "timeout": True,
                                "error": f"timed out after {timeout:g} s ({what})", "detail": None})
