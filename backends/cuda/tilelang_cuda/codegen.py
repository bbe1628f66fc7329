"""CUDA source: TVM's CUDA codegen through the ``cuda_host`` route, and how we split it.

``tvm.tirx.build`` with a ``cuda`` target whose host is ``cuda_host`` gives one self-contained
``.cu``: device kernels first, then a tvm-ffi ABI wrapper per function that checks arguments and
launches on the current stream (TVM-NOTES). We keep that file as the "source" stage, and derive from
it two smaller translation units:

* the device part (everything before the first tvm-ffi include), compiled alone to a cubin: nvcc
  no longer parses tvm-ffi's C++ headers, which is most of its time;
* the host part, compiled by the host C++ compiler against a tiny prelude (``HOST_PRELUDE``) instead
  of ``tvm/ffi/function.h``; its launches go through kernel handles of the embedded cubin.

Example::

    lib = build_tvm_module(mod, "sm_90a")
    cu = export_source(lib)
    parts = split_source(cu)          # SplitSource(device=..., host=..., kernels=[...])
"""

from __future__ import annotations

import contextlib
import re
import threading
from dataclasses import dataclass

from tilelang_core.errors import CompileError

# The wrapper's first include marks where host code starts in the exported .cu.
_HOST_MARKER = "#include <tvm/ffi/c_api.h>"

_KERNEL_DECL = re.compile(
    r'extern "C" __global__ void (?:__launch_bounds__\(\d+(?:,\s*\d+)?\)\s*)?(\w+)\((.*?)\);', re.S)

_LAUNCH_HELPER = re.compile(
    r"template <typename\.\.\. Params, typename\.\.\. Args>\s*static cudaError_t tvm_cuda_host_launch"
    r".*?\n}\n", re.S)

#: Replaces tvm-ffi's C++ headers in the host translation unit: only the C ABI is needed. No C++
#: standard headers either (<mutex>, <tuple>, <atomic> cost the host compiler ~0.25 s): GCC/Clang
#: atomic builtins and a pthread mutex do the one-time kernel lookup.
HOST_PRELUDE = r"""#include <tvm/ffi/c_api.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdint.h>
#define TVM_DLL TVM_FFI_DLL_EXPORT
// The wrapper only casts data pointers to element types: opaque stand-ins of the right size do.
struct half { uint16_t bits; };
struct nv_bfloat16 { uint16_t bits; };
typedef nv_bfloat16 __nv_bfloat16;
typedef half __half;
struct __nv_fp8_e4m3 { uint8_t bits; };
struct __nv_fp8_e5m2 { uint8_t bits; };
// Thrown after an error was already set (checks of tensor-map operands): just return -1.
struct tl_raised {};
#define TVM_FFI_SAFE_CALL_BEGIN() try { (void)0
#define TVM_FFI_SAFE_CALL_END() return 0; } catch (tl_raised&) { return -1; } catch (...) { \
    TVMFFIErrorSetRaisedFromCStr("InternalError", "unexpected C++ exception in a kernel wrapper"); \
    return -1; }
namespace tvm { namespace ffi {
// Same contract as tvm/ffi/extra/cuda/device_guard.h, without exceptions.
struct CUDADeviceGuard {
  explicit CUDADeviceGuard(int device) : target_(device) {
    cudaGetDevice(&original_);
    if (original_ != target_) cudaSetDevice(target_);
  }
  ~CUDADeviceGuard() { if (original_ != target_) cudaSetDevice(original_); }
  int original_ = 0, target_ = 0;
};
}}  // namespace tvm::ffi
extern "C" const unsigned char tl_cubin_data[];
static cudaLibrary_t tl_library = nullptr;
static pthread_mutex_t tl_load_mutex = PTHREAD_MUTEX_INITIALIZER;
// One per kernel: the handle is resolved on first launch; the dynamic shared memory limit is
// raised once per (device, size). Both are one atomic load on the hot path.
struct TLKernelSlot {
  cudaKernel_t kernel;
  unsigned long long smem_devices;
  size_t smem;
};
static cudaError_t tl_get_kernel(TLKernelSlot* slot, const char* name, size_t smem, cudaKernel_t* out) {
  cudaKernel_t kernel = __atomic_load_n(&slot->kernel, __ATOMIC_ACQUIRE);
  if (kernel == nullptr) {
    pthread_mutex_lock(&tl_load_mutex);
    cudaError_t err = cudaSuccess;
    kernel = slot->kernel;
    if (kernel == nullptr && tl_library == nullptr) {
      err = cudaLibraryLoadData(&tl_library, tl_cubin_data, nullptr, nullptr, 0, nullptr, nullptr, 0);
    }
    if (kernel == nullptr && err == cudaSuccess) {
      err = cudaLibraryGetKernel(&kernel, tl_library, name);
      if (err == cudaSuccess) __atomic_store_n(&slot->kernel, kernel, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&tl_load_mutex);
    if (err != cudaSuccess) return err;
  }
  *out = kernel;
  // Opt in whenever dynamic shared memory is used: the 48 KB default limit counts static shared
  // memory too (mbarriers, reduction workspaces), so 48 KB of dynamic alone can already be over.
  if (smem > 0) {
    int device = 0;
    cudaError_t err = cudaGetDevice(&device);
    if (err != cudaSuccess) return err;
    unsigned long long bit = 1ull << (device & 63);
    if (__atomic_load_n(&slot->smem, __ATOMIC_RELAXED) != smem) {
      __atomic_store_n(&slot->smem, smem, __ATOMIC_RELAXED);
      __atomic_store_n(&slot->smem_devices, 0ull, __ATOMIC_RELAXED);
    }
    if (!(__atomic_load_n(&slot->smem_devices, __ATOMIC_RELAXED) & bit)) {
      err = cudaFuncSetAttribute((const void*)kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 (int)smem);
      if (err != cudaSuccess) return err;
      __atomic_fetch_or(&slot->smem_devices, bit, __ATOMIC_RELAXED);
    }
  }
  return cudaSuccess;
}
"""


