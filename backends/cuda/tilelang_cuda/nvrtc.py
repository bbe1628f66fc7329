"""Device code to a cubin in-process with NVRTC (ctypes; no cuda-python needed).

NVRTC skips nvcc's process start-up and host preprocessing, the fixed ~0.3 s of every nvcc call.
``libnvrtc.so`` is looked up in the toolkit (``<cuda>/lib64``), then in the pip wheel
``nvidia-cuda-nvrtc`` (``nvidia/cu13/lib``), then on the loader path.

Example::

    cubin = compile_cubin(device_source, "sm_90a", options)     # bytes
"""

from __future__ import annotations

import ctypes
import functools
import time
from pathlib import Path

from tilelang_core.errors import CompileError

from .options import CudaOptions


# TVM's preamble pulls libcu++ (<cuda/std/cstdint>, <cuda/std/type_traits>) into NVRTC builds:
# 1.1 s of parsing for eight integer typedefs and four traits. The same names, declared directly:
_LIGHT_RTC_PRELUDE = """#ifdef __CUDACC_RTC__
  typedef signed char int8_t; typedef unsigned char uint8_t;
  typedef short int16_t; typedef unsigned short uint16_t;
  typedef int int32_t; typedef unsigned int uint32_t;
  typedef long long int64_t; typedef unsigned long long uint64_t;
  namespace std {
    using ::int8_t; using ::uint8_t; using ::int16_t; using ::uint16_t;
    using ::int32_t; using ::uint32_t; using ::int64_t; using ::uint64_t;
    template <class A, class B> struct is_same { static constexpr bool value = false; };
    template <class A> struct is_same<A, A> { static constexpr bool value = true; };
    template <class A, class B> constexpr bool is_same_v = is_same<A, B>::value;
    template <bool C, class T = void> struct enable_if {};
    template <class T> struct enable_if<true, T> { typedef T type; };
    template <bool C, class T, class F> struct conditional { typedef T type; };
    template <class T, class F> struct conditional<false, T, F> { typedef F type; };
  }
  #ifndef __asm__
  #define __asm__ asm
  #endif
  #ifndef __volatile__
  #define __volatile__ volatile
  #endif
#else"""


def light_prelude(source: str) -> str:
    """``source`` with TVM's NVRTC preamble branch replaced by ``_LIGHT_RTC_PRELUDE`` (unchanged
    when the preamble is not where we expect it)."""
    start = source.find("#ifdef __CUDACC_RTC__")
    end = source.find("#else", start)
    if start < 0 or end < 0 or end - start > 2000:
        return source
    return source[:start] + _LIGHT_RTC_PRELUDE + source[end + len("#else"):]


def _candidates() -> list[str]:
    out = []
    try:
        from .compiler import cuda_home

        out += [str(p) for p in sorted((cuda_home() / "lib64").glob("libnvrtc.so*"))]
    except CompileError:
        pass
    try:
        import nvidia  # namespace package of the pip CUDA wheels

        for base in getattr(nvidia, "__path__", []):
            out += [str(p) for p in sorted(Path(base).glob("cu1*/lib/libnvrtc.so*"))]
    except ImportError:
        pass
    return out + ["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"]


@functools.lru_cache(maxsize=1)
def library():
    """The loaded libnvrtc, or None when there is none."""
    for name in _candidates():
        if "builtins" in name:
            continue
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        lib.nvrtcGetErrorString.restype = ctypes.c_char_p
        return lib
    return None


def available() -> bool:
    return library() is not None


def version_tuple() -> tuple[int, int] | None:
    lib = library()
    if lib is None:
        return None
    major, minor = ctypes.c_int(), ctypes.c_int()
    lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    return major.value, minor.value


def version() -> str:
    found = version_tuple()
    return "none" if found is None else f"nvrtc {found[0]}.{found[1]}"


#: The first NVRTC release whose device code matches nvcc's from the same source. Before it the
#: PTX leaves 64-bit address arithmetic unnarrowed: the causal mma.sync attention loop on sm_90a
#: is 1150 instructions / 94 IADD3 with NVRTC 13.0 against 1075 / 22 from nvcc 13.0 and from NVRTC
#: 13.1 to 13.5, and 1144-1150 / 92-96 with every NVRTC 12 release, 12.0 to 12.9 (pip wheels; its
#: PTX through ptxas 13.0 gives the same, so the PTX is the cause); the mma.sync GEMM loop 271-273
#: against 253, the wgmma kernels 2-15% more instructions. On the H200, NVRTC 13.0's code ran
#: 0.3-5.6% slower over eight kernels (bench/NOTES.md, s11, s12; bench/ptxas_level.py).
#: device_compiler="auto" takes nvcc over an older NVRTC where nvcc is installed.
AS_FAST_AS_NVCC = (13, 1)


def slower_than_nvcc() -> bool:
    found = version_tuple()
    return found is not None and found < AS_FAST_AS_NVCC


def options_for(arch: str, options: CudaOptions, include_dirs: list[str]) -> list[str]:
    flags = [f"--gpu-architecture={arch}", "-std=c++17", "-default-device",
             "--diag-suppress=174,177,550,1046,1444"]
    flags += [f"-I{d}" for d in include_dirs]
    if options.fast_math:
        flags.append("--use_fast_math")
    if options.lineinfo:
        flags.append("-lineinfo")
    if options.ptxas_verbose:
        flags.append("--ptxas-options=-v")
    return flags


def compile_cubin(source: str, arch: str, options: CudaOptions, name: str = "kernel.cu") -> tuple[bytes, str, float]:
    """(cubin bytes, log, seconds). CompileError with NVRTC's log when compilation fails."""
    lib = library()
    if lib is None:
        raise CompileError("NVRTC is not available: install the CUDA toolkit's libnvrtc or "
                           "`pip install nvidia-cuda-nvrtc`, or use device_compiler='nvcc'")
    from .compiler import cuda_home, extra_include_dirs

    start = time.perf_counter()
    include = cuda_home() / "include"
    # CUDA 13 keeps libcu++ (<cuda/std/...>, which TVM's NVRTC preamble includes) under cccl/
    flags = options_for(arch, options, [str(include), str(include / "cccl"), *extra_include_dirs(source)])
    prog = ctypes.c_void_p()
    source = light_prelude(source)
    _check(lib, lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), 0, None, None),
           "nvrtcCreateProgram")
    try:
        argv = (ctypes.c_char_p * len(flags))(*[f.encode() for f in flags])
        status = lib.nvrtcCompileProgram(prog, len(flags), argv)
        log = _log(lib, prog)
        if status != 0:
            raise CompileError(f"NVRTC failed to compile the device code for {arch} "
                               f"({lib.nvrtcGetErrorString(status).decode()})", log=log,
                               command=["nvrtc", *flags])
        size = ctypes.c_size_t()
        _check(lib, lib.nvrtcGetCUBINSize(prog, ctypes.byref(size)), "nvrtcGetCUBINSize")
        buf = ctypes.create_string_buffer(size.value)
        _check(lib, lib.nvrtcGetCUBIN(prog, buf), "nvrtcGetCUBIN")
        return buf.raw, log, time.perf_counter() - start
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


def _log(lib, prog) -> str:
    size = ctypes.c_size_t()
    if lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size)) != 0 or size.value <= 1:
        return ""
    buf = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, buf)
    return buf.value.decode(errors="replace").strip()


def _check(lib, status: int, what: str) -> None:
    if status != 0:
        raise CompileError(f"{what} failed: {lib.nvrtcGetErrorString(status).decode()}")
