"""AcmeBackend: the compile stages of the acme target, tile IR -> thread-level TIRX -> source ->
artifact -> a callable (tilelang_core.backend.Backend is the contract).

This template has no ACME toolchain to call, so its stages are the simplest that run end to end:
``lower`` is the SIMT kit's (lowering.py), ``codegen`` prints the thread-level program (replace it
with your emitter), ``build`` writes the lowered module as TVMScript text (replace it with your compiler call,
returning the binary's bytes), and ``load`` returns a callable that runs the kernel on the kit's
SIMT interpreter over host memory (replace it with your runtime's load and launch). Every stage is
kept on the compiled kernel: ``kernel.asm["lowered" | "source"]``.

Example::

    kernel = tilelang_core.compile(add_one, target="acme")
    kernel(a)                                   # numpy arrays or torch CPU tensors
    print(kernel.get_kernel_source())
"""

from __future__ import annotations

from pathlib import Path

import tvm

from tilelang_core.backend import Backend, as_ir_module, checked_arch

from .lowering import ACME
from .options import AcmeOptions
from .target import ARCHS, DEFAULT_ARCH


class AcmeBackend(Backend):
    kind = "acme"
    device_type = "cpu"  # the template's simulator runs on host memory; yours names its device
    options_class = AcmeOptions
    binary_suffix = ".py"

    def __init__(self, target):
        super().__init__(target)
        self.arch = checked_arch(target, "acme", ARCHS, DEFAULT_ARCH)

    def lower(self, func, options: AcmeOptions | None = None) -> tvm.IRModule:
        from tilelang_core.simt.pipeline import lower_simt

        return as_ir_module(lower_simt(func, ACME, options or AcmeOptions()))

    def codegen(self, mod, options: AcmeOptions | None = None) -> str:
        (func,) = mod.functions.values()
        return f"// ACME program for {self.arch} (template: the thread-level TIRX; emit your ISA here)\n" + \
            func.script()

    def build(self, mod, source: str, options: AcmeOptions | None, workdir: Path) -> bytes:
        return mod.script(show_meta=True).encode()  # TVMScript text: runtime.py parses it back

    def load(self, path: Path):
        from .runtime import load_kernel

        return load_kernel(path)

    def toolchain_version(self) -> str:
        return f"acme-simulator tvm-{tvm.__version__} arch-{self.arch}"
