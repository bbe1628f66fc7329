"""Device helpers of the sm_90a path: wgmma, mbarriers, TMA, proxy fences, setmaxnreg.

Like ``tilelang_cuda.intrinsics``, the lowering calls these by name (``call_extern``) and codegen
splices their definitions into the device source. The wgmma helpers are generated per shape and
only for the names the kernel uses: one ``m64n256k16`` helper binds 128 accumulator registers, so
defining every N for every kernel would cost nvcc seconds for nothing.

Names the lowering emits (``<ta, tb>`` are the transpose immediates, 0 = K-major operand)::

    tl_wgmma_ss_<f16|bf16|e4m3|e5m2>_n<N><ta, tb>(float* d, u64 desc_a, u64 desc_b, int accumulate)
    tl_wgmma_rs_<f16|bf16>_n<N><tb>(float* d, const void* a_regs, u64 desc_b, int accumulate)
    tl_wgmma_<ss|rs>_f16_n<N>_f16acc<...>(void* d, ...)   (fp16 operands into an fp16 accumulator)
    tl_wgmma_desc<mode = 1>(const void* smem, unsigned lbo_bytes, unsigned sbo_bytes)  -> u64 (1: 128B, 2: 64B swizzle)
    tl_wgmma_fence() / tl_wgmma_commit() / tl_wgmma_wait<n>() / tl_wgmma_fence_operand<n>(float*)
    tl_wgmma_fence_regs<n>(void*)   (A operand registers, 32-bit words)
    tl_mbar_init(void* bar, count) / tl_mbar_expect_tx(bar, bytes) / tl_mbar_arrive(bar)
    tl_mbar_wait(bar, parity) / tl_fence_barrier_init() / tl_fence_proxy_async()
    tl_tma_load<rank>(void* smem, u64 tensor_map_address, void* bar, c0, ..., c<rank-1>)
    tl_tma_store<rank>(void* smem, u64 tensor_map_address, c0, ...)        (kernels that store by TMA)
    tl_tma_reduce_add<rank>(void* smem, u64 tensor_map_address, c0, ...)   (kernels that add by TMA)
    tl_bulk_commit() / tl_bulk_wait_read<n>()     (either)
    tl_setmaxnreg_inc<n>() / tl_setmaxnreg_dec<n>() / tl_named_barrier_sync|arrive(id, threads)

The register and descriptor conventions follow the PTX ISA sections on wgmma (matrix
descriptors, 128-byte swizzle canonical layouts) and were checked on the H200 with a hand-written
kernel before the compiler used them (bench/NOTES.md, 2026-11-29).
"""

from __future__ import annotations

import re

#: Host side of persistent kernels: resident CTAs = SMs of the current device, cached per
#: device. Needed in both host translation units (codegen.TENSOR_MAP_PRELUDE, and here for nvcc's
#: single-file build), so written once.
NUM_SMS_HOST = r"""extern "C" int32_t tl_num_sms() {
  static int counts[64];
  int device = 0;
  cudaGetDevice(&device);
  int* slot = &counts[device & 63];
  if (*slot == 0) cudaDeviceGetAttribute(slot, cudaDevAttrMultiProcessorCount, device);
  return *slot;
}
// A host value the compiler does not look through (stream_k.py's tail size, a Select over the SM
// count: bound as itself, TVM's simplifier expanded it into every later use, ~0.3 s a kernel).
extern "C" int32_t tl_opaque_i32(int32_t value) { return value; }
"""

#: Host side of TMA kernels: the driver functions TVM's wrapper calls (cuTensorMapEncodeTiled, and
#: cuGetErrorString on failure), resolved through the runtime's driver entry point, so a library
#: links only libcudart and loads on any machine with a driver. In both host translation units
#: like NUM_SMS_HOST: without it nvcc's single-file build (host_build="nvcc") left them undefined,
#: and the first launch of a TMA kernel killed the process (symbol lookup error).
DRIVER_SHIMS_HOST = r"""typedef CUresult (*tl_encode_tiled_fn)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
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
"""

