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

import re
from dataclasses import dataclass

from tilelang_core.errors import CompileError
from tilelang_core.simt import c_source

from .hopper.intrinsics import DRIVER_SHIMS_HOST, NUM_SMS_HOST, SCRATCH_HOST
from .vector_casts import VECTOR_CASTS

# The wrapper's first include marks where host code starts in the exported .cu.
_HOST_MARKER = c_source.HOST_MARKER

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
// The device a wrapper's guard made current (-1 outside a guarded call): the stream lookup and
// the shared memory opt-in read it instead of asking cudaGetDevice again (each call ~0.05-0.15
// us on the H200's hosts, measured by bench/cuda_launch_floor.py's "wrapper steps").
static thread_local int tl_device = -1;
namespace tvm { namespace ffi {
// Same contract as tvm/ffi/extra/cuda/device_guard.h, without exceptions.
struct CUDADeviceGuard {
  explicit CUDADeviceGuard(int device) : target_(device) {
    cudaGetDevice(&original_);
    if (original_ != target_ && cudaSetDevice(target_) != cudaSuccess) target_ = original_;
    tl_device = target_;
  }
  ~CUDADeviceGuard() {
    if (original_ != target_) cudaSetDevice(original_);
    tl_device = -1;
  }
  int original_ = 0, target_ = 0;
};
}}  // namespace tvm::ffi
static cudaError_t tl_current_device(int* device) {
  if (tl_device >= 0) {
    *device = tl_device;
    return cudaSuccess;
  }
  return cudaGetDevice(device);
}
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
    cudaError_t err = tl_current_device(&device);
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
TENSOR_MAP_PRELUDE = "#include <cuda.h>\n" + DRIVER_SHIMS_HOST + NUM_SMS_HOST + r"""// TVM's checks of the tensor-map operands: `TVM_FFI_CHECK(cond, Kind) << "message";`
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
class SplitSource:
    device: str
    host: str
    kernels: tuple[c_source.KernelDecl, ...]


def build_tvm_module(mod, arch: str):
    """Lowered IRModule -> TVM runtime module for ``cuda`` + ``cuda_host`` (TVM codegen, ~ms),
    through the SIMT kit's C-style emitter (tilelang_core.simt.c_source)."""
    return c_source.build_c_module(mod, printer_arch=arch, who=f"cuda {arch}", vector_casts=VECTOR_CASTS)


def export_source(lib, alignments: dict[str, int] | None = None) -> str:
    """The single ``.cu`` (our device helpers + kernels + tvm-ffi wrapper) of a module built by
    ``build_tvm_module``. TVM's wrapper already raises the dynamic shared memory limit above 48 KB
    (cudaFuncSetAttribute) before launching. ``alignments``: the data alignment each tensor
    parameter's code assumes, by name; the wrapper refuses a less aligned pointer
    (``with_alignment_checks``)."""
    import tvm.backend.cuda

    source = tvm.backend.cuda.export_cuda_host(lib)
    if not _LAUNCH_HELPER.search(source):
        raise CompileError("TVM's cuda_host wrapper changed shape: tvm_cuda_host_launch not found; "
                           "tilelang-cuda needs an update for this apache-tvm version")
    return insert_device_header(with_alignment_checks(source, alignments or {}))


# TVM's wrapper tests each tensor's data pointer for NULL in a block of this shape (with dynamic
# extents the test is `size == 0 || data != NULL`)
_NULL_CHECK = re.compile(r"  if \(.*\(\(\(DLTensor\*\)(\w+)_handle\)\[0\]\.data\)\) == NULL.*\{\n"
                         r"(?:    .*\n)*?    return -1;\n  \}\n")


def with_alignment_checks(source: str, alignments: dict[str, int]) -> str:
    """TVM's wrapper with, after each tensor's NULL test, a test that its data pointer has the
    alignment the kernel's code assumes (vector loads of a misaligned pointer fault). The JIT's
    launcher then leaves that test to the wrapper (``CudaBackend.entry_checks_alignment``): ~60 ns
    a tensor less per call from Python. A refused call raises ValueError before any launch."""
    tested = set()

    def add(match):
        name = match.group(1)
        tested.add(name)
        alignment = alignments.get(name, 1)
        if alignment <= 1:
            return match.group(0)
        return (match.group(0)
                + f"  if (((uintptr_t)(((DLTensor*){name}_handle)[0].data)) % {alignment}) {{\n"
                + f'    TVMFFIErrorSetRaisedFromCStr("ValueError", "{name}: data pointer is not '
                + f'{alignment}-byte aligned");\n'
                + "    return -1;\n  }\n")

    out = _NULL_CHECK.sub(add, source)
    missing = {n for n, a in alignments.items() if a > 1} - tested
    if missing:
        raise CompileError(f"TVM's cuda_host wrapper has no data pointer test for {sorted(missing)}: "
                           "tilelang-cuda needs an update for this apache-tvm version")
    return out


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
    return _PAREN_IF.sub("#if 1 && (", source[:at] + DEVICE_HEADER + hopper + source[at:])


_DYNAMIC_SMEM_ALIGN = re.compile(r"extern __shared__ __align__\(\d+\)")
#: TVM's preamble tests (``#if ((__CUDACC_VER_MAJOR__ ...``) become ``#if 1 && (...``, the same
#: condition: TileLang's tests look for "if (" in the device code to find bounds checks, and a
#: kernel with none has no other
_PAREN_IF = re.compile(r"^#if \(", re.M)


def insert_imported_sources(source: str, imported: list[str]) -> str:
    """The kernel's own device source (T.import_source, tilelang_core/ir/import_source.py) after
    our helpers, before the first kernel, where its T.call_extern calls find it."""
    at = source.find('extern "C" __global__')
    if not imported or at < 0:
        return source
    block = "".join(f"// T.import_source\n{text.rstrip()}\n\n" for text in imported)
    return source[:at] + block + source[at:]


