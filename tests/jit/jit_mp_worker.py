"""Entry point of the spawned processes in test_concurrency.py (must be importable by name)."""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))


def compile_and_run(cache_dir: str, build_log: str, barrier, results):
    os.environ["TILELANG_CACHE_DIR"] = cache_dir
    try:
        import numpy as np

        import jit_kernels as kernels
        from jit_test_backend import LlvmTestBackend
        from tilelang_core.jit import compile

        backend = LlvmTestBackend(build_log=Path(build_log))
        barrier.wait(timeout=60)
        kernel = compile(kernels.vadd, out_idx=[-1], _backend=backend)
        a, b = np.random.rand(100), np.random.rand(100)
        ok = bool(np.array_equal(kernel(a, b), a + b))
        results.put((os.getpid(), ok, kernel.from_cache, kernel.key, None))
    except BaseException as exc:  # report instead of dying silently
        results.put((os.getpid(), False, None, None, repr(exc)))
