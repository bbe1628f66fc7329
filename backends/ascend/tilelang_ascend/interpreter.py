"""Run a kernel on the simulator: tile IR -> Ascend program -> numpy execution, torch in/out.

This is how the tests (and anyone without an NPU) run Ascend kernels::

    from tilelang_ascend.interpreter import simulate
    c = simulate(gemm.get_tir(300, 200, 136), a, b, out_idx=[-1])

Inputs are torch tensors (CPU) in the kernel's dtypes; outputs listed in ``out_idx`` are
allocated and returned (a tensor, or a list for several), the way JITKernel does.
"""

from __future__ import annotations

import numpy as np
import torch

from tilelang_core.errors import LaunchError

from .isa import GmTile, instructions
from .pipeline import lower_program
from .sim_memory import storage_dtype
from .simulator import simulate_program
from .target import DEFAULT_ARCH

_TORCH = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32,
          "int32": torch.int32, "int8": torch.int8, "uint8": torch.uint8}


def _to_numpy(t: torch.Tensor, dtype: str) -> np.ndarray:
    t = t.detach().cpu().contiguous()
    if dtype == "bfloat16":
        return t.view(torch.int16).numpy().view(np.uint16).copy()
    return t.numpy().astype(storage_dtype(dtype)).copy()


def _to_torch(a: np.ndarray, dtype: str) -> torch.Tensor:
    if dtype == "bfloat16":
        return torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16)
    return torch.from_numpy(a.copy())


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
    arrays, it = {}, iter(inputs)
    for i, p in enumerate(prog.params):
        if i in outs:
            arrays[p.name] = np.zeros(p.shape, dtype=storage_dtype(p.dtype))
            continue
        t = next(it)
        if tuple(t.shape) != tuple(p.shape) or t.dtype != _TORCH[p.dtype]:
            raise LaunchError(f"kernel '{prog.name}' parameter '{p.name}' expects "
                              f"{list(p.shape)} {p.dtype}, got {list(t.shape)} {t.dtype}")
        arrays[p.name] = _to_numpy(t, p.dtype)
    run_stats = simulate_program(prog, arrays)
    if stats is not None:
        stats.append(run_stats)
    # inputs the kernel writes (in-place outputs, e.g. atomic_add targets) get the new values
    written = {op.tensor.name for i in instructions(prog.cube) + instructions(prog.vec)
               for op in i.writes() if isinstance(op, GmTile)}
    for p, t in zip([p for j, p in enumerate(prog.params) if j not in outs], inputs):
        if p.name in written:
            t.copy_(_to_torch(arrays[p.name], p.dtype))
    results = [_to_torch(arrays[prog.params[i].name], prog.params[i].dtype) for i in outs]
    if not results:
        return None
    return results[0] if len(results) == 1 else results
