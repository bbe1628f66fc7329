"""Run one kernel on every reference path this machine has, without a GPU: the differential oracle.

The cpu backend compiles and runs the kernel; cuda (sm_80), hip (gfx942 wave64 MFMA, gfx1100
wave32 WMMA) and metal (apple7) lower it and run the thread-level result on their SIMT
interpreters. A test compares each against torch in float64, so a lowering that maps an element
to the wrong thread, drops a binding or reads the wrong row fails on the backend that does it.

    from tilelang_core.testing.oracle import PATHS, run

    @pytest.mark.parametrize("path", PATHS)
    def test_column_copy(path):
        out = run(path, kernel, X=x, Y=np.zeros(...))     # numpy arrays by parameter name
        np.testing.assert_allclose(out["Y"], expected)

A backend whose package is not installed is skipped (pytest.importorskip). The interpreters are
slow (numpy, one block at a time): keep the shapes small.
"""

from __future__ import annotations

import warnings

import numpy as np

#: the reference paths: "cpu" (compiled), "<kind>:<arch>" (lowered + interpreted)
PATHS = ("cpu", "cuda:sm_80", "hip:gfx942", "hip:gfx1100", "metal:apple7")


class _Target:
    def __init__(self, arch: str):
        self.arch = arch


def lower(path: str, func, **options):
    """The thread-level PrimFunc that ``path``'s interpreter runs."""
    import pytest

    kind, _, arch = path.partition(":")
    if kind == "cuda":
        pytest.importorskip("tilelang_cuda")
        from tilelang_cuda.options import CudaOptions as Options
        from tilelang_cuda.pipeline import CudaBackend as Backend
    elif kind == "hip":
        pytest.importorskip("tilelang_hip")
        from tilelang_hip.options import HipOptions as Options
        from tilelang_hip.pipeline import HipBackend as Backend
    elif kind == "metal":
        pytest.importorskip("tilelang_metal")
        from tilelang_metal.options import MetalOptions as Options
        from tilelang_metal.pipeline import MetalBackend as Backend
    else:
        raise ValueError(f"no interpreter for {path!r}; paths are {', '.join(PATHS)}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod = Backend(_Target(arch)).lower(func, Options(**options))
    (gvar,) = mod.functions.keys()
    return mod[gvar]


def run(path: str, func, **arrays: np.ndarray) -> dict[str, np.ndarray]:
    """Run ``func`` on ``path`` with numpy ``arrays`` by parameter name; returns them, outputs
    written in place. Scalars (ints, floats) pass through as scalar parameters."""
    return run_with_options(path, func, {}, **arrays)


def run_with_options(path: str, func, options: dict, **arrays: np.ndarray) -> dict[str, np.ndarray]:
    """:func:`run` with the interpreters' kernels lowered with backend ``options`` (e.g.
    ``{"disable_thread_storage_sync": True}``: the kernel's own ordering, no barriers added); the
    cpu path takes none (it runs a block's threads one after another)."""
    if path == "cpu":
        return _run_cpu(func, arrays)
    kind = path.partition(":")[0]
    import pytest

    pytest.importorskip(f"tilelang_{kind}")  # a backend not installed: skipped, as lower() does
    if kind == "cuda":
        from tilelang_cuda.interpreter import run_kernel
    elif kind == "hip":
        from tilelang_hip.interpreter import run_kernel
    else:
        from tilelang_metal.interpreter import run_kernel
    program = _split(path, func)
    if program is None:
        run_kernel(lower(path, func, **options), arrays)
        return arrays
    # several T.Kernel blocks: each lowered and interpreted in program order, the T.alloc_global
    # workspaces as NaN-filled arrays (uninitialized memory) shared by all of them
    shared = dict(arrays)
    for buffer in program.workspaces:
        shape = _workspace_shape(func, buffer, arrays)
        dtype = str(buffer.ty.dtype)
        fill = np.nan if np.issubdtype(np.dtype(dtype), np.floating) else 0
        shared[str(buffer.name)] = np.full(shape, fill, dtype=dtype)
    for kernel in program.kernels:
        run_kernel(lower(path, kernel, **options), shared)
    return arrays


def _split(path: str, func):
    """The kernels of a program of several (transform/program_kernels.py), or None; refused as the
    compile driver refuses it where the backend does not build such programs."""
    from ..transform.program_kernels import split_program

    program = split_program(func)
    if program is None:
        return None
    lower(path, program.kernels[0])  # skips when the backend is not installed
    kind = path.partition(":")[0]
    backend = {"cuda": "tilelang_cuda.pipeline:CudaBackend", "hip": "tilelang_hip.pipeline:HipBackend",
               "metal": "tilelang_metal.pipeline:MetalBackend"}[kind]
    import importlib

    module, _, cls = backend.partition(":")
    from ..jit.compiler import check_program_support

    check_program_support(func, getattr(importlib.import_module(module), cls), "main")
    return program


def _workspace_shape(func, buffer, arrays: dict) -> tuple:
    """The extents of a workspace, with the program's sizes bound from the arguments."""
    import tvm

    env = {}
    for p in func.params:
        if tvm.tirx.is_buffer_var(p):
            for dim, extent in zip(p.ty.shape, np.shape(arrays[str(p.name)])):
                if isinstance(dim, tvm.tirx.Var):
                    env[dim] = tvm.tirx.const(int(extent), str(dim.ty))
        else:
            env[p] = tvm.tirx.const(int(arrays[str(p.name)]), str(p.ty))
    from ..ir.substitute import substitute

    analyzer = tvm.sym.Analyzer()
    return tuple(int(analyzer.simplify(substitute(e, env))) for e in buffer.ty.shape)


def _run_cpu(func, arrays: dict) -> dict:
    import pytest
    import torch

    pytest.importorskip("tilelang_cpu")
    from ..jit import compile as compile_kernel

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kernel = compile_kernel(func, target="cpu")
    names = [str(p.name) for p in func.params]
    missing = [n for n in names if n not in arrays]
    if missing:
        raise ValueError(f"no array given for parameter(s) {', '.join(missing)}")
    tensors = {n: torch.from_numpy(a) if isinstance(a, np.ndarray) else a for n, a in arrays.items()}
    kernel(*[tensors[n] for n in names])
    return arrays


__all__ = ["PATHS", "lower", "run"]