#: Host side of per-launch scratch memory: the dynamic tile scheduler's counter
#: (tile_scheduler.py) and the stream-K workspace (stream_k.py), allocated on the launch stream
#: with its first ``zeroed`` bytes cleared (0 bytes: nothing allocated, a non-null dummy), and
#: freed the same way after the launch
#: (stream-ordered: concurrent launches never share one). From a memory pool of our own that keeps
#: what it has mapped: the device's default pool gives its memory back at every synchronization,
#: and mapping 17 MB again cost each stream-K launch ~20 us on the H200 (bench/NOTES.md). Both
#: host translation units; needs tvm/ffi/extra/c_env_api.h for the stream.
SCRATCH_HOST = r"""static cudaMemPool_t tl_scratch_pool(int device) {
  static cudaMemPool_t pools[64];
  cudaMemPool_t* slot = &pools[device & 63];
  cudaMemPool_t pool = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (pool != nullptr) return pool;
  cudaMemPoolProps props = {};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  if (cudaMemPoolCreate(&pool, &props) != cudaSuccess) return nullptr;
  unsigned long long keep = ~0ull;
  cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
  cudaMemPool_t none = nullptr;
  if (!__atomic_compare_exchange_n(slot, &none, pool, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    cudaMemPoolDestroy(pool);  // another thread made this device's pool first
    return none;
  }
  return pool;
}
static char tl_scratch_none;  // what a request for 0 bytes gets: not null, nothing to free
extern "C" void* tl_scratch_alloc(int64_t bytes, int64_t zeroed) {
  if (bytes == 0) return &tl_scratch_none;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return nullptr;
  cudaMemPool_t pool = tl_scratch_pool(device);
  if (pool == nullptr) return nullptr;
  cudaStream_t stream = static_cast<cudaStream_t>(TVMFFIEnvGetStream(kDLCUDA, device));
  void* scratch = nullptr;
  if (cudaMallocFromPoolAsync(&scratch, static_cast<size_t>(bytes), pool, stream) != cudaSuccess) return nullptr;
  if (cudaMemsetAsync(scratch, 0, static_cast<size_t>(zeroed), stream) != cudaSuccess) {
    cudaFreeAsync(scratch, stream);
    return nullptr;
  }
  return scratch;
}
extern "C" int32_t tl_scratch_free(void* scratch) {
  if (scratch == &tl_scratch_none) return 0;
  int device = 0;
  cudaGetDevice(&device);
  return cudaFreeAsync(scratch, static_cast<cudaStream_t>(TVMFFIEnvGetStream(kDLCUDA, device))) == cudaSuccess ? 0 : -1;
}
"""


def scratch_statements(var, total_bytes, zeroed_bytes, what: str) -> tuple[list, list]:
    """(host statements before the launch, after it) that bind ``var`` to SCRATCH_HOST's memory
    (``total_bytes``, the first ``zeroed_bytes`` cleared) and free it; a failed allocation raises
    RuntimeError naming ``what``."""
    from tvm import ir, tirx

    alloc = tirx.Bind(var, tirx.call_extern("handle", "tl_scratch_alloc", total_bytes, zeroed_bytes))
    # (condition, kind, message): the order TVM's constructor takes, not its Python stub's
    check = tirx.AssertStmt(tirx.Not(tirx.isnullptr(var)), ir.StringImm("RuntimeError"), [ir.StringImm(
        f"could not allocate {what} (the stream-ordered allocation on the launch stream failed)")])
    return [alloc, check], [tirx.Evaluate(tirx.call_extern("int32", "tl_scratch_free", var))]


