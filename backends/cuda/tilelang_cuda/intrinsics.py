"""The cuda prelude: the device helpers the lowering calls by name (``call_extern``).

The SIMT kit's rules (tilelang_core.simt) and lower_gemm.py emit
``tirx.call_extern("void", "tl_ldmatrix_x4", ...)`` with pointer operands (``address_of(buf[i])``,
built with tilelang_core.simt.intrinsics); the helpers here define them as ``__forceinline__``
inline-PTX functions, and codegen splices ``DEVICE_HEADER`` (the includes) into the device source. It
implements the kit's helper contract (tilelang_core/simt/__init__.py) plus the tensor-core
helpers (``tl_ldmatrix_*``, ``tl_mma_*``). Owning the helpers keeps each instruction's operand
convention in one readable place instead of depending on TVM's PTX tables.

Every helper is in ``ON_DEMAND_HELPERS`` and added only to kernels that call it
(``with_on_demand_helpers``, from the backend's codegen stage), like the sm_90a helpers: a kernel's
source holds what it uses (a copy kernel is not preceded by the atomics), and nvcc parses nothing it
does not need.
"""

from __future__ import annotations

import re

from .mbarrier_helpers import MBARRIER_HELPERS
from .paired_folds import HELPERS as PAIRED_FOLD_HELPERS
from .vector_atomics import HELPERS as VECTOR_ATOMIC_HELPERS
from .vector_casts import HELPERS as VECTOR_CAST_HELPERS
from .warp_intrinsics import RNG_HELPERS, WARP_HELPERS

DEVICE_HEADER = r"""
// ---- tilelang-cuda device helpers --------------------------------------------------------------
#include <cuda_fp16.h>
#include <cuda_bf16.h>
// ------------------------------------------------------------------------------------------------
"""

