"""Loading cpu kernels: the exported ``.so`` is a TVM library module.

A kernel whose blocks run in parallel calls ``TVMBackendParallelLaunch``, which lives in
libtvm_runtime, not in tvm-ffi: the library must be loaded through TVM's module loader, which
resolves that symbol (TVM-NOTES, "CPU (llvm)"). Plain ``tvm_ffi.load_module`` would leave it null.
"""

from __future__ import annotations

import os
from pathlib import Path

from tilelang_core.errors import CompileError, LaunchError


def load_module(path: str | Path, *, kernel: str | None = None):
    """Load a kernel library exported by the cpu backend; returns a tvm runtime Module."""
    import tvm  # brings libtvm_runtime (thread pool) into the process

    _size_thread_pool()
    path = Path(path)
    who = f"kernel '{kernel}'" if kernel else "kernel"
    if not path.is_file():
        raise LaunchError(f"cannot load {who}: artifact {path} does not exist; recompile it")
    try:
        return tvm.runtime.load_module(str(path))
    except Exception as exc:
        raise CompileError(f"cannot load {who} from {path}: the artifact is unusable on this machine "
                           f"(built for another CPU or platform?)", log=str(exc)) from exc


def _size_thread_pool() -> None:
    """Let block-parallel kernels use every CPU this process may run on.

    TVM sizes its pool from the physical cores it detects, which is one on a 2-vCPU machine:
    the GEMM example ran at the same speed with 1 and 2 CPUs (43 ms at 1024^3 fp32) and at
    21 ms with the pool widened. TVM reads ``TVM_NUM_THREADS`` when its pool first starts, so
    this must run before the first kernel launch; a value the user set is left alone.
    """
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    os.environ.setdefault("TVM_NUM_THREADS", str(cpus))