HOPPER_HEADER = r"""
// ---- tilelang-cuda sm_90a helpers ---------------------------------------------------------------
#ifdef __CUDACC_RTC__
// NVRTC has no cuda.h: the tensor map is 128 opaque bytes, 64-byte aligned (cuda.h's layout).
#ifndef CU_TENSOR_MAP_NUM_QWORDS
struct alignas(64) CUtensorMap_st { unsigned long long opaque[16]; };
typedef struct CUtensorMap_st CUtensorMap;
#endif
#endif
// Matrix descriptor: start address, leading and stride byte offsets (>> 4), swizzle mode in bits
// 62-63 (1: 128-byte swizzle, 2: 64-byte).
template <int Mode = 1>
__device__ __forceinline__ unsigned long long tl_wgmma_desc(const void* smem, unsigned lbo, unsigned sbo) {
  unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  return static_cast<unsigned long long>((addr >> 4) & 0x3FFF) |
         (static_cast<unsigned long long>((lbo >> 4) & 0x3FFF) << 16) |
         (static_cast<unsigned long long>((sbo >> 4) & 0x3FFF) << 32) | (static_cast<unsigned long long>(Mode) << 62);
}
__device__ __forceinline__ void tl_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void tl_wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void tl_wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" :: "n"(N) : "memory"); }
// Ties the accumulator registers to this point: nvcc may not move their uses across a wait.
template <int N>
__device__ __forceinline__ void tl_wgmma_fence_operand(float* d) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i]) :: "memory");
}
// The same for 32-bit registers (an A operand wgmma reads from registers, packed 16-bit pairs).
template <int N>
__device__ __forceinline__ void tl_wgmma_fence_regs(void* a) {
  uint32_t* r = reinterpret_cast<uint32_t*>(a);
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+r"(r[i]) :: "memory");
}
// Writes of the generic proxy (st.shared, cp.async) become visible to wgmma/TMA (async proxy).
__device__ __forceinline__ void tl_fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
__device__ __forceinline__ void tl_fence_barrier_init() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }
__device__ __forceinline__ void tl_mbar_init(void* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" :: "r"(static_cast<unsigned>(__cvta_generic_to_shared(bar))), "r"(count));
}
__device__ __forceinline__ void tl_mbar_expect_tx(void* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n"
               :: "r"(static_cast<unsigned>(__cvta_generic_to_shared(bar))), "r"(bytes) : "memory");
}
__device__ __forceinline__ void tl_mbar_arrive(void* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n"
               :: "r"(static_cast<unsigned>(__cvta_generic_to_shared(bar))) : "memory");
}
__device__ __forceinline__ void tl_mbar_wait(void* bar, int parity) {
  asm volatile("{\n.reg .pred p;\nTL_WAIT_%=:\n"
               "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
               "@!p bra TL_WAIT_%=;\n}\n"
               :: "r"(static_cast<unsigned>(__cvta_generic_to_shared(bar))), "r"(parity) : "memory");
}
// TMA tile loads; boxes past the tensor's edge are zero-filled and still count their full bytes.
template <int RANK>
__device__ __forceinline__ void tl_tma_load(void* smem, unsigned long long map, void* bar,
                                            int c0, int c1 = 0, int c2 = 0, int c3 = 0, int c4 = 0) {
  unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  unsigned mbar = static_cast<unsigned>(__cvta_generic_to_shared(bar));
@TMA_LOAD_BY_RANK@}
template <int N>
__device__ __forceinline__ void tl_setmaxnreg_inc() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" :: "n"(N)); }
template <int N>
__device__ __forceinline__ void tl_setmaxnreg_dec() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" :: "n"(N)); }
#ifndef __CUDACC_RTC__
// Host side of persistent and TMA kernels in nvcc's single-file build (the split build's host
// prelude carries the same definitions).
#include <cuda.h>
""" + DRIVER_SHIMS_HOST + NUM_SMS_HOST + r"""#if __has_include(<tvm/ffi/extra/c_env_api.h>)
#include <tvm/ffi/extra/c_env_api.h>
""" + SCRATCH_HOST + r"""#endif
#endif
// The dynamic tile scheduler's claim: the next tile of the launch (tile_scheduler.py).
__device__ __forceinline__ int tl_claim_tile(void* counter) { return atomicAdd(static_cast<int*>(counter), 1); }
// Stream-K (stream_k.py): a CTA's partial sums are in its workspace slot (the consumers' stores
// ordered before this by their barrier; the release makes them visible with the flag), and a
// finisher waits for a lower CTA's flag before its barrier and loads.
__device__ __forceinline__ void tl_stream_k_publish(void* flags, int cta) {
  asm volatile("st.release.gpu.global.b32 [%0], %1;\n" :: "l"(static_cast<int*>(flags) + cta), "r"(1) : "memory");
}
__device__ __forceinline__ void tl_stream_k_wait(void* flags, int cta) {
  int ready = 0;
  do {
    asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(ready) : "l"(static_cast<int*>(flags) + cta) : "memory");
  } while (ready == 0);
}
// Barrier among a subset of the block's warps (the consumer warpgroups of a specialized kernel).
__device__ __forceinline__ void tl_named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" :: "r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void tl_named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" :: "r"(id), "r"(threads) : "memory");
}
"""