#: copies, cp.async, ldmatrix and mma.sync m16n8k16 (the SIMT kit's copy rules, lower_gemm.py), one
#: on-demand helper each (_definitions)
_COPY_AND_MMA = r"""__device__ __forceinline__ unsigned tl_smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
// 16-byte copy with predication: a false predicate writes zeros (ragged tiles read as 0).
__device__ __forceinline__ void tl_copy_16(void* dst, const void* src, bool pred) {
  uint4 v = make_uint4(0, 0, 0, 0);
  if (pred) v = *reinterpret_cast<const uint4*>(src);
  *reinterpret_cast<uint4*>(dst) = v;
}
__device__ __forceinline__ void tl_copy_8(void* dst, const void* src, bool pred) {
  uint2 v = make_uint2(0, 0);
  if (pred) v = *reinterpret_cast<const uint2*>(src);
  *reinterpret_cast<uint2*>(dst) = v;
}
__device__ __forceinline__ void tl_copy_4(void* dst, const void* src, bool pred) {
  unsigned v = 0;
  if (pred) v = *reinterpret_cast<const unsigned*>(src);
  *reinterpret_cast<unsigned*>(dst) = v;
}
// Store-side predication: nothing is written when the predicate is false (global stores).
__device__ __forceinline__ void tl_store_16(void* dst, const void* src, bool pred) {
  if (pred) *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
}
__device__ __forceinline__ void tl_store_8(void* dst, const void* src, bool pred) {
  if (pred) *reinterpret_cast<uint2*>(dst) = *reinterpret_cast<const uint2*>(src);
}
__device__ __forceinline__ void tl_store_4(void* dst, const void* src, bool pred) {
  if (pred) *reinterpret_cast<unsigned*>(dst) = *reinterpret_cast<const unsigned*>(src);
}
// cp.async (LDGSTS), 16 bytes, L2-only (.cg); src-size 0 zero-fills when the predicate is false.
__device__ __forceinline__ void tl_cp_async_16(void* smem, const void* gmem, bool pred) {
  unsigned dst = tl_smem_addr(smem);
  int size = pred ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(dst), "l"(gmem), "r"(size));
}
__device__ __forceinline__ void tl_cp_async_8(void* smem, const void* gmem, bool pred) {
  unsigned dst = tl_smem_addr(smem);
  int size = pred ? 8 : 0;
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" :: "r"(dst), "l"(gmem), "r"(size));
}
__device__ __forceinline__ void tl_cp_async_4(void* smem, const void* gmem, bool pred) {
  unsigned dst = tl_smem_addr(smem);
  int size = pred ? 4 : 0;
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" :: "r"(dst), "l"(gmem), "r"(size));
}
__device__ __forceinline__ void tl_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void tl_cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" :: "n"(N)); }
// ldmatrix: four 8x8 b16 matrices; lane l supplies the row address of matrix l/8.
__device__ __forceinline__ void tl_ldmatrix_x4(void* regs, const void* smem) {
  unsigned* r = reinterpret_cast<unsigned*>(regs);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(tl_smem_addr(smem)));
}
__device__ __forceinline__ void tl_ldmatrix_x4_trans(void* regs, const void* smem) {
  unsigned* r = reinterpret_cast<unsigned*>(regs);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(tl_smem_addr(smem)));
}
__device__ __forceinline__ void tl_ldmatrix_x2(void* regs, const void* smem) {
  unsigned* r = reinterpret_cast<unsigned*>(regs);
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1]) : "r"(tl_smem_addr(smem)));
}
__device__ __forceinline__ void tl_ldmatrix_x2_trans(void* regs, const void* smem) {
  unsigned* r = reinterpret_cast<unsigned*>(regs);
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1]) : "r"(tl_smem_addr(smem)));
}
__device__ __forceinline__ void tl_ldmatrix_x1(void* regs, const void* smem) {
  unsigned* r = reinterpret_cast<unsigned*>(regs);
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(tl_smem_addr(smem)));
}
__device__ __forceinline__ void tl_ldmatrix_x1_trans(void* regs, const void* smem) {
  unsigned* r = reinterpret_cast<unsigned*>(regs);
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(tl_smem_addr(smem)));
}
// mma.sync m16n8k16, fp32 accumulate: a = 4 x b32, b = 2 x b32, c = 4 x f32 (in/out).
__device__ __forceinline__ void tl_mma_m16n8k16_f16_f32(void* c, const void* a, const void* b) {
  float* d = reinterpret_cast<float*>(c);
  const unsigned* x = reinterpret_cast<const unsigned*>(a);
  const unsigned* y = reinterpret_cast<const unsigned*>(b);
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
               "{%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(x[3]), "r"(y[0]), "r"(y[1]));
}
// fp16 accumulate: c = 2 x b32, the same 4 elements in the same order, two to a register.
__device__ __forceinline__ void tl_mma_m16n8k16_f16_f16(void* c, const void* a, const void* b) {
  unsigned* d = reinterpret_cast<unsigned*>(c);
  const unsigned* x = reinterpret_cast<const unsigned*>(a);
  const unsigned* y = reinterpret_cast<const unsigned*>(b);
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%0,%1};\n"
               : "+r"(d[0]), "+r"(d[1])
               : "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(x[3]), "r"(y[0]), "r"(y[1]));
}
__device__ __forceinline__ void tl_mma_m16n8k16_bf16_f32(void* c, const void* a, const void* b) {
  float* d = reinterpret_cast<float*>(c);
  const unsigned* x = reinterpret_cast<const unsigned*>(a);
  const unsigned* y = reinterpret_cast<const unsigned*>(b);
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
               "{%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(x[3]), "r"(y[0]), "r"(y[1]));
}
"""

