"""HIP C++ from TVM's CUDA printer: the same kernels, HIP declarations (see intrinsics.py).

The source stage is one text with two translation units separated by ``HOST_SEPARATOR``:

* device: ``intrinsics.device_prelude`` + the ``__global__`` kernels TVM printed (its CUDA
  preamble of includes and fp16 shims is dropped: the prelude declares what the kernels use);
* host: TVM's tvm-ffi wrapper (argument checks, then a launch), with ``HOST_PRELUDE`` mapping
  the few CUDA runtime names it uses onto the HIP module API, which it declares itself
  (libamdhip64's C ABI), so it compiles without HIP headers. Each launch goes through
  ``hipModuleLaunchKernel`` on a function of the embedded code object (``tl_code_object``),
  on the stream tvm-ffi reports for the arguments' device (torch's current stream).

Example::

    text = hip_source(mod, "mfma")
    parts = split(text)          # HipSource(device=..., host=..., kernels=(KernelDecl, ...))
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tilelang_core.errors import CompileError
from tilelang_core.simt.c_source import (KernelDecl, build_c_module, export_c_source, kernel_decls,
                                         split_exported)

from .intrinsics import device_prelude

HOST_SEPARATOR = "\n// ==== tilelang-hip: host translation unit ====\n"

_LAUNCH_HELPER = re.compile(
    r"template <typename\.\.\. Params, typename\.\.\. Args>\s*static cudaError_t tvm_cuda_host_launch"
    r".*?\n}\n", re.S)

#: The wrapper's CUDA runtime vocabulary on HIP, and the HIP module API declared (no HIP headers).
HOST_PRELUDE = r"""#include <tvm/ffi/c_api.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#define TVM_DLL TVM_FFI_DLL_EXPORT
extern "C" {
typedef int hipError_t;
typedef struct ihipModule_t* hipModule_t;
typedef struct ihipModuleSymbol_t* hipFunction_t;
typedef struct ihipStream_t* hipStream_t;
hipError_t hipModuleLoadData(hipModule_t* module, const void* image);
hipError_t hipModuleGetFunction(hipFunction_t* function, hipModule_t module, const char* name);
hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                 unsigned by, unsigned bz, unsigned shared_bytes, hipStream_t stream,
                                 void** params, void** extra);
hipError_t hipGetDevice(int* device);
hipError_t hipSetDevice(int device);
const char* hipGetErrorString(hipError_t error);
hipError_t hipGetLastError(void);
}
typedef hipError_t cudaError_t;
typedef hipStream_t cudaStream_t;
#define cudaSuccess 0
#define cudaErrorCudartUnloading 4 /* hipErrorDeinitialized */
#define cudaGetDevice hipGetDevice
#define cudaGetErrorString hipGetErrorString
#define cudaGetLastError hipGetLastError
#define kDLCUDA kDLROCM
struct half { uint16_t bits; };
struct nv_bfloat16 { uint16_t bits; };
typedef nv_bfloat16 __nv_bfloat16;
typedef half __half;
struct dim3 {
  unsigned x, y, z;
  dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
struct cudaLaunchConfig_t { dim3 gridDim, blockDim; size_t dynamicSmemBytes; cudaStream_t stream; };
#define TVM_FFI_SAFE_CALL_BEGIN() try { (void)0
#define TVM_FFI_SAFE_CALL_END() return 0; } catch (...) { \
    TVMFFIErrorSetRaisedFromCStr("InternalError", "unexpected C++ exception in a kernel wrapper"); \
    return -1; }