def _by_rank(ptx: str, operands: str, first: int) -> str:
    """The ``if (RANK == r) asm volatile(...)`` chain of a TMA helper for ranks 1..5:
    ``ptx.format(d=rank, coords="%i, %j, ...")`` with the coordinates from operand ``first`` on."""
    lines = []
    for rank in range(1, 6):
        coords = ", ".join(f"%{first + i}" for i in range(rank))
        regs = ", ".join(f'"r"(c{i})' for i in range(rank))
        head = "  if (RANK == 1)" if rank == 1 else "  else" if rank == 5 else f"  else if (RANK == {rank})"
        lines += [head, f'    asm volatile("{ptx.format(d=rank, coords=coords)};\\n"',
                  f'                 :: {operands}, {regs} : "memory");']
    return "\n".join(lines) + "\n"


HOPPER_HEADER = HOPPER_HEADER.replace("@TMA_LOAD_BY_RANK@", _by_rank(
    "cp.async.bulk.tensor.{d}d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {{{coords}}}], [%2]",
    '"r"(dst), "l"(map), "r"(mbar)', 3))

_WGMMA_NAME = re.compile(r"\btl_wgmma_(ss|rs)_(f16|bf16|e4m3|e5m2)_n(\d+)(_f16acc)?\b")


def wgmma_helper(form: str, dtype: str, n: int, f16_acc: bool = False) -> str:
    """The inline-PTX helper for ``wgmma.mma_async m64n<n>k16`` (k32 for 8-bit types) with an
    fp32 accumulator, or (``f16_acc``, name suffix ``_f16acc``) an fp16 one: the same elements per
    thread in the same order, two to a 32-bit register."""
    regs = n // 4 if f16_acc else n // 2
    outs = ", ".join(f"%{i}" for i in range(regs))
    acc = ", ".join(f'"+{"r" if f16_acc else "f"}"(d[{i}])' for i in range(regs))
    name = f"tl_wgmma_{form}_{dtype}_n{n}{'_f16acc' if f16_acc else ''}"
    k = 32 if dtype in ("e4m3", "e5m2") else 16
    ptx = f"wgmma.mma_async.sync.aligned.m64n{n}k{k}.{'f16' if f16_acc else 'f32'}.{dtype}.{dtype}"
    # the accumulator as the registers the instruction names (fp16 pairs as 32-bit words)
    d_param, d_view = (("void* acc", "  unsigned* d = static_cast<unsigned*>(acc);\n") if f16_acc
                       else ("float* d", ""))
    if form == "ss":
        a, b, p = regs, regs + 1, regs + 2
        if k == 32:  # 8-bit operands: K-major only, the instruction has no transpose immediates
            check = '  static_assert(TA == 0 && TB == 0, "8-bit wgmma reads K-major operands only");\n'
            trans, trans_in = "", ""
        else:
            check, trans, trans_in = "", f", %{p + 1}, %{p + 2}", ', "n"(TA), "n"(TB)'
        return (f"template <int TA, int TB>\n"
                f"__device__ __forceinline__ void {name}({d_param}, unsigned long long desc_a, "
                f"unsigned long long desc_b, int accumulate) {{\n"
                f"{check}{d_view}"
                f'  asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{p}, 0;\\n"\n'
                f'               "{ptx} {{{outs}}}, %{a}, %{b}, p, 1, 1{trans};\\n}}\\n"\n'
                f"               : {acc}\n"
                f'               : "l"(desc_a), "l"(desc_b), "r"(accumulate){trans_in});\n'
                f"}}\n")
    a0, b, p = regs, regs + 4, regs + 5
    a_regs = ", ".join(f"%{a0 + i}" for i in range(4))
    return (f"template <int TB>\n"
            f"__device__ __forceinline__ void {name}({d_param}, const void* a_regs, "
            f"unsigned long long desc_b, int accumulate) {{\n"
            f"{d_view}"
            f"  const unsigned* a = reinterpret_cast<const unsigned*>(a_regs);\n"
            f'  asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{p}, 0;\\n"\n'
            f'               "{ptx} {{{outs}}}, {{{a_regs}}}, %{b}, p, 1, 1, %{p + 1};\\n}}\\n"\n'
            f"               : {acc}\n"
            f'               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), '
            f'"r"(accumulate), "n"(TB));\n'
            f"}}\n")


