"""Source of the cpu backend: the LLVM IR TVM generates for the lowered module.

LLVM IR is what the toolchain actually compiles, so it is the most useful "source" to show a user
next to the lowered TIR (kept by the driver as ``kernel.asm["lowered"]``). Generating it means
running TVM's codegen, whose result ``pipeline.py`` keeps to avoid compiling twice in ``build``.
"""

from __future__ import annotations


def llvm_ir(lib) -> str:
    """The LLVM IR of a runtime module built by ``compiler.build_runtime_module``."""
    return lib.inspect_source("ll")


def assembly(lib) -> str:
    """The x86/aarch64 assembly of the same module (for dumps)."""
    return lib.inspect_source("s")
