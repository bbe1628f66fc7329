"""The HIP toolchain: clang (LLVM >= 19) for device code objects, the host C++ compiler for the
tvm-ffi wrapper, llvm-objdump for disassembly.

Device: ``clang++ -x hip -nogpuinc -nogpulib --offload-arch=<gfx> --cuda-device-only
--no-gpu-bundle-output -O3 -c`` -> an AMDGPU ELF code object (``kernel.hsaco``), no HIP headers
or device libraries needed (the prelude uses clang builtins). Host: the wrapper plus an assembly
stub that ``.incbin``s the code object, linked against libtvm_ffi (and libamdhip64 when one is
found; otherwise its symbols stay undefined and resolve when runtime.py loads the library).

Every failure is a CompileError carrying the command and the full log.

Example::

    result = build_shared_library(source, "gfx942", workdir, HipOptions())
    result.path, result.code_object      # Path(".../kernel.so"), Path(".../kernel.hsaco")
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from tilelang_core.errors import CompileError

from .codegen import split
from .options import HipOptions

MIN_LLVM = 19  # first LLVM with gfx942 and code object v5/v6 defaults that ROCm 6 loads


@dataclass
class BuildResult:
    path: Path
    code_object: Path
    timings: dict = field(default_factory=dict)
    log: str = ""


def _llvm_tool(names: list[str]) -> str | None:
    roots = [os.environ.get("ROCM_PATH", "/opt/rocm") + "/llvm/bin"]
    for name in names:
        for candidate in [shutil.which(name)] + [str(Path(r) / name) for r in roots]:
            if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
                return candidate
    return None


def _major(tool: str) -> int:
    out = subprocess.run([tool, "--version"], capture_output=True, text=True).stdout
    found = re.search(r"version (\d+)", out)
    return int(found.group(1)) if found else 0


@functools.lru_cache(maxsize=1)
def find_clang() -> str:
    """clang++ of LLVM >= 19: versioned names first (Debian's clang++-19), then ROCm's."""
    names = [f"clang++-{v}" for v in range(22, MIN_LLVM - 1, -1)] + ["clang++", "amdclang++"]
    for name in names:
        tool = _llvm_tool([name])
        if tool and _major(tool) >= MIN_LLVM:
            return tool
    raise CompileError(f"no clang++ of LLVM >= {MIN_LLVM} found (tried {', '.join(names)} on PATH and "
                       f"$ROCM_PATH/llvm/bin); install clang-19 (apt-get install clang-19 lld-19) or ROCm")


@functools.lru_cache(maxsize=1)
def find_objdump() -> str | None:
    return _llvm_tool([f"llvm-objdump-{v}" for v in range(22, MIN_LLVM - 1, -1)] + ["llvm-objdump"])


@functools.lru_cache(maxsize=1)
def clang_version() -> str:
    out = subprocess.run([find_clang(), "--version"], capture_output=True, text=True).stdout
    return out.splitlines()[0].strip() if out else "unknown"


def _run(cmd: list[str], what: str, cwd: Path | None = None) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
    if proc.returncode != 0:
        raise CompileError(f"{what} failed ({Path(cmd[0]).name} exit {proc.returncode})",
                           log=" ".join(cmd) + "\n" + proc.stdout + proc.stderr)
    return proc.stdout + proc.stderr


def device_flags(arch: str, options: HipOptions) -> list[str]:
    flags = ["-x", "hip", "-std=c++17", "-nogpuinc", "-nogpulib", f"--offload-arch={arch}",
             "--cuda-device-only", "--no-gpu-bundle-output", f"-O{options.opt_level}",
             "-Wno-unused-value", "-Wno-unused-variable"]
    if options.fast_math:
        flags.append("-ffast-math")
    return flags + list(options.extra_clang_flags)


def compile_device(device_source: str, arch: str, workdir: Path, options: HipOptions) -> Path:
    """Device HIP C++ -> ``workdir/kernel.hsaco`` (an AMDGPU ELF code object)."""
    workdir.mkdir(parents=True, exist_ok=True)
    src, out = workdir / "kernel.hip", workdir / "kernel.hsaco"
    src.write_text(device_source)
    _run([find_clang(), *device_flags(arch, options), "-c", str(src), "-o", str(out)],
         f"clang device compile for {arch}")
    return out


def disassemble(code_object: Path, arch: str) -> str:
    tool = find_objdump()
    if tool is None:
        raise CompileError("llvm-objdump (LLVM >= 19) not found: install llvm-19 or ROCm")
    return _run([tool, "-d", f"--mcpu={arch}", str(code_object)], "llvm-objdump")


def find_host_compiler() -> str:
    for name in (os.environ.get("CXX"), "c++", "g++", "clang++"):
        if name and shutil.which(name):
            return shutil.which(name)
    raise CompileError("no host C++ compiler (c++/g++/clang++) on PATH: install one")


def find_libamdhip64() -> Path | None:
    for root in (os.environ.get("ROCM_PATH", "/opt/rocm"), "/usr"):
        for lib in ("lib", "lib64", "lib/x86_64-linux-gnu"):
            path = Path(root) / lib / "libamdhip64.so"
            if path.exists():
                return path
    return None


def host_command(host_cc: Path, blob: Path, out: Path) -> list[str]:
    from tvm_ffi import libinfo

    lib_dir = str(Path(libinfo.find_libtvm_ffi()).parent)
    cmd = [find_host_compiler(), "-O2", "-std=c++17", "-fPIC", "-shared", "-w",
           f"-I{libinfo.find_include_path()}", f"-I{libinfo.find_dlpack_include_path()}",
           str(host_cc), str(blob), "-o", str(out), f"-L{lib_dir}", "-ltvm_ffi", f"-Wl,-rpath,{lib_dir}"]
    hip = find_libamdhip64()
    if hip is not None:
        cmd += [f"-L{hip.parent}", "-lamdhip64", f"-Wl,-rpath,{hip.parent}"]
    return cmd


def build_shared_library(source: str, arch: str, workdir: Path, options: HipOptions) -> BuildResult:
    """The source stage -> ``workdir/kernel.so`` (wrapper + embedded code object)."""
    start = time.perf_counter()
    parts = split(source)
    code_object = compile_device(parts.device, arch, workdir, options)
    device_done = time.perf_counter()
    host_cc, blob, out = workdir / "host.cc", workdir / "code_object.s", workdir / "kernel.so"
    host_cc.write_text(parts.host)
    blob.write_text(".section .rodata\n.global tl_code_object\n.balign 64\ntl_code_object:\n"
                    f".incbin \"{code_object.name}\"\n.section .note.GNU-stack,\"\",@progbits\n")
    log = _run(host_command(host_cc, blob, out), "host wrapper compile", cwd=workdir)
    end = time.perf_counter()
    return BuildResult(out, code_object, {"device": device_done - start, "host": end - device_done,
                                          "total": end - start}, log)
