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
    if path == "cpu":
        return _run_cpu(func, arrays)
    kind = path.partition(":")[0]
    lowered = lower(path, func)
    if kind == "cuda":
        from tilelang_cuda.interpreter import run_kernel
    elif kind == "hip":
        from tilelang_hip.interpreter import run_kernel
    else:
        from tilelang_metal.interpreter import run_kernel
    run_kernel(lowered, arrays)
    return arrays


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
