"""The CUDA toolchain: nvcc (device code), the host C++ compiler (tvm-ffi wrapper), cuobjdump.

Two ways to turn the exported ``.cu`` into a loadable ``.so`` (``CudaOptions.host_build``):

* ``split`` (default): NVRTC in-process (nvrtc.py) or nvcc compiles only the kernels to a cubin
  while the host compiler builds the wrapper (to assembly) alongside; the link embeds the cubin
  (``.incbin``). The wrapper loads it with ``cudaLibraryLoadData`` on first launch. Measured on a
  loaded 2-core CPU, a 128x128x32 fp16 GEMM: 0.35-0.4 s with NVRTC (device 0.24 s, host 0.2 s in
  parallel), 0.8-0.9 s with nvcc for the device part.
* ``nvcc``: TVM's single ``.cu`` through ``nvcc -shared`` (the reference route of TVM-NOTES):
  5-6 s on the same machine, most of it nvcc's host pass over tvm-ffi's C++ headers.

Every toolchain failure is a CompileError carrying the command and the full log.

Example::

    result = build_shared_library(cu_source, "sm_90a", workdir, CudaOptions())
    result.path, result.timings          # Path(".../kernel.so"), {"device": 0.41, "host": 0.33, ...}
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from tilelang_core.errors import CompileError, NoToolchainError

from .codegen import split_source
from .options import CudaOptions

# warnings generated code always triggers: no-effect statements, unused CSE variables, inexact
# float literals, CUDA 13's deprecation of ulonglong4 (TVM's type for 32-byte vectors)
_QUIET = ("-diag-suppress", "174,177,550,1046,1444")


@dataclass
class BuildResult:
    path: Path
    cubin: Path | None = None
    #: seconds per step: "device", "host", "total" (device and host overlap in the split build)
    timings: dict = field(default_factory=dict)
    log: str = ""


@functools.lru_cache(maxsize=1)
def find_nvcc() -> str:
    """nvcc from $CUDA_HOME/bin, then PATH, then /usr/local/cuda/bin."""
    candidates = []
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home:
        candidates.append(str(Path(home) / "bin" / "nvcc"))
    found = shutil.which("nvcc")
    if found:
        candidates.append(found)
    candidates.append("/usr/local/cuda/bin/nvcc")
    for c in candidates:
        if Path(c).is_file() and os.access(c, os.X_OK):
            return c
    raise CompileError("nvcc was not found (looked in $CUDA_HOME/bin, PATH, /usr/local/cuda/bin); "
                       "install the CUDA toolkit or set CUDA_HOME")


@functools.lru_cache(maxsize=1)
def cuda_home() -> Path:
    """The toolkit root of the nvcc we use (resolving wrapper scripts through `nvcc -v`'s TOP)."""
    nvcc = Path(find_nvcc()).resolve()
    for root in (nvcc.parent.parent, Path("/usr/local/cuda")):
        if (root / "include" / "cuda_runtime.h").is_file():
            return root
    out = subprocess.run([str(nvcc), "-dryrun", "--version"], capture_output=True, text=True)
    for line in (out.stderr + out.stdout).splitlines():
        if "TOP=" in line:
            return Path(line.split("TOP=", 1)[1].strip())
    raise CompileError(f"cannot find the CUDA include directory next to {nvcc}; set CUDA_HOME")


@functools.lru_cache(maxsize=1)
def nvcc_version() -> str:
    out = subprocess.run([find_nvcc(), "--version"], capture_output=True, text=True)
    for line in out.stdout.splitlines():
        if "release" in line:
            return line.strip()
    return out.stdout.strip().splitlines()[-1] if out.stdout.strip() else "unknown"


def find_host_compiler() -> str:
    for name in (os.environ.get("CXX"), "g++", "c++", "clang++"):
        if name and shutil.which(name):
            return shutil.which(name)
    raise CompileError("no host C++ compiler (g++/c++/clang++) on PATH: install one, or use "
                       "pass config host_build='nvcc'")


def gencode_flags(arch: str) -> list[str]:
    """``-gencode arch=compute_XX,code=sm_XX``: plain ``-arch=sm_90a`` also emits compute_90 PTX,
    which ptxas rejects for arch-specific instructions (wgmma, setmaxnreg)."""
    num = arch[len("sm_"):]
    return ["-gencode", f"arch=compute_{num},code=sm_{num}"]


def _tvm_ffi_paths() -> tuple[str, str, str]:
    from tvm_ffi import libinfo

    include = libinfo.find_include_path()
    dlpack = libinfo.find_dlpack_include_path()
    lib_dir = str(Path(libinfo.find_libtvm_ffi()).parent)
    return include, dlpack, lib_dir


def extra_include_dirs(device_source: str) -> list[str]:
    """Include directories the device source needs beyond the toolkit's: cuRAND's headers for
    T.rng_* (language/random.py), from the toolkit or the ``nvidia-curand`` wheel."""
    if "curand_kernel.h" not in device_source:
        return []
    import sys

    candidates = [cuda_home() / "include"]
    for entry in sys.path:
        candidates += sorted(Path(entry).glob("nvidia/*/include")) if entry and Path(entry).is_dir() else []
    for d in candidates:
        if (d / "curand_kernel.h").is_file():
            return [] if d == cuda_home() / "include" else [str(d)]
    raise NoToolchainError("the kernel draws random numbers (T.rng_init / T.rng_rand), which need cuRAND's "
                           "device headers (curand_kernel.h); they are not in the CUDA toolkit at "
                           f"{cuda_home()}: install its curand component or `pip install nvidia-curand`")


def device_flags(arch: str, options: CudaOptions) -> list[str]:
    flags = [f"-O{options.opt_level}", "-std=c++17", *gencode_flags(arch), *_QUIET]
    if options.fast_math:
        flags.append("--use_fast_math")
    if options.lineinfo:
        flags.append("-lineinfo")
    if options.ptxas_verbose:
        flags += ["-Xptxas", "-v"]
    return flags + list(options.extra_nvcc_flags)


def run(cmd: list[str], what: str, cwd: Path | None = None) -> tuple[str, float]:
    """Run a toolchain command; CompileError with its full output when it fails."""
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
    elapsed = time.perf_counter() - start
    log = (proc.stdout + proc.stderr).strip()
    if proc.returncode != 0:
        raise CompileError(f"{what} failed (exit {proc.returncode})", log=log, command=cmd)
    return log, elapsed


def performance_advisories(log: str) -> list[str]:
    """ptxas's "Potential Performance Loss" lines in a build log (printed without -v, by nvcc and
    NVRTC alike), each once, without the ``ptxas info :`` prefix."""
    found = []
    for line in log.splitlines():
        if "Potential Performance Loss" in line:
            advice = line.split(":", 1)[1].strip() if line.lstrip().startswith("ptxas") else line.strip()
            if advice not in found:
                found.append(advice)
    return found


def compile_cubin(device_source: str, arch: str, workdir: Path, options: CudaOptions,
                  name: str = "kernel") -> tuple[Path, str, float]:
    """Device code only -> ``<name>.cubin`` (for the split build and for SASS inspection)."""
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    src = workdir / f"{name}_device.cu"
    src.write_text(device_source)
    out = workdir / f"{name}.cubin"
    includes = [f"-I{d}" for d in extra_include_dirs(device_source)]
    cmd = [find_nvcc(), "-cubin", *device_flags(arch, options), *includes, str(src), "-o", str(out)]
    log, seconds = run(cmd, f"nvcc (device code for {arch})")
    return out, log, seconds


def compile_ptx(device_source: str, arch: str, workdir: Path, options: CudaOptions) -> str:
    """Device code -> PTX text (``--emit ptx``): nvcc's front end and optimizer, no ptxas."""
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    src, out = workdir / "kernel_device.cu", workdir / "kernel.ptx"
    src.write_text(device_source)
    flags = [f for f in device_flags(arch, options) if f != "-gencode" and not f.startswith("arch=")]
    cmd = [find_nvcc(), "-ptx", f"-arch=compute_{arch[len('sm_'):]}", *flags, str(src), "-o", str(out)]
    run(cmd, f"nvcc (PTX for {arch})")
    return out.read_text()


def prefers_nvrtc() -> bool:
    """device_compiler="auto": NVRTC (in-process, ~0.2-0.3 s less a kernel) where it is found,
    unless it is a release whose code is slower than nvcc's and nvcc is installed."""
    from . import nvrtc

    if not nvrtc.available():
        return False
    if nvrtc.slower_than_nvcc():
        try:
            find_nvcc()
        except CompileError:
            return True
        return False
    return True


def compile_device(device_source: str, arch: str, workdir: Path, options: CudaOptions,
                   name: str = "kernel") -> tuple[Path, str, float]:
    """Device code -> ``<name>.cubin`` with the compiler ``options.device_compiler`` picks."""
    from . import nvrtc

    choice = options.device_compiler
    # flags the user gave are nvcc's command line: NVRTC takes other options
    if choice == "nvcc" or (choice == "auto" and (options.extra_nvcc_flags or not prefers_nvrtc())):
        return compile_cubin(device_source, arch, workdir, options, name)
    try:
        data, log, seconds = nvrtc.compile_cubin(device_source, arch, options, f"{name}_device.cu")
    except CompileError as err:
        if choice == "nvrtc":
            raise
        # "auto": NVRTC is an accelerator, never a reason to fail; nvcc has the last word
        path, log, seconds = compile_cubin(device_source, arch, workdir, options, name)
        return path, f"NVRTC failed, used nvcc instead:\n{err}\n{log}", seconds
    path = Path(workdir) / f"{name}.cubin"
    path.write_bytes(data)
    (Path(workdir) / f"{name}_device.cu").write_text(device_source)
    return path, log, seconds


def with_host_helpers(source: str) -> str:
    """TVM's single .cu with the definitions of the host helpers its wrapper calls (the split
    build's host prelude has them, codegen.HOST_PRELUDE): the stream-ordered scratch memory of
    T.alloc_global workspaces and persistent kernels. Without them the library links (a shared
    library may leave symbols undefined) and the first call dies on an unresolved symbol."""
    from .hopper.intrinsics import SCRATCH_HOST

    if "tl_scratch_alloc(" in source and "tl_scratch_pool(" not in source:
        source += "\n#include <tvm/ffi/extra/c_env_api.h>\n" + SCRATCH_HOST
    return source


def compile_nvcc_shared(source: str, arch: str, workdir: Path, output: Path,
                        options: CudaOptions, name: str = "kernel") -> tuple[str, float]:
    """TVM's single .cu -> shared library with nvcc alone."""
    include, dlpack, lib_dir = _tvm_ffi_paths()
    src = Path(workdir) / f"{name}.cu"
    src.write_text(with_host_helpers(source))
    cmd = [find_nvcc(), *device_flags(arch, options), "-shared", "-Xcompiler", "-fPIC",
           f"-I{include}", f"-I{dlpack}", str(src), "-o", str(output), f"-L{lib_dir}", "-ltvm_ffi",
           "-lcudart", "-Xlinker", f"-rpath,{cuda_home() / 'lib64'}"]
    return run(cmd, f"nvcc (shared library for {arch})")


def build_shared_library(source: str, arch: str, workdir: Path, options: CudaOptions | None = None,
                         name: str = "kernel") -> BuildResult:
    """Exported .cu -> ``<workdir>/<name>.so`` loadable with ``tvm_ffi.load_module``."""
    options = options or CudaOptions()
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    output = workdir / f"{name}.so"
    start = time.perf_counter()
    if options.host_build == "nvcc":
        log, seconds = compile_nvcc_shared(source, arch, workdir, output, options, name)
        return BuildResult(output, None, {"nvcc": seconds, "total": time.perf_counter() - start}, log)
    parts = split_source(source)
    cubin = workdir / f"{name}.cubin"
    # Only the final link reads the cubin (.incbin), so nvcc (device) and the host compiler
    # (wrapper -> assembly) run side by side; the link waits for both.
    with ThreadPoolExecutor(max_workers=1) as pool:
        device = pool.submit(compile_device, parts.device, arch, workdir, options, name)
        host_src = Path(workdir) / f"{name}_host.cc"
        pre_start = time.perf_counter()
        include, dlpack, _ = _tvm_ffi_paths()
        asm = workdir / f"{name}_host.s"
        host_src.write_text(parts.host)
        cmd = [find_host_compiler(), "-O1", "-std=c++17", "-fPIC", "-w", "-S", f"-I{include}",
               f"-I{dlpack}", f"-I{cuda_home() / 'include'}", str(host_src), "-o", str(asm)]
        host_log, _ = run(cmd, "host C++ compiler (tvm-ffi wrapper)")
        host_front = time.perf_counter() - pre_start
        cubin, device_log, device_seconds = device.result()
    link_log, link_seconds = _assemble_and_link(asm, cubin, output)
    timings = {"device": device_seconds, "host": host_front + link_seconds,
               "host_link": link_seconds, "total": time.perf_counter() - start}
    log = "\n".join(x for x in (device_log, host_log, link_log) if x)
    return BuildResult(output, cubin, timings, log)


def _assemble_and_link(asm: Path, cubin: Path, output: Path) -> tuple[str, float]:
    _, _, lib_dir = _tvm_ffi_paths()
    embed = asm.with_name(asm.stem + "_cubin.s")
    embed.write_text(f'.section .rodata\n.global tl_cubin_data\n.balign 64\ntl_cubin_data:\n'
                     f'.incbin "{cubin}"\n.byte 0\n.section .note.GNU-stack,"",@progbits\n')
    cmd = [find_host_compiler(), "-shared", "-fPIC", str(asm), str(embed), "-o", str(output),
           f"-L{lib_dir}", "-ltvm_ffi", f"-L{cuda_home() / 'lib64'}",
           "-lcudart", f"-Wl,-rpath,{cuda_home() / 'lib64'}"]  # libcudart even before torch loads it
    return run(cmd, "linking the kernel library")


# -- SASS inspection ----------------------------------------------------------------------------

def find_cuobjdump() -> str | None:
    """cuobjdump from the toolkit, PATH, or the pip wheel nvidia-cuda-cuobjdump (nvidia/cu13/bin)."""
    for c in (cuda_home_or_none("bin/cuobjdump"), shutil.which("cuobjdump"), _pip_tool("cuobjdump")):
        if c and Path(c).is_file():
            return str(c)
    return None


def cuda_home_or_none(rel: str) -> str | None:
    try:
        return str(cuda_home() / rel)
    except CompileError:
        return None


def _pip_tool(name: str) -> str | None:
    try:
        import nvidia  # namespace package of the pip CUDA wheels
    except ImportError:
        return None
    for base in getattr(nvidia, "__path__", []):
        for sub in ("cu13", "cu12", "cuda_cuobjdump", "cuda_nvdisasm"):
            p = Path(base) / sub / "bin" / name
            if p.is_file():
                return str(p)
    return None


def sass(binary: Path) -> str:
    """SASS of a cubin or of a shared library with an embedded cubin (cuobjdump -sass)."""
    tool = find_cuobjdump()
    if tool is None:
        raise CompileError("cuobjdump not found: pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm")
    target = Path(binary)
    if target.suffix == ".so":
        raise CompileError("SASS of a split-built .so: disassemble its .cubin instead")
    out, _ = run([tool, "-sass", str(target)], "cuobjdump -sass")
    return out
