"""Loading cuda kernels: the ``.so`` is a tvm-ffi library, loaded without importing tvm.

The wrapper inside launches on ``TVMFFIEnvGetStream``: torch's current stream when the arguments are
torch tensors passed through tvm-ffi, so kernels order with surrounding torch work.

Example::

    mod = load_module("kernel.so")
    mod["matmul"](a, b, c)            # torch CUDA tensors, zero-copy
"""

from __future__ import annotations

from pathlib import Path

from tilelang_core.errors import CompileError, LaunchError


def load_module(path: str | Path, *, kernel: str | None = None):
    """Load a kernel library built by the cuda backend; returns a ``tvm_ffi.Module``."""
    import tvm_ffi

    path = Path(path)
    who = f"kernel '{kernel}'" if kernel else "kernel"
    if not path.is_file():
        raise LaunchError(f"cannot load {who}: artifact {path} does not exist; recompile it")
    try:
        return tvm_ffi.load_module(str(path))
    except Exception as exc:
        raise CompileError(f"cannot load {who} from {path}: libcudart.so or libtvm_ffi.so missing, "
                           f"or built for another platform", log=str(exc)) from exc
