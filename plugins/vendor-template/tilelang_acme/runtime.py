"""Loading and launching acme kernels. The template runs them on the SIMT kit's interpreter
(tilelang_core.simt.interpreter), one block at a time over host arrays: slow, exact, and enough to
check a backend's lowering before its hardware exists. Your runtime loads the binary with your
driver and launches it on the device instead.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import tvm

from tilelang_core.errors import CompileError


def load_kernel(path: Path):
    """The callable that launches the kernel stored at ``path`` (arguments in parameter order)."""
    try:
        mod = tvm.script.from_source(Path(path).read_text())
    except Exception as exc:  # noqa: BLE001 - a damaged artifact, whatever the parser says
        raise CompileError(f"cannot read acme kernel {path}: {exc}; recompile it") from exc
    (func,) = mod.functions.values()
    names = [str(p.name) for p in func.params]

    def launch(*args):
        from tilelang_core.simt.interpreter import Interpreter

        arrays = {name: _host_array(value) for name, value in zip(names, args)}
        Interpreter(func, arrays).run()  # writes the outputs in place

    return launch


def _host_array(value):
    if isinstance(value, (int, float, np.integer, np.floating)):
        return value
    if isinstance(value, np.ndarray):
        return value
    return np.from_dlpack(value)  # a torch CPU tensor or a tvm-ffi tensor: the same memory