#: Kernels with TMA encode tensor maps on the host (TVM's wrapper calls the driver's
#: cuTensorMapEncodeTiled). Resolved through the runtime's driver entry point, so the library
#: still links only libcudart and loads on any machine with a driver.
TENSOR_MAP_PRELUDE = r"""#include <cuda.h>
typedef CUresult (*tl_encode_tiled_fn)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
    const cuuint64_t*, const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
    CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
typedef CUresult (*tl_error_string_fn)(CUresult, const char**);
static void* tl_driver_symbol(const char* name, void** slot) {
  void* fn = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (fn == nullptr) {
    cudaDriverEntryPointQueryResult found;
    if (cudaGetDriverEntryPoint(name, &fn, cudaEnableDefault, &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess) return nullptr;
    __atomic_store_n(slot, fn, __ATOMIC_RELEASE);
  }
  return fn;
}
static CUresult tl_cuTensorMapEncodeTiled(CUtensorMap* map, CUtensorMapDataType dtype, cuuint32_t rank,
    void* data, const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box,
    const cuuint32_t* elem_strides, CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
    CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill fill) {
  static void* slot = nullptr;
  tl_encode_tiled_fn fn = (tl_encode_tiled_fn)tl_driver_symbol("cuTensorMapEncodeTiled", &slot);
  if (fn == nullptr) return CUDA_ERROR_NOT_FOUND;
  return fn(map, dtype, rank, data, dims, strides, box, elem_strides, interleave, swizzle, l2, fill);
}
static CUresult tl_cuGetErrorString(CUresult error, const char** text) {
  static void* slot = nullptr;
  tl_error_string_fn fn = (tl_error_string_fn)tl_driver_symbol("cuGetErrorString", &slot);
  if (fn == nullptr) return CUDA_ERROR_NOT_FOUND;
  return fn(error, text);
}
#define cuTensorMapEncodeTiled tl_cuTensorMapEncodeTiled
#define cuGetErrorString tl_cuGetErrorString
// TVM's checks of the tensor-map operands: `TVM_FFI_CHECK(cond, Kind) << "message";`
struct tl_check_stream {
  bool failed;
  const char* kind;
  tl_check_stream& operator<<(const char* message) {
    if (failed) { TVMFFIErrorSetRaisedFromCStr(kind, message); throw tl_raised(); }
    return *this;
  }
};
#define TVM_FFI_CHECK(cond, kind) tl_check_stream{!(cond), #kind}
"""


@dataclass(frozen=True)
class KernelDecl:
    """A ``__global__`` function of the device part: its name and host-side parameter types."""

    name: str
    params: tuple[str, ...]


@dataclass(frozen=True)
class SplitSource:
    device: str
    host: str
    kernels: tuple[KernelDecl, ...]


PIPELINE_NAME = "tilelang_cuda"