#: every overload of the warp butterfly exchange (reductions, shuffles)
_SHUFFLE = r"""// Butterfly reductions inside a warp (all lanes take part: callers guard nothing).
__device__ __forceinline__ float tl_shfl_xor(float v, int lane_mask) {
  return __shfl_xor_sync(0xffffffffu, v, lane_mask);
}
__device__ __forceinline__ double tl_shfl_xor(double v, int lane_mask) {
  return __shfl_xor_sync(0xffffffffu, v, lane_mask);
}
__device__ __forceinline__ int tl_shfl_xor(int v, int lane_mask) {
  return __shfl_xor_sync(0xffffffffu, v, lane_mask);
}
// every integer type CUDA shuffles, so an int64_t (long) or uint32 value matches one exactly
__device__ __forceinline__ unsigned tl_shfl_xor(unsigned v, int lane_mask) {
  return __shfl_xor_sync(0xffffffffu, v, lane_mask);
}
__device__ __forceinline__ long tl_shfl_xor(long v, int lane_mask) {
  return __shfl_xor_sync(0xffffffffu, v, lane_mask);
}
__device__ __forceinline__ unsigned long tl_shfl_xor(unsigned long v, int lane_mask) {
  return __shfl_xor_sync(0xffffffffu, v, lane_mask);
}
__device__ __forceinline__ long long tl_shfl_xor(long long v, int lane_mask) {
  return __shfl_xor_sync(0xffffffffu, v, lane_mask);
}
__device__ __forceinline__ unsigned long long tl_shfl_xor(unsigned long long v, int lane_mask) {
  return __shfl_xor_sync(0xffffffffu, v, lane_mask);
}
__device__ __forceinline__ half tl_shfl_xor(half v, int lane_mask) {
  return __shfl_xor_sync(0xffffffffu, v, lane_mask);
}
__device__ __forceinline__ __nv_bfloat16 tl_shfl_xor(__nv_bfloat16 v, int lane_mask) {
  return __shfl_xor_sync(0xffffffffu, v, lane_mask);
}
"""

