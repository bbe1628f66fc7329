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

    from .debug_print import register

    register()  # T.print's callback, looked up by name when a kernel prints
    _size_thread_pool()
    path = Path(path)
    who = f"kernel '{kernel}'" if kernel else "kernel"
    if not path.is_file():
        raise LaunchError(f"cannot load {who}: artifact {path} does not exist; recompile it")
    _check_symbols(path, who)
    try:
        return tvm.runtime.load_module(str(path))
    except Exception as exc:
        raise CompileError(f"cannot load {who} from {path}: the artifact is unusable on this machine "
                           f"(built for another CPU or platform?)", log=str(exc)) from exc


def _check_symbols(path: Path, who: str) -> None:
    """Resolve every symbol of the library now. TVM loads it lazily: a function no library on this
    machine defines (``T.call_extern("__float2half_rz", ...)``, a CUDA function) would end the
    process with "symbol lookup error" at its first call, mid-kernel."""
    import ctypes
    import re

    try:
        ctypes.CDLL(str(path), mode=os.RTLD_NOW | os.RTLD_LOCAL)
    except OSError as exc:
        missing = re.search(r"undefined symbol: (\S+)", str(exc))
        if missing is None:
            return  # not a symbol problem: TVM's loader reports it below
        raise CompileError(f"{who} calls {missing[1]}, which no library on this machine defines: the cpu "
                           f"backend links C functions only (a T.call_extern of a CUDA device function "
                           f"runs on CUDA targets)", log=str(exc)) from None


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