def _tir_pipeline():
    """TVM passes after our lowering: generic clean-up, codegen preparation, host/device split.

    Deliberately not the s_tir pipeline: its CompactBufferAllocation shrinks buffers to the
    elements it sees indexed, which is wrong for buffers we reach through pointers (ldmatrix,
    cp.async, mma write whole vectors), and its ThreadSync adds barriers we already placed.
    """
    import tvm
    from tvm import s_tir, tirx
    from tvm.tirx import compilation_pipeline as cp

    @tvm.transform.module_pass(opt_level=0, name="tilelang_cuda.TIRPipeline")
    def _pipeline(mod, _ctx):
        passes = [
            tirx.transform.FlattenBuffer(),
            tirx.transform.BF16ComputeLegalize(),
            tirx.transform.NarrowDataType(32),
            tirx.transform.VectorizeLoop(True),
            tirx.transform.UnrollLoop(),
            tirx.transform.StmtSimplify(),
            tirx.transform.RemoveNoOp(),
            tirx.transform.CommonSubexprElim(),
            tirx.transform.FP8ComputeLegalize(),
            tirx.transform.VerifyMemory(),
            tirx.transform.AnnotateEntryFunc(),
            tirx.transform.SplitHostDevice(),
            tirx.transform.MakePackedAPI(),
            tirx.transform.FP8StorageLegalize(),
            tirx.transform.BF16StorageLegalize(),
        ]
        return tvm.ir.transform.Sequential(passes)(mod)

    return _pipeline, cp.finalize_host_passes, cp.finalize_device_passes


def _ensure_pipeline() -> None:
    from tvm.tirx import compilation_pipeline as cp

    if PIPELINE_NAME not in cp.PIPELINE_MAP:
        cp.register_tir_pipeline(PIPELINE_NAME, _tir_pipeline)


def build_tvm_module(mod, arch: str):
    """Lowered IRModule -> TVM runtime module for ``cuda`` + ``cuda_host`` (TVM codegen, ~ms)."""
    import tvm

    _ensure_pipeline()
    target = tvm.target.Target({"kind": "cuda", "arch": arch, "host": {"kind": "cuda_host"}})
    try:
        with _no_device_compile_in_tvm():
            return tvm.tirx.build(mod, target=target, pipeline=PIPELINE_NAME)
    except Exception as exc:  # TVM errors carry the whole diagnostic
        raise CompileError(f"TVM's CUDA codegen failed for {arch}", log=str(exc)) from exc


_TVM_COMPILE_CALLBACK = "tvm_callback_cuda_compile"
_callback_lock = threading.Lock()


@contextlib.contextmanager
def _no_device_compile_in_tvm():
    """Keep TVM from compiling the device code during ``tvm.tirx.build``.

    Where a CUDA driver is present, TVM's CUDA build hands the generated source to its compile
    callback (NVRTC through cuda-bindings) before returning. We export that source, add our
    device helpers and compile it ourselves, so TVM's compile is wasted seconds at best, and at
    worst fails on the helpers it has not seen (seen on the H200: `tl_shfl_xor` undefined). The
    callback is process-global, hence the lock; the previous one is put back afterwards.
    """
    import tvm_ffi

    with _callback_lock:
        previous = tvm_ffi.get_global_func(_TVM_COMPILE_CALLBACK, allow_missing=True)
        tvm_ffi.register_global_func(_TVM_COMPILE_CALLBACK, lambda code, *rest: code.encode(), override=True)
        try:
            yield
        finally:
            if previous is not None:
                tvm_ffi.register_global_func(_TVM_COMPILE_CALLBACK, previous, override=True)
            else:
                tvm_ffi.remove_global_func(_TVM_COMPILE_CALLBACK)


def export_source(lib) -> str:
    """The single ``.cu`` (our device helpers + kernels + tvm-ffi wrapper) of a module built by
    ``build_tvm_module``. TVM's wrapper already raises the dynamic shared memory limit above 48 KB
    (cudaFuncSetAttribute) before launching."""
    import tvm.backend.cuda

    source = tvm.backend.cuda.export_cuda_host(lib)
    if not _LAUNCH_HELPER.search(source):
        raise CompileError("TVM's cuda_host wrapper changed shape: tvm_cuda_host_launch not found; "
                           "tilelang-cuda needs an update for this apache-tvm version")
    return insert_device_header(source)