_ATOMICS = r"""// Atomics on global or shared memory. tl_atomic_<kind>(p, v) is relaxed and returns nothing;
// tl_atomic_<kind>(p, v, order) and tl_atomic_<kind>_ret(p, v, order) (which returns the previous
// value) take a memory order by cuda::memory_order's id (0 relaxed, 1 consume, 2 acquire,
// 3 release, 4 acq_rel, 5 seq_cst): a relaxed atomic between the fences of its order, PTX's
// release and acquire patterns (seq_cst starts with fence.sc, as libcu++'s does). What the
// hardware has no instruction for (max/min of floating types) is a compare-and-swap loop.
__device__ __forceinline__ void tl_fence_before(int order) {
  if (order == 5) asm volatile("fence.sc.gpu;\n" ::: "memory");
  else if (order == 3 || order == 4) asm volatile("fence.acq_rel.gpu;\n" ::: "memory");
}
__device__ __forceinline__ void tl_fence_after(int order) {
  if (order == 1 || order == 2 || order == 4 || order == 5) asm volatile("fence.acq_rel.gpu;\n" ::: "memory");
}
template <typename T> struct tl_same { typedef T type; };  // a parameter that deduces nothing
template <int N> struct tl_word;
template <> struct tl_word<1> { typedef unsigned char type; };
template <> struct tl_word<2> { typedef unsigned short type; };
template <> struct tl_word<4> { typedef unsigned int type; };
template <> struct tl_word<8> { typedef unsigned long long type; };
struct tl_max_of {
  template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return a < b ? b : a; }
};
struct tl_min_of {
  template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return b < a ? b : a; }
};
// *addr = combine(*addr, value) by compare-and-swap of the 2/4/8-byte word; the previous value.
template <typename T, typename F>
__device__ __forceinline__ T tl_atomic_cas_loop(T* addr, T value, F combine) {
  typedef typename tl_word<sizeof(T)>::type U;
  U* word = reinterpret_cast<U*>(addr);
  U old = *reinterpret_cast<volatile U*>(word), assumed;
  T prev;
  do {
    assumed = old;
    memcpy(&prev, &assumed, sizeof(T));
    T next = combine(prev, value);
    U bits;
    memcpy(&bits, &next, sizeof(T));
    old = atomicCAS(word, assumed, bits);
  } while (old != assumed);
  return prev;
}
// Relaxed read-modify-writes returning the previous value, one overload per element type. TVM
// prints int64 as int64_t (long): 64-bit integers go through unsigned long long (two's
// complement add/or/and/xor) or long long (signed max/min).
#define TL_RMW(KIND, T, EXPR) \
  __device__ __forceinline__ T tl_rmw_##KIND(T* p, T v) { return EXPR; }
#define TL_RMW_AS(KIND, T, U) \
  __device__ __forceinline__ T tl_rmw_##KIND(T* p, T v) { return (T)tl_rmw_##KIND(reinterpret_cast<U*>(p), (U)v); }
TL_RMW(add, float, atomicAdd(p, v)) TL_RMW(add, double, atomicAdd(p, v)) TL_RMW(add, int, atomicAdd(p, v))
TL_RMW(add, unsigned, atomicAdd(p, v)) TL_RMW(add, unsigned long long, atomicAdd(p, v))
TL_RMW(add, __half, atomicAdd(p, v)) TL_RMW(add, __nv_bfloat16, atomicAdd(p, v))
TL_RMW_AS(add, long long, unsigned long long) TL_RMW_AS(add, long, unsigned long long)
TL_RMW_AS(add, unsigned long, unsigned long long)
#define TL_RMW_MINMAX(KIND, FN, OP) \
  TL_RMW(KIND, int, FN(p, v)) TL_RMW(KIND, unsigned, FN(p, v)) TL_RMW(KIND, long long, FN(p, v)) \
  TL_RMW(KIND, unsigned long long, FN(p, v)) TL_RMW_AS(KIND, long, long long) \
  TL_RMW_AS(KIND, unsigned long, unsigned long long) TL_RMW(KIND, float, tl_atomic_cas_loop(p, v, OP())) \
  TL_RMW(KIND, double, tl_atomic_cas_loop(p, v, OP())) TL_RMW(KIND, __half, tl_atomic_cas_loop(p, v, OP())) \
  TL_RMW(KIND, __nv_bfloat16, tl_atomic_cas_loop(p, v, OP()))
TL_RMW_MINMAX(max, atomicMax, tl_max_of)
TL_RMW_MINMAX(min, atomicMin, tl_min_of)
#define TL_RMW_BITS(KIND, FN) \
  TL_RMW(KIND, int, FN(p, v)) TL_RMW(KIND, unsigned, FN(p, v)) TL_RMW(KIND, unsigned long long, FN(p, v)) \
  TL_RMW_AS(KIND, long long, unsigned long long) TL_RMW_AS(KIND, long, unsigned long long) \
  TL_RMW_AS(KIND, unsigned long, unsigned long long)
TL_RMW_BITS(or, atomicOr)
TL_RMW_BITS(and, atomicAnd)
TL_RMW_BITS(xor, atomicXor)
// The value's type is the element's (TVM prints an int64 constant as a plain int): not deduced.
#define TL_ATOMIC_KIND(KIND)                                                                     \
  template <typename T>                                                                          \
  __device__ __forceinline__ T tl_atomic_##KIND##_ret(T* addr, typename tl_same<T>::type value, int order) { \
    tl_fence_before(order);                                                                      \
    T old = tl_rmw_##KIND(addr, value);                                                          \
    tl_fence_after(order);                                                                       \
    return old;                                                                                  \
  }                                                                                              \
  template <typename T>                                                                          \
  __device__ __forceinline__ void tl_atomic_##KIND(T* addr, typename tl_same<T>::type value) {   \
    tl_rmw_##KIND(addr, value);                                                                  \
  }                                                                                              \
  template <typename T>                                                                          \
  __device__ __forceinline__ void tl_atomic_##KIND(T* addr, typename tl_same<T>::type value, int order) { \
    tl_atomic_##KIND##_ret<T>(addr, value, order);                                               \
  }
TL_ATOMIC_KIND(add) TL_ATOMIC_KIND(max) TL_ATOMIC_KIND(min)
TL_ATOMIC_KIND(or) TL_ATOMIC_KIND(and) TL_ATOMIC_KIND(xor)
// Atomic loads and stores: one strong (volatile) access of the whole element between the fences.
template <typename T>
__device__ __forceinline__ void tl_atomic_store(T* addr, typename tl_same<T>::type value, int order) {
  typedef typename tl_word<sizeof(T)>::type U;
  U bits;
  memcpy(&bits, &value, sizeof(T));
  tl_fence_before(order);
  *reinterpret_cast<volatile U*>(addr) = bits;
}
template <typename T> __device__ __forceinline__ void tl_atomic_store(T* addr, typename tl_same<T>::type value) {
  tl_atomic_store<T>(addr, value, 0);
}
template <typename T> __device__ __forceinline__ T tl_atomic_load(const T* addr, int order) {
  typedef typename tl_word<sizeof(T)>::type U;
  if (order == 5) asm volatile("fence.sc.gpu;\n" ::: "memory");
  U bits = *reinterpret_cast<const volatile U*>(addr);
  tl_fence_after(order);
  T value;
  memcpy(&value, &bits, sizeof(T));
  return value;
}
"""
#: the names kernels call _ATOMICS by (the whole block comes with any of them)
_ATOMIC_NAMES = ("tl_atomic_store", "tl_atomic_load", "tl_fence_before", "tl_fence_after",
                 *(f"tl_atomic_{k}{r}" for k in ("add", "max", "min", "or", "and", "xor") for r in ("", "_ret")))