namespace tvm { namespace ffi {
struct CUDADeviceGuard {  // HIP's device, same contract as tvm-ffi's CUDA guard
  explicit CUDADeviceGuard(int device) : target_(device) {
    hipGetDevice(&original_);
    if (original_ != target_) hipSetDevice(target_);
  }
  ~CUDADeviceGuard() { if (original_ != target_) hipSetDevice(original_); }
  int original_ = 0, target_ = 0;
};
}}  // namespace tvm::ffi
extern "C" const unsigned char tl_code_object[];
static hipModule_t tl_module = nullptr;
static pthread_mutex_t tl_load_mutex = PTHREAD_MUTEX_INITIALIZER;
// The module loads on the first launch; each kernel's handle is looked up once.
static hipError_t tl_get_function(hipFunction_t* slot, const char* name, hipFunction_t* out) {
  hipFunction_t f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (f == nullptr) {
    pthread_mutex_lock(&tl_load_mutex);
    hipError_t err = 0;
    if (tl_module == nullptr) err = hipModuleLoadData(&tl_module, tl_code_object);
    if (err == 0) err = hipModuleGetFunction(&f, tl_module, name);
    if (err == 0) __atomic_store_n(slot, f, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&tl_load_mutex);
    if (err != 0) return err;
  }
  *out = f;
  return 0;
}
"""


@dataclass(frozen=True)
class HipSource:
    device: str
    host: str
    kernels: tuple[KernelDecl, ...]


def hip_source(mod, matrix_unit: str) -> str:
    """Lowered IRModule -> the source stage (device HIP C++, separator, host wrapper)."""
    exported = split_exported(export_c_source(build_c_module(mod, who="the hip backend")))
    device = device_prelude(matrix_unit, exported.kernels) + exported.kernels
    host = _rewrite_host(exported.host, kernel_decls(device))
    return device + HOST_SEPARATOR + host


def split(source: str) -> HipSource:
    if HOST_SEPARATOR not in source:
        raise CompileError("hip source has no host part (was it produced by tilelang-hip's codegen?)")
    device, host = source.split(HOST_SEPARATOR, 1)
    return HipSource(device, host, kernel_decls(device))


def _launcher(index: int, kernel: KernelDecl) -> str:
    params = "".join(f", {t} a{i}" for i, t in enumerate(kernel.params))
    addresses = ", ".join(f"&a{i}" for i in range(len(kernel.params))) or "nullptr"
    return (f"static hipFunction_t tl_function_{index} = nullptr;\n"
            f"static cudaError_t tl_launch_{index}(const cudaLaunchConfig_t* c{params}) {{\n"
            f"  hipFunction_t f;\n"
            f"  hipError_t err = tl_get_function(&tl_function_{index}, \"{kernel.name}\", &f);\n"
            f"  if (err != 0) return err;\n"
            f"  void* params[] = {{{addresses}}};\n"
            f"  return hipModuleLaunchKernel(f, c->gridDim.x, c->gridDim.y, c->gridDim.z, c->blockDim.x,\n"
            f"      c->blockDim.y, c->blockDim.z, (unsigned)c->dynamicSmemBytes, c->stream, params, nullptr);\n"
            f"}}\n")


def _rewrite_host(host: str, kernels: tuple[KernelDecl, ...]) -> str:
    lines = [ln for ln in host.splitlines() if not ln.startswith("#include") and not ln.startswith("#define TVM_DLL")]
    body = _LAUNCH_HELPER.sub("", "\n".join(lines), count=1)
    for i, k in enumerate(kernels):
        body = body.replace(f"tvm_cuda_host_launch(::{k.name}, ", f"tl_launch_{i}(")
    # tensors must be ROCm tensors (DLPack kDLROCM = 10), named so in the wrapper's messages
    body = re.sub(r"(\.device\.device_type\) == )2\)", r"\g<1>10)", body)
    body = body.replace('"`,\\n  expected ", "cuda"}', '"`,\\n  expected ", "rocm"}')
    # the launch's device (type, id) pair, which the wrapper compares with kDLCUDA (= kDLROCM here)
    body, count = re.subn(r"(\[0\]\.v_int64\) = \(\(int64_t\))2\)", r"\g<1>10)", body)
    if kernels and count == 0:
        raise CompileError("TVM's cuda_host wrapper changed shape: no launch device type to rewrite "
                           "for HIP; tilelang-hip needs an update for this apache-tvm version")
    # LDS is at most 64 KB on every supported arch: no opt-in attribute to raise
    body = re.sub(r"cudaFuncSetAttribute\(::\w+, cudaFuncAttributeMaxDynamicSharedMemorySize, \w+\)",
                  "cudaSuccess", body)
    if "tvm_cuda_host_launch(" in body or "device_type) == 2)" in body:
        raise CompileError("TVM's cuda_host wrapper changed shape: could not rewrite every launch or "
                           "device check for HIP; tilelang-hip needs an update for this apache-tvm")
    return HOST_PRELUDE + "".join(_launcher(i, k) for i, k in enumerate(kernels)) + body + "\n"
