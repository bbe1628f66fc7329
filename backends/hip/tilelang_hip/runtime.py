"""Loading hip kernels: the ``.so`` is a tvm-ffi library (wrapper + embedded code object), loaded
without importing tvm. Unverified on AMD hardware (no AMD GPU in CI; see backends/hip/README.md).

The wrapper resolves the HIP module API (hipModuleLoadData, hipModuleLaunchKernel, ...) from
libamdhip64, which is made globally visible here first when the library was built on a machine
without ROCm, and launches on ``TVMFFIEnvGetStream(kDLROCM, device)``: torch's current stream
when the arguments are torch tensors on a ROCm GPU.

Example::

    mod = load_module("kernel.so")
    mod["matmul"](a, b, c)            # torch tensors on a ROCm GPU (device "cuda" in torch)
"""

from __future__ import annotations

import ctypes
from pathlib import Path

from tilelang_core.errors import LaunchError, NoDeviceError

from .compiler import find_libamdhip64


def _load_hip_runtime() -> None:
    for candidate in (find_libamdhip64(), "libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"):
        if candidate is None:
            continue
        try:
            ctypes.CDLL(str(candidate), mode=ctypes.RTLD_GLOBAL)
            return
        except OSError:
            continue
    raise NoDeviceError("cannot load the HIP runtime (libamdhip64.so): install ROCm, or put its lib "
                      "folder on LD_LIBRARY_PATH, to run hip kernels")


def load_module(path: str | Path, *, kernel: str | None = None):
    """Load a kernel library built by the hip backend; returns a ``tvm_ffi.Module``."""
    import tvm_ffi

    path = Path(path)
    who = f"kernel '{kernel}'" if kernel else "kernel"
    if not path.is_file():
        raise LaunchError(f"cannot load {who}: artifact {path} does not exist; recompile it")
    _load_hip_runtime()
    try:
        return tvm_ffi.load_module(str(path))
    except Exception as exc:
        raise LaunchError(f"cannot load {who} from {path}: libamdhip64.so or libtvm_ffi.so missing, "
                          f"or built for another platform ({exc})") from exc