def _definitions(text: str) -> dict[str, str]:
    """``text``'s functions by name, each with the comment and template lines above it (one
    definition per helper, each self-contained but for the helpers it calls)."""
    out: dict[str, str] = {}
    chunk: list[str] = []
    for line in text.splitlines(keepends=True):
        chunk.append(line)
        if line.startswith("}") or (line.startswith("__device__") and line.rstrip().endswith("}")):
            name = re.search(r"\b(tl_\w+)\(", "".join(c for c in chunk if c.startswith("__device__"))).group(1)
            out[name] = out.get(name, "") + "".join(chunk)
            chunk = []
    if "".join(chunk).strip():
        raise ValueError(f"helper text after the last definition: {''.join(chunk)[:80]!r}")
    return out




def _mma_helper(name: str, ptx: str, acc: str, constraint: str) -> str:
    return (f"__device__ __forceinline__ void {name}(void* c, const void* a, const void* b) {{\n"
            f"  {acc}* d = reinterpret_cast<{acc}*>(c);\n"
            f"  const unsigned* x = reinterpret_cast<const unsigned*>(a);\n"
            f"  const unsigned* y = reinterpret_cast<const unsigned*>(b);\n"
            f"  asm volatile(\"mma.sync.aligned.{ptx} {{%0,%1,%2,%3}}, {{%4,%5,%6,%7}}, \"\n"
            f"               \"{{%8,%9}}, {{%0,%1,%2,%3}};\\n\"\n"
            f"               : \"+{constraint}\"(d[0]), \"+{constraint}\"(d[1]), \"+{constraint}\"(d[2]), "
            f"\"+{constraint}\"(d[3])\n"
            f"               : \"r\"(x[0]), \"r\"(x[1]), \"r\"(x[2]), \"r\"(x[3]), \"r\"(y[0]), \"r\"(y[1]));\n"
            f"}}\n")