def insert_device_header(source: str) -> str:
    """Put our device helpers (intrinsics.DEVICE_HEADER, and the sm_90a ones the kernel calls)
    before the first kernel."""
    from .hopper.intrinsics import hopper_header
    from .intrinsics import DEVICE_HEADER

    at = source.find('extern "C" __global__')
    if at < 0:
        return source
    hopper = hopper_header(source[at:])
    if hopper:
        # TMA boxes and wgmma operands with 128-byte swizzle sit on 1024-byte boundaries of the pool
        source = _DYNAMIC_SMEM_ALIGN.sub(r"extern __shared__ __align__(1024)", source)
    return source[:at] + DEVICE_HEADER + hopper + source[at:]


_DYNAMIC_SMEM_ALIGN = re.compile(r"extern __shared__ __align__\(\d+\)")


def _host_param_type(param: str) -> str:
    """A device parameter declaration -> a type the host compiler knows with the same ABI."""
    text = param.replace("__restrict__", " ").strip()
    text = re.sub(r"\s+", " ", text)
    if "*" in text:
        return "void*"
    type_part = text.rsplit(" ", 1)[0] if " " in text else text
    type_part = type_part.replace("const ", "").replace("__grid_constant__ ", "").strip()
    # fp16/bf16 scalars pass as their 16-bit pattern
    if type_part in ("half", "__half", "nv_bfloat16", "__nv_bfloat16"):
        return "uint16_t"
    return type_part


def kernel_decls(device_source: str) -> tuple[KernelDecl, ...]:
    decls = {}
    for match in _KERNEL_DECL.finditer(device_source):
        # parameters are pointers and scalars: no commas inside a declaration
        params = [p for p in match.group(2).split(",") if p.strip()]
        decls.setdefault(match.group(1), KernelDecl(match.group(1),
                                                    tuple(_host_param_type(p) for p in params)))
    return tuple(decls.values())


def split_source(source: str) -> SplitSource:
    """Cut the exported ``.cu`` into a device-only and a host-only translation unit."""
    at = source.find(_HOST_MARKER)
    if at < 0:
        raise CompileError("TVM's cuda_host export has no tvm-ffi wrapper; cannot split host/device")
    device, host = source[:at], source[at:]
    kernels = kernel_decls(device)
    host = _rewrite_host(host, kernels)
    return SplitSource(device=device, host=host, kernels=kernels)


def _launcher(index: int, kernel: KernelDecl) -> str:
    """A launcher for one kernel: arguments converted to the kernel's parameter types at the call,
    then passed by address (cudaLaunchKernelExC's convention)."""
    params = ", ".join(f"{t} a{i}" for i, t in enumerate(kernel.params))
    addresses = ", ".join(f"&a{i}" for i in range(len(kernel.params))) or "nullptr"
    sep = ", " if params else ""
    return (f"static TLKernelSlot tl_kernel_slot_{index};\n"
            f"static cudaError_t tl_launch_{index}(const cudaLaunchConfig_t* config{sep}{params}) {{\n"
            f"  cudaKernel_t kernel;\n"
            f"  cudaError_t err = tl_get_kernel(&tl_kernel_slot_{index}, \"{kernel.name}\", "
            f"config->dynamicSmemBytes, &kernel);\n"
            f"  if (err != cudaSuccess) return err;\n"
            f"  void* params[] = {{{addresses}}};\n"
            f"  return cudaLaunchKernelExC(config, (const void*)kernel, params);\n"
            f"}}\n")


def _rewrite_host(host: str, kernels: tuple[KernelDecl, ...]) -> str:
    # Drop tvm-ffi's C++ includes and the nvcc-only launch helper; keep the wrapper functions.
    lines = [ln for ln in host.splitlines() if not ln.startswith("#include")
             and not ln.startswith("#define TVM_DLL")]
    body = "\n".join(lines)
    body = _LAUNCH_HELPER.sub("", body, count=1)
    decls = []
    for i, k in enumerate(kernels):
        decls.append(_launcher(i, k))
        body = body.replace(f"tvm_cuda_host_launch(::{k.name}, ", f"tl_launch_{i}(")
    # TVM raises the shared memory limit on its own kernel symbol; tl_launch does it on the handle.
    body = re.sub(r"cudaFuncSetAttribute\(::\w+, cudaFuncAttributeMaxDynamicSharedMemorySize, \w+\)",
                  "cudaSuccess", body)
    if "tvm_cuda_host_launch(" in body:
        raise CompileError("could not rewrite every kernel launch of the host wrapper for the split "
                           "build; use pass config host_build='nvcc' and report this")
    prelude = HOST_PRELUDE + (TENSOR_MAP_PRELUDE if "CUtensorMap" in body else "")
    return prelude + "\n".join(decls) + "\n" + body + "\n"
