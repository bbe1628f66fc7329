"""cpu target facts: the reference backend runs kernels as loops through TVM's LLVM codegen.

Standard library only. The cpu is not an accelerator: `auto` falls back to it when no device is
found, so its probe reports nothing.
"""

from __future__ import annotations

ARCHS = ("x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4", "aarch64")
DEFAULT_ARCH = None  # chosen from the host CPU at build time

CAPABILITIES = {
    "*": {"dtypes": ("float16", "bfloat16", "float32", "float64", "int8", "uint8", "int16", "int32",
                     "int64", "bool"),
          "threads_per_block": "any (tile-level code runs as loops)"},
}


def tvm_target(target) -> dict:
    mcpu = target.arch if target.arch and target.arch != "aarch64" else None
    return {"kind": "llvm", **({"mcpu": mcpu} if mcpu else {})}