#: name -> definition; mma: a = 4 x b32, b = 2 x b32, c = 4 accumulators (in/out), as for m16n8k16.
#: Callees come first: each kernel gets the helpers it calls, in this order.
ON_DEMAND_HELPERS = {
    **_definitions(_COPY_AND_MMA),
    "tl_shfl_xor": _SHUFFLE,
    **dict.fromkeys(_ATOMIC_NAMES, _ATOMICS),
    # tf32 operands are fp32 bit patterns whose low 13 mantissa bits the instruction ignores
    "tl_mma_m16n8k8_tf32_f32": _mma_helper("tl_mma_m16n8k8_tf32_f32", "m16n8k8.row.col.f32.tf32.tf32.f32",
                                           "float", "f"),
    # no .satfinite: the int32 sums wrap, like the FMA path's int32 arithmetic
    "tl_mma_m16n8k32_s8_s32": _mma_helper("tl_mma_m16n8k32_s8_s32", "m16n8k32.row.col.s32.s8.s8.s32", "int", "r"),
    "tl_mma_m16n8k32_u8_s32": _mma_helper("tl_mma_m16n8k32_u8_s32", "m16n8k32.row.col.s32.u8.u8.s32", "int", "r"),
    # true at run time, unknown to nvcc and ptxas: a branch on it is a basic block they keep
    # (hopper/warp_specialize.py, tl.enable_overlap_block)
    "tl_opaque_true": "__device__ __forceinline__ bool tl_opaque_true() { return blockDim.x != 0u; }\n",
    # T.exp2 on float32 (fast_exp2.py): one MUFU.EX2; exp2f adds a subnormal fix-up around it
    "tl_exp2": "__device__ __forceinline__ float tl_exp2(float x) {\n"
               "  float y;\n"
               "  asm(\"ex2.approx.ftz.f32 %0, %1;\\n\" : \"=f\"(y) : \"f\"(x));\n"
               "  return y;\n"
               "}\n",
    # TVM prints a vector of 8 float32 (a T.Parallel run of 8 half values computed in float32) as
    # ulonglong4 and its broadcast as make_ulonglong4 of 8 floats: this overload builds it, the
    # lanes in order in the 32 bytes, as TVM's element accesses ((float2*)&v.y)->x read them
    "make_ulonglong4": "__device__ __forceinline__ ulonglong4 make_ulonglong4(float a, float b, float c, float d,\n"
                       "                                                  float e, float f, float g, float h) {\n"
                       "  ulonglong4 v;\n"
                       "  float2* pairs = (float2*)&v;\n"
                       "  pairs[0] = make_float2(a, b); pairs[1] = make_float2(c, d);\n"
                       "  pairs[2] = make_float2(e, f); pairs[3] = make_float2(g, h);\n"
                       "  return v;\n"
                       "}\n",
    # float32 / in device code (fast_divide.py): 2 ulp over the full range, no slow-path branch
    "tl_div": "__device__ __forceinline__ float tl_div(float a, float b) {\n"
              "  float y;\n"
              "  asm(\"div.full.f32 %0, %1, %2;\\n\" : \"=f\"(y) : \"f\"(a), \"f\"(b));\n"
              "  return y;\n"
              "}\n",
}

# votes, shuffles, warp reductions, bit scans (warp_intrinsics.py)
ON_DEMAND_HELPERS.update(WARP_HELPERS)
ON_DEMAND_HELPERS.update(RNG_HELPERS)  # (the draws are macros these define)
ON_DEMAND_HELPERS.update(MBARRIER_HELPERS)
ON_DEMAND_HELPERS.update(VECTOR_ATOMIC_HELPERS)  # red.global.add.v4.f32, AtomicAddx2/x4 (vector_atomics.py)
ON_DEMAND_HELPERS.update(VECTOR_CAST_HELPERS)  # paired conversions of vector casts (vector_casts.py)
ON_DEMAND_HELPERS.update(PAIRED_FOLD_HELPERS)  # half2 folds of register reductions (paired_folds.py)

_HELPER_NAME = re.compile(r"\b(" + "|".join(ON_DEMAND_HELPERS) + r")[(<]")  # calls and template calls


def with_on_demand_helpers(source: str) -> str:
    """``source`` (codegen's .cu, DEVICE_HEADER already in) with the ON_DEMAND_HELPERS its kernels
    call appended to DEVICE_HEADER, and those the added ones call (each before its callers: the
    table lists callees first)."""
    used = set(_HELPER_NAME.findall(source))
    if not used:
        return source
    pending = set(used)
    while pending:
        found = set(_HELPER_NAME.findall("".join(ON_DEMAND_HELPERS[name] for name in pending))) - used
        used |= found
        pending = found
    # (several names share one block: _ATOMICS)
    extra = "".join(dict.fromkeys(ON_DEMAND_HELPERS[name] for name in ON_DEMAND_HELPERS if name in used))
    return source.replace(DEVICE_HEADER, DEVICE_HEADER + extra, 1)