#: TMA stores (tma_store.py): a box from shared memory to the tensor, in this thread's bulk group
TMA_STORE_HELPERS = r"""template <int RANK>
__device__ __forceinline__ void tl_tma_store(void* smem, unsigned long long map,
                                             int c0, int c1 = 0, int c2 = 0, int c3 = 0, int c4 = 0) {
  unsigned src = static_cast<unsigned>(__cvta_generic_to_shared(smem));
@BY_RANK@}
""".replace("@BY_RANK@", _by_rank(
    "cp.async.bulk.tensor.{d}d.global.shared::cta.bulk_group [%0, {{{coords}}}], [%1]", '"l"(map), "r"(src)', 2))
#: TMA reduce-adds (tma_reduce.py): a box from shared memory added into the tensor, element by
#: element at L2, in this thread's bulk group
TMA_REDUCE_HELPERS = TMA_STORE_HELPERS.replace("tl_tma_store(", "tl_tma_reduce_add(").replace(
    "cp.async.bulk.tensor.", "cp.reduce.async.bulk.tensor.").replace(".bulk_group [", ".add.tile.bulk_group [")
#: the bulk group of the stores and reduce-adds above: commit, and wait until their shared reads are done
BULK_GROUP_HELPERS = r"""__device__ __forceinline__ void tl_bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// until at most N groups of this thread still read shared memory
template <int N>
__device__ __forceinline__ void tl_bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" :: "n"(N) : "memory");
}
"""


#: Thread-block clusters (warp_specialize.py, tl.enable_cluster_multicast): TMA loads that land in
#: every CTA of ``mask`` (same shared offset, each CTA's mbarrier at the same offset counts them).
#: The cluster's marker, rank, barrier and the arrive on the peer CTA's mbarrier
#: (``tl_mbarrier_arrive_remote``) are on-demand helpers (mbarrier_helpers.py): ``tl_cluster_dims(x,
#: y, z)`` marks the kernel, and codegen turns it into ``__cluster_dims__``.
CLUSTER_HELPERS = r"""template <int RANK>
__device__ __forceinline__ void tl_tma_load_multicast(void* smem, unsigned long long map, void* bar,
                                                      unsigned short mask, int c0, int c1 = 0, int c2 = 0,
                                                      int c3 = 0, int c4 = 0) {
  unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  unsigned mbar = static_cast<unsigned>(__cvta_generic_to_shared(bar));
@TMA_MULTICAST_BY_RANK@}
"""
CLUSTER_HELPERS = CLUSTER_HELPERS.replace("@TMA_MULTICAST_BY_RANK@", _by_rank(
    "cp.async.bulk.tensor.{d}d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
    "[%0], [%1, {{{coords}}}], [%2], %3", '"r"(dst), "l"(map), "r"(mbar), "h"(mask)', 4))
_CLUSTER_MARK = re.compile(r"tl_cluster_dims\((\d+), (\d+), (\d+)\);")
_MIN_BLOCKS_MARK = re.compile(r"tl_min_blocks_per_sm\((\d+)\);")
#: T.set_max_nreg's call (mbarrier_helpers.py) and the warp specializer's setmaxnreg.inc: ptxas
#: honours setmaxnreg only where it knows the registers at entry, i.e. with a minimum of blocks per
#: SM in __launch_bounds__. Without one it may warn "'setmaxnreg' ignored" (C7508) and compile the
#: consumers under the entry cap: FlashAttention backward D64 did, at 168 registers; GEMM's and
#: FlashAttention forward's SASS are the same either way.
_MAX_NREG_MARK = re.compile(r"tl_set_max_nreg<\d+, \d+>\(\);|tl_setmaxnreg_inc<\d+>\(\);")
_KERNEL_DECL = r'extern "C" __global__ void (?:__launch_bounds__\([\d, ]+\) )?(?:__cluster_dims__\([\d, ]+\) )?'


