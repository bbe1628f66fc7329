"""Run a kernel on the simulator: tile IR -> Ascend program -> numpy execution, torch in/out.

Two ways in. Through the JIT, like any target (the artifact is the checked program, see
sim_artifact.py; ``SimulatedKernel`` is what ``AscendBackend.load`` returns)::

    kernel = tilelang_core.compile(func, out_idx=[-1], target="ascend+sim")
    c = kernel(a, b)                       # torch CPU tensors (or numpy arrays)

or directly, without the driver and its cache (what the backend's own tests use)::

    from tilelang_ascend.interpreter import simulate
    c = simulate(gemm.get_tir(300, 200, 136), a, b, out_idx=[-1])

Inputs are CPU tensors in the kernel's dtypes; outputs listed in ``out_idx`` are allocated and
returned (a tensor, or a list for several), the way JITKernel does.
"""

from __future__ import annotations

import numpy as np
import torch

from tilelang_core.errors import LaunchError

from .isa import GmTile, Program, instructions
from .pipeline import lower_program
from .sim_memory import storage_dtype
from .simulator import simulate_program
from .target import DEFAULT_ARCH

_TORCH = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32,
          "int32": torch.int32, "int8": torch.int8, "uint8": torch.uint8}


def _to_numpy(t, dtype: str) -> np.ndarray:
    if isinstance(t, np.ndarray):
        return np.ascontiguousarray(t).astype(storage_dtype(dtype), copy=True)
    t = t.detach().cpu().contiguous()
    if dtype == "bfloat16":
        return t.view(torch.int16).numpy().view(np.uint16).copy()
    return t.numpy().astype(storage_dtype(dtype)).copy()


def _to_torch(a: np.ndarray, dtype: str) -> torch.Tensor:
    if dtype == "bfloat16":
        return torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16)
    return torch.from_numpy(a.copy())


def _check_argument(prog: Program, p, t) -> None:
    dtype = str(t.dtype).replace("torch.", "")
    if isinstance(t, np.ndarray):
        dtype = t.dtype.name
    elif getattr(t, "device", None) is not None and t.device.type != "cpu":
        raise LaunchError(f"kernel '{prog.name}' parameter '{p.name}': the Ascend simulator runs "
                          f"on CPU tensors, got one on {t.device}; move it with .cpu()")
    if tuple(t.shape) != tuple(p.shape) or dtype != p.dtype:
        raise LaunchError(f"kernel '{prog.name}' parameter '{p.name}' expects "
                          f"{list(p.shape)} {p.dtype}, got {list(t.shape)} {dtype}")


def _written_tensors(prog: Program) -> set:
    return {op.tensor.name for i in instructions(prog.cube) + instructions(prog.vec)
            for op in i.writes() if isinstance(op, GmTile)}


def run_on_tensors(prog: Program, tensors, stats=None) -> None:
    """Run ``prog`` with one tensor per parameter; the tensors it writes get the new values."""
    if len(tensors) != len(prog.params):
        raise LaunchError(f"kernel '{prog.name}' takes {len(prog.params)} tensors "
                          f"({', '.join(p.name for p in prog.params)}), got {len(tensors)}")
    arrays = {}
    for p, t in zip(prog.params, tensors):
        _check_argument(prog, p, t)
        arrays[p.name] = _to_numpy(t, p.dtype)
    run_stats = simulate_program(prog, arrays)
    if stats is not None:
        stats.append(run_stats)
    written = _written_tensors(prog)
    for p, t in zip(prog.params, tensors):
        if p.name not in written:
            continue
        if isinstance(t, np.ndarray):
            t[...] = arrays[p.name]
        else:
            t.copy_(_to_torch(arrays[p.name], p.dtype))


class SimulatedKernel:
    """A kernel built for ``ascend+sim``: called by JITKernel with every parameter (outputs
    already allocated on the CPU), it runs the program on the simulator and writes the results
    into those tensors."""

    def __init__(self, prog: Program):
        self.program = prog
        self.name = prog.name

    def __call__(self, *tensors):
        run_on_tensors(self.program, tensors)

    def __repr__(self) -> str:
        return f"<SimulatedKernel {self.name} on the Ascend simulator ({self.program.arch})>"


def simulate(func, *inputs, out_idx=None, arch: str = DEFAULT_ARCH, program=None, stats=None):
    """Lower ``func`` (unless ``program`` is given), run it on ``inputs``; return the outputs."""
    prog = program if program is not None else lower_program(func, arch)
    n = len(prog.params)
    outs = sorted({i % n for i in ([] if out_idx is None else
                                   [out_idx] if isinstance(out_idx, int) else out_idx)})
    if len(inputs) != n - len(outs):
        raise LaunchError(f"kernel '{prog.name}' takes {n - len(outs)} input tensor(s) "
                          f"({', '.join(p.name for i, p in enumerate(prog.params) if i not in outs)}"
                          f"), got {len(inputs)}")
    it, tensors = iter(inputs), []
    for i, p in enumerate(prog.params):
        tensors.append(torch.zeros(p.shape, dtype=_TORCH[p.dtype]) if i in outs else next(it))
    run_on_tensors(prog, tensors, stats)
    results = [tensors[i] for i in outs]
    if not results:
        return None
    return results[0] if len(results) == 1 else results
