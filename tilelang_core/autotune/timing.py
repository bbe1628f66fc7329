"""Checking and timing compiled candidates strictly one at a time in this process.

Two schedules, same measurements:
- after the compiles (``overlap=False``, the default on the cpu backend): compiles would share the
  very cores being measured, so candidates wait until every compile has finished;
- as they compile (``overlap=True``, the default for GPU targets): the device is idle while the
  compiles run on the CPU, so one thread checks and times each candidate as soon as it is ready,
  still one at a time.

    timer = SerialTimer(tuner, spec, target, total=16, overlap=True, settings=tuner.settings)
    timer.submit(candidate)     # from the compile loop, for every candidate that compiled
    timer.finish()              # waits until every submitted candidate is measured
"""

from __future__ import annotations

import queue
import threading

from .measure import check_and_time, run_with_timeout
from .space import config_label
from .spec import error_summary


class SerialTimer:
    def __init__(self, tuner, spec, target, total: int, overlap: bool, settings=None):
        self.tuner, self.spec, self.target = tuner, spec, target
        self.settings = tuner.settings if settings is None else settings
        self.overlap = overlap
        self.bar = tuner._bar(total, "bench")
        self.best = None
        self.submitted = 0
        self.inputs: dict = {}  # the inputs kept between candidates (cache_input_tensors)
        self._pending: list = []
        self._queue: queue.Queue | None = None
        self._thread: threading.Thread | None = None
        if overlap:
            self._queue = queue.Queue()
            self._thread = threading.Thread(target=self._drain, name="tilelang-autotune-timer",
                                            daemon=True)
            self._thread.start()

    def submit(self, candidate) -> None:
        self.submitted += 1
        if self._queue is not None:
            self._queue.put(candidate)
        else:
            self._pending.append(candidate)

    def finish(self) -> None:
        if self._queue is not None:
            self._queue.put(None)
            self._thread.join()
        for c in self._pending:
            self._measure(c)
        self.bar.total = self.submitted  # compile failures never reach the bench bar
        self.bar.refresh()
        self.bar.close()

    def _drain(self) -> None:
        while (c := self._queue.get()) is not None:
            self._measure(c)

    def _measure(self, c) -> None:
        tuner = self.tuner

        def job():
            try:
                kernel = tuner._compile_best(self.spec, c.config, self.target)  # a disk-cache hit
            except Exception as exc:  # noqa: BLE001 - e.g. a corrupt artifact
                return {"ok": False, "latency": None, "stage": "compile",
                        "error": error_summary(exc), "detail": None}
            best = self.best.latency if self.best is not None else None
            return check_and_time(kernel, self.settings, best, self.inputs)

        outcome = run_with_timeout(job, tuner.timeout, "check and bench")
        tuner.record(c, outcome, self.bar)
        if c.ok and (self.best is None or c.latency < self.best.latency):
            self.best = c
            self.bar.set_postfix_str(f"best {c.latency:.4g} ms {{{config_label(c.config)}}}")
        self.bar.update(1)