def with_kernel_attributes(source: str) -> str:
    """``source`` with the launch attributes that marker calls in a kernel's body ask for on its
    declarations: ``tl_cluster_dims(x, y, z)`` -> ``__cluster_dims__`` (the launch then forms the
    clusters; no host change is needed), ``tl_min_blocks_per_sm(n)`` -> ``__launch_bounds__(threads,
    n)`` (ptxas then keeps the registers at entry within the SM's share of n blocks), and a
    ``tl_set_max_nreg<n, inc>()`` or ``tl_setmaxnreg_inc<n>()`` call -> ``__launch_bounds__(threads, 1)``
    unless a count is given."""
    for mark_re, attribute in ((_CLUSTER_MARK, _add_cluster_dims), (_MIN_BLOCKS_MARK, _add_min_blocks),
                               (_MAX_NREG_MARK, _add_one_block)):
        at = 0
        while (mark := mark_re.search(source, at)) is not None:
            decl = source.rfind('extern "C" __global__ void', 0, mark.start())
            name = re.match(_KERNEL_DECL + r"(\w+)\(", source[decl:]) if decl >= 0 else None
            if name is None:
                from tilelang_core.errors import CompileError

                raise CompileError(f"{mark.group(0)} outside a kernel the cuda codegen can name; report this")
            pattern = re.compile(_KERNEL_DECL + name.group(1) + r"\(")
            before = len(source)
            source = pattern.sub(lambda m: attribute(m.group(0), mark), source)
            at = mark.end() + len(source) - before
    return source


def _add_cluster_dims(decl: str, mark) -> str:
    name_at = decl.rindex(" ") + 1
    return decl[:name_at] + f"__cluster_dims__({mark.group(1)}, {mark.group(2)}, {mark.group(3)}) " + decl[name_at:]


def _add_min_blocks(decl: str, mark, blocks: str | None = None) -> str:
    bounds = re.search(r"__launch_bounds__\((\d+)\)", decl)
    if bounds is None:
        from tilelang_core.errors import CompileError

        raise CompileError(f"{mark.group(0)} on a kernel without __launch_bounds__ ({decl}); report this")
    blocks = blocks or mark.group(1)
    return decl[:bounds.start()] + f"__launch_bounds__({bounds.group(1)}, {blocks})" + decl[bounds.end():]


def _add_one_block(decl: str, mark) -> str:
    if re.search(r"__launch_bounds__\(\d+, \d+\)", decl):
        return decl  # a count is given already (this kernel's other calls, or tl_min_blocks_per_sm)
    return _add_min_blocks(decl, mark, "1")


def hopper_header(device_source: str) -> str:
    """The helpers a kernel's device source needs: none when it uses no sm_90a helper."""
    if "tl_wgmma" not in device_source and "tl_mbar" not in device_source and "tl_tma" not in device_source:
        return ""
    shapes = sorted(set(_WGMMA_NAME.findall(device_source)))
    stores = TMA_STORE_HELPERS if "tl_tma_store" in device_source else ""
    stores += TMA_REDUCE_HELPERS if "tl_tma_reduce_add" in device_source else ""
    stores += BULK_GROUP_HELPERS if stores else ""
    cluster = CLUSTER_HELPERS if "tl_tma_load_multicast" in device_source else ""
    # a marker for with_kernel_attributes; does nothing
    two_blocks = ("__device__ __forceinline__ void tl_min_blocks_per_sm(int) {}\n"
                  if "tl_min_blocks_per_sm" in device_source else "")
    return HOPPER_HEADER + stores + cluster + two_blocks + "".join(wgmma_helper(f, d, int(n), bool(acc)) for f, d, n, acc in shapes)
