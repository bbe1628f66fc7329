"""Checking MSL without a Mac: a clang-19 syntax/type check and structural checks.

There is no Metal compiler for Linux. ``check_msl`` compiles the MSL as C++ for OpenCL
(``clang-19 -x clcpp -cl-std=clc++2021 -cl-no-stdinc -fsyntax-only``) against ``shim/metal_stdlib``,
a header of this repo declaring the MSL subset we emit with Metal's address spaces, types and
overloads: it catches syntax errors, undeclared names, type and overload errors (a threadgroup
pointer where a device one is expected, a simdgroup_load of a register array), double, and
unknown attributes. It does not check Metal's resource limits, Metal-only semantics the shim
approximates, or run anything.

``structural_problems`` reads the kernel for what the lowering promises: one ``kernel`` with every
pointer bound to ``[[buffer(i)]]`` and Metal thread-position attributes, a threadgroup barrier
wherever threadgroup memory is written and read back (two per loop that refills it), the
simdgroup_matrix path for simdgroup gemms, and no CUDA-isms.

Example::

    check_msl(kernel.get_kernel_source())           # raises CompileError with clang's log
    assert structural_problems(source, gemm=True) == []
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from tilelang_core.errors import CompileError

SHIM_DIR = Path(__file__).parent / "shim"
CLANG = "clang-19"
PRELUDE_END = "// ------------------------------------------------------------------------------------------------\n"

#: CUDA spellings that must not reach MSL (Metal has none of them)
CUDA_ISMS = ("__syncthreads", "__shared__", "__global__", "__device__", "__forceinline__", "threadIdx",
             "blockIdx", "blockDim", "__shfl", "atomicAdd", "atomicCAS", "__half", "__nv_bfloat16",
             "__float2half", "__half2float", "make_half2", "make_float4", "make_uint4", "__ldg",
             "asm volatile", "cuda_fp16", "cp.async", "ldmatrix", "mma.sync")


def find_clang() -> str | None:
    return shutil.which(CLANG)


def clang_command(path: str) -> list[str]:
    return [find_clang() or CLANG, "-x", "clcpp", "-cl-std=clc++2021", "-cl-no-stdinc", "-fsyntax-only",
            f"-I{SHIM_DIR}", "-Werror=unknown-attributes", "-ferror-limit=50", path]


def check_msl(source: str, kernel: str = "") -> None:
    """Syntax/type check of MSL with clang-19 and the shim; CompileError (clang's log) on failure."""
    if find_clang() is None:
        raise CompileError(f"{CLANG} is not installed: the MSL check needs it (bash tools/dev.sh setup, "
                           f"or apt-get install clang-19)")
    with tempfile.TemporaryDirectory(prefix="tilelang-msl-") as tmp:
        path = Path(tmp) / "kernel.metal"
        path.write_text(source)
        proc = subprocess.run(clang_command(str(path)), capture_output=True, text=True)
    if proc.returncode != 0:
        who = f"kernel '{kernel}'" if kernel else "the kernel"
        first = next((ln for ln in proc.stderr.splitlines() if "error:" in ln), proc.stderr.strip())
        raise CompileError(f"MSL of {who} fails the clang-19 syntax/type check: {first}", log=proc.stderr)


def kernel_part(source: str) -> str:
    """The generated kernel, without our prelude (whose helpers say threadgroup in every line)."""
    at = source.rfind(PRELUDE_END)
    return source[at + len(PRELUDE_END):] if at >= 0 else source


def _blocks(text: str, opener: str):
    """Bodies of the ``{ ... }`` blocks that follow each match of ``opener``."""
    for m in re.finditer(opener, text):
        start = text.find("{", m.end())
        depth, i = 0, start
        while i < len(text):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            if depth == 0:
                yield text[start + 1:i]
                break
            i += 1


def structural_problems(source: str, gemm: bool = False) -> list[str]:
    """What is wrong with the shape of a generated kernel (empty: nothing)."""
    problems = []
    body = kernel_part(source)
    kernels = re.findall(r"kernel void (\w+)\((.*?)\)\s*\{", body, re.S)
    if len(kernels) != 1:
        return [f"expected one kernel function, found {len(kernels)}"]
    name, params = kernels[0]
    for param in (p.strip() for p in params.split(",") if p.strip()):
        if ("*" in param or "&" in param) and not re.search(r"\[\[ buffer\(\d+\) \]\]", param):
            problems.append(f"kernel {name}: parameter '{param}' is not bound to a [[buffer(i)]]")
    if "[[thread_position_in_threadgroup]]" not in params:
        problems.append(f"kernel {name}: no [[thread_position_in_threadgroup]] parameter")
    for word in CUDA_ISMS:
        if re.search(r"(?<![\w.])" + re.escape(word) + r"(?!\w)", body):
            problems.append(f"kernel {name}: CUDA spelling '{word}' in MSL")
    barrier = "threadgroup_barrier(mem_flags::mem_threadgroup)"
    if re.search(r"threadgroup \w+ \w+\[", body):
        if barrier not in body:
            problems.append(f"kernel {name}: uses threadgroup memory but has no threadgroup_barrier")
        for loop in _blocks(body, r"\bfor \(int \w+ = 0;"):
            if re.search(r"tl_copy_\d+\(", loop) and loop.count(barrier) < 2:
                problems.append(f"kernel {name}: a loop refills threadgroup memory with fewer than two "
                                f"barriers (one before reading the tile, one before overwriting it)")
    if gemm:
        if "tl_simdgroup_gemm<" not in body:
            problems.append(f"kernel {name}: T.gemm did not take the simdgroup_matrix path")
        elif not all(f in source for f in ("simdgroup_multiply_accumulate(", "simdgroup_load(")):
            problems.append(f"kernel {name}: prelude lacks simdgroup_load / simdgroup_multiply_accumulate")
    return problems