def split_source(source: str) -> SplitSource:
    """Cut the exported ``.cu`` into a device-only and a host-only translation unit."""
    at = source.find(_HOST_MARKER)
    if at < 0:
        raise CompileError("TVM's cuda_host export has no tvm-ffi wrapper; cannot split host/device")
    device, host = source[:at], source[at:]
    kernels = c_source.kernel_decls(device)
    host = _rewrite_host(host, kernels, _launch_attributes(device, kernels))
    return SplitSource(device=device, host=host, kernels=kernels)


#: helper call in a kernel body -> the launch attribute it needs (id, value field = 1)
_LAUNCH_ATTRIBUTES = {
    # T.pdl_sync: may start before the previous kernel on the stream ends, waiting for its memory there
    "tl_pdl_sync()": ("cudaLaunchAttributeProgrammaticStreamSerialization", "programmaticStreamSerializationAllowed"),
    # T.sync_grid: every block resident at once, with the grid barrier's workspace
    "tl_sync_grid()": ("cudaLaunchAttributeCooperative", "cooperative"),
}


def _launch_attributes(device: str, kernels) -> dict[str, list[tuple[str, str]]]:
    """Kernel name -> the launch attributes its body's helper calls need (_LAUNCH_ATTRIBUTES)."""
    found = {}
    for k in kernels:
        start = re.search(rf"__global__ void[^;{{]*\b{k.name}\([^)]*\)\s*\{{", device)
        if start is None:
            continue
        end = device.find('extern "C" __global__', start.end())
        body = device[start.end(): end if end >= 0 else len(device)]
        attrs = [attr for call, attr in _LAUNCH_ATTRIBUTES.items() if call in body]
        if attrs:
            found[k.name] = attrs
    return found


def _launcher(index: int, kernel: c_source.KernelDecl, attributes=()) -> str:
    """A launcher for one kernel: arguments converted to the kernel's parameter types at the call,
    then passed by address (cudaLaunchKernelExC's convention), with the launch ``attributes``
    (_LAUNCH_ATTRIBUTES) its body needs added to the caller's."""
    params = ", ".join(f"{t} a{i}" for i, t in enumerate(kernel.params))
    addresses = ", ".join(f"&a{i}" for i in range(len(kernel.params))) or "nullptr"
    sep = ", " if params else ""
    launch = "  return cudaLaunchKernelExC(config, (const void*)kernel, params);\n"
    if attributes:
        n = len(attributes)
        launch = (f"  if (config->numAttrs > {8 - n}) return cudaErrorInvalidValue;\n"
                  "  cudaLaunchConfig_t ex_config = *config;\n"
                  "  cudaLaunchAttribute ex_attrs[8];\n"
                  "  for (unsigned i = 0; i < config->numAttrs; ++i) ex_attrs[i] = config->attrs[i];\n"
                  + "".join(f"  ex_attrs[config->numAttrs + {i}].id = {attr};\n"
                            f"  ex_attrs[config->numAttrs + {i}].val.{field} = 1;\n"
                            for i, (attr, field) in enumerate(attributes))
                  + "  ex_config.attrs = ex_attrs;\n"
                  f"  ex_config.numAttrs = config->numAttrs + {n};\n"
                  "  return cudaLaunchKernelExC(&ex_config, (const void*)kernel, params);\n")
    return (f"static TLKernelSlot tl_kernel_slot_{index};\n"
            f"static cudaError_t tl_launch_{index}(const cudaLaunchConfig_t* config{sep}{params}) {{\n"
            f"  cudaKernel_t kernel;\n"
            f"  cudaError_t err = tl_get_kernel(&tl_kernel_slot_{index}, \"{kernel.name}\", "
            f"config->dynamicSmemBytes, &kernel);\n"
            f"  if (err != cudaSuccess) return err;\n"
            f"  void* params[] = {{{addresses}}};\n"
            + launch + "}\n")


def _rewrite_host(host: str, kernels: tuple[c_source.KernelDecl, ...], attributes: dict | None = None) -> str:
    # Drop tvm-ffi's C++ includes and the nvcc-only launch helper; keep the wrapper functions.
    lines = [ln for ln in host.splitlines() if not ln.startswith("#include")
             and not ln.startswith("#define TVM_DLL")]
    body = "\n".join(lines)
    body = _LAUNCH_HELPER.sub("", body, count=1)
    decls = []
    for i, k in enumerate(kernels):
        decls.append(_launcher(i, k, (attributes or {}).get(k.name, ())))
        body = body.replace(f"tvm_cuda_host_launch(::{k.name}, ", f"tl_launch_{i}(")
    # the stream's device is the one the wrapper's guard just made current
    body = re.sub(r"cudaGetDevice\(&(cuda_device\w*)\)", r"tl_current_device(&\1)", body)
    # TVM raises the shared memory limit on its own kernel symbol; tl_launch does it on the handle.
    body = re.sub(r"cudaFuncSetAttribute\(::\w+, cudaFuncAttributeMaxDynamicSharedMemorySize, \w+\)",
                  "cudaSuccess", body)
    if "tvm_cuda_host_launch(" in body:
        raise CompileError("could not rewrite every kernel launch of the host wrapper for the split "
                           "build; use pass config host_build='nvcc' and report this")
    prelude = HOST_PRELUDE + (TENSOR_MAP_PRELUDE if "CUtensorMap" in body else "") + \
        (SCRATCH_HOST if "tl_scratch_alloc" in body else "")
    return prelude + "\n".join(decls) + "\n" + body + "\n"
