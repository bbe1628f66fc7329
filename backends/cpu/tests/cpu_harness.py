"""Compile a PrimFunc with the cpu backend and call it on torch tensors, without the JIT.

    fn = compile_cpu(prim_func)          # lower -> codegen -> build -> load
    fn(a, b, c)                          # torch CPU tensors, written in place
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import torch
from tilelang_cpu.options import CpuOptions
from tilelang_cpu.pipeline import CpuBackend


class CompiledCpuKernel:
    def __init__(self, func, options: CpuOptions | None = None):
        self.backend = CpuBackend(None)
        self.options = options or CpuOptions()
        self.lowered = self.backend.lower(func, self.options)
        self.source = self.backend.codegen(self.lowered, self.options)
        self.name = str(next(iter(self.lowered.functions.keys())).name_hint)
        with tempfile.TemporaryDirectory() as tmp:
            data = self.backend.build(self.lowered, self.source, self.options, Path(tmp))
            path = Path(tmp) / "k.so"
            path.write_bytes(data)
            self.module = self.backend.load(path)
        self.fn = self.module[self.name]

    def __call__(self, *args):
        return self.fn(*args)

    def lowered_script(self) -> str:
        return self.lowered.script(show_meta=False)


def compile_cpu(func, **options) -> CompiledCpuKernel:
    return CompiledCpuKernel(func, CpuOptions(**options))


def rand(shape, dtype, seed=0, lo=-1.0, hi=1.0):
    gen = torch.Generator().manual_seed(seed)
    return (torch.rand(shape, generator=gen, dtype=torch.float64) * (hi - lo) + lo).to(dtype)


#: (rtol, atol) against a float64 reference, per input dtype (accumulation is float32)
TOLERANCE = {torch.float32: (1e-4, 1e-4), torch.float16: (2e-3, 2e-3), torch.bfloat16: (1e-2, 1e-2)}


def assert_close(actual, expected, dtype=torch.float32, rtol=None, atol=None):
    r, a = TOLERANCE[dtype]
    torch.testing.assert_close(actual.double(), expected.double(), rtol=rtol or r, atol=atol or a)
