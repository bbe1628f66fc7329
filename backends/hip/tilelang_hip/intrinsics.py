"""The HIP device prelude: what TVM's CUDA C printer assumes, declared for clang's HIP mode with no
HIP headers (``-nogpuinc -nogpulib``), plus the SIMT kit's helpers and the matrix-core helpers.

The kernels codegen.py keeps from TVM's CUDA printer are plain C++ once ``__global__``,
``threadIdx``, ``half``, ``float2``, ``exp2f``... exist: ``DEVICE_PRELUDE`` defines them with
clang builtins (``__builtin_amdgcn_*``). The helpers implement the kit's contract
(tilelang_core/simt/__init__.py) and the instructions of layouts.py:

* ``tl_copy_N``/``tl_store_N``: predicated 4/8/16-byte accesses (global_load_dwordx4, ds_write_b128).
* ``tl_cp_async_N``: the same synchronous copy (there is no per-lane-addressed async global->LDS
  copy on gfx9/gfx11), ``commit``/``wait`` are empty: a T.Pipelined loop still gets its LDS
  stages (one barrier per iteration, the next tile's loads issued before this tile's math).
* ``tl_shfl_xor``: DPP quad_perm for lane masks 1 and 2, ds_swizzle (bit-mask mode, within 32
  lanes) for 4, 8, 16, ds_bpermute for 32 (across the halves of a wave64).
* ``tl_mfma_*``/``tl_wmma_*``: one instruction with A and B swapped (``D^T = B^T A^T``, see
  layouts.py); operands are register arrays, 4 (MFMA) or 16 (WMMA) values per lane. The ``_ra``
  WMMA forms take A in the accumulator layout (8 values per lane) and fetch the other half of
  the row from lane ``l ^ 16``.
"""

from __future__ import annotations

from .warp_intrinsics import WARP_HELPER_CALL, WARP_HELPERS

DEVICE_PRELUDE = r"""// ---- tilelang-hip device prelude (clang -x hip -nogpuinc -nogpulib) ---------------------------
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __shared__ __attribute__((shared))
#define __forceinline__ inline __attribute__((always_inline))
#define __align__(n) __attribute__((aligned(n)))
// (a second argument, T.annotate_min_blocks_per_sm's CUDA occupancy hint, is dropped: HIP's means
// warps per execution unit)
#define __launch_bounds__(n, ...) __attribute__((amdgpu_flat_work_group_size(1, n)))
#define TL_D static __device__ __forceinline__
typedef _Float16 half;
typedef __bf16 bfloat16_t;
typedef __bf16 nv_bfloat16;  // TVM's printer names bfloat16 scalars so (per-thread code)
typedef unsigned int uint;
typedef unsigned short ushort;
typedef unsigned char uchar;
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
struct tl_dim3 { unsigned x, y, z; };
TL_D tl_dim3 tl_thread_idx() {
  return {__builtin_amdgcn_workitem_id_x(), __builtin_amdgcn_workitem_id_y(), __builtin_amdgcn_workitem_id_z()};
}
TL_D tl_dim3 tl_block_idx() {
  return {__builtin_amdgcn_workgroup_id_x(), __builtin_amdgcn_workgroup_id_y(), __builtin_amdgcn_workgroup_id_z()};
}
#define threadIdx (tl_thread_idx())
#define blockIdx (tl_block_idx())
// HIP's __syncthreads: LDS writes before the barrier are visible after it.
TL_D void __syncthreads() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
// CUDA's vector structs (TVM's printer reads and writes their members one by one).
#define TL_VEC2(T, N) struct __align__(2 * sizeof(T)) N { T x, y; }; \
  TL_D N make_##N(T x, T y) { N r = {x, y}; return r; }
#define TL_VEC4(T, N) struct __align__(4 * sizeof(T) > 16 ? 16 : 4 * sizeof(T)) N { T x, y, z, w; }; \
  TL_D N make_##N(T x, T y, T z, T w) { N r = {x, y, z, w}; return r; }
TL_VEC2(float, float2) TL_VEC4(float, float4) TL_VEC2(half, half2) TL_VEC4(half, half4)
TL_VEC2(int, int2) TL_VEC4(int, int4) TL_VEC2(unsigned, uint2) TL_VEC4(unsigned, uint4)
TL_VEC2(double, double2)
TL_VEC4(unsigned long long, ulonglong4)  // T.ldg256 / T.stg256 (TVM prints uint32x8 so)
struct uint1 { unsigned x; };
struct float1 { float x; };
#define CUDART_INF_F __builtin_huge_valf()
#define CUDART_NAN_F __builtin_nanf("")
#define CUDART_INF __builtin_huge_val()
// libm names the printer emits: LLVM intrinsics the AMDGPU backend lowers itself (no device libs).
TL_D float exp2f(float x) { return __builtin_exp2f(x); }
TL_D float expf(float x) { return __builtin_expf(x); }
TL_D float __expf(float x) { return __builtin_expf(x); }
TL_D float logf(float x) { return __builtin_logf(x); }
TL_D float log2f(float x) { return __builtin_log2f(x); }
TL_D float sqrtf(float x) { return __builtin_sqrtf(x); }
TL_D float rsqrtf(float x) { return __builtin_amdgcn_rsqf(x); }
TL_D float fabsf(float x) { return __builtin_fabsf(x); }
TL_D float floorf(float x) { return __builtin_floorf(x); }
TL_D float ceilf(float x) { return __builtin_ceilf(x); }
TL_D float fmaxf(float a, float b) { return __builtin_fmaxf(a, b); }
TL_D float fminf(float a, float b) { return __builtin_fminf(a, b); }
TL_D double exp(double x) { return __builtin_exp(x); }
TL_D double sqrt(double x) { return __builtin_sqrt(x); }
TL_D double fabs(double x) { return __builtin_fabs(x); }
TL_D half hexp2(half x) { return (half)__builtin_exp2f((float)x); }
TL_D half hexp(half x) { return (half)__builtin_expf((float)x); }
TL_D half hsqrt(half x) { return (half)__builtin_sqrtf((float)x); }
TL_D float max(float a, float b) { return __builtin_fmaxf(a, b); }
TL_D float min(float a, float b) { return __builtin_fminf(a, b); }
TL_D double max(double a, double b) { return __builtin_fmax(a, b); }
TL_D double min(double a, double b) { return __builtin_fmin(a, b); }
TL_D half max(half a, half b) { return a < b ? b : a; }
TL_D half min(half a, half b) { return b < a ? b : a; }
TL_D int max(int a, int b) { return a < b ? b : a; }
TL_D int min(int a, int b) { return b < a ? b : a; }
TL_D unsigned max(unsigned a, unsigned b) { return a < b ? b : a; }
TL_D unsigned min(unsigned a, unsigned b) { return b < a ? b : a; }
TL_D long long max(long long a, long long b) { return a < b ? b : a; }
TL_D long long min(long long a, long long b) { return b < a ? b : a; }
"""

HELPERS = r"""// ---- tilelang-hip helpers (tilelang_core/simt contract + matrix cores) ------------------------
typedef unsigned tl_u32x2 __attribute__((ext_vector_type(2)));
typedef unsigned tl_u32x4 __attribute__((ext_vector_type(4)));
// Predicated copies: a false predicate reads nothing and writes zeros (ragged tiles read as 0).
#define TL_COPY(N, V)                                                             \
  TL_D void tl_copy_##N(void* dst, const void* src, bool pred) {                \
    V v = V();                                                                    \
    if (pred) v = *reinterpret_cast<const V*>(src);                               \
    *reinterpret_cast<V*>(dst) = v;                                               \
  }                                                                               \
  TL_D void tl_cp_async_##N(void* dst, const void* src, bool pred) { tl_copy_##N(dst, src, pred); } \
  TL_D void tl_store_##N(void* dst, const void* src, bool pred) {               \
    if (pred) *reinterpret_cast<V*>(dst) = *reinterpret_cast<const V*>(src);     \
  }
TL_COPY(16, tl_u32x4)
TL_COPY(8, tl_u32x2)
TL_COPY(4, unsigned)
// The copies above complete before they return: groups and waits have nothing to do.
TL_D void tl_cp_async_commit() {}
template <int N> TL_D void tl_cp_async_wait() {}
// A value LLVM may not look into or move: the gemm's lane row for element-wise LDS reads. Seen
// through, LLVM folds the swizzle XOR with each read's constant offset into one address register
// per read and hoists them all out of the loop: FlashAttention's V (dim 128) spilled 197 VGPRs.
TL_D int tl_opaque(int x) { asm volatile("" : "+v"(x)); return x; }
// Nothing is scheduled across it (emits no instruction): the gemm's column fence.
TL_D void tl_sched_barrier() { __builtin_amdgcn_sched_barrier(0); }
// Butterfly exchange within a wave: lane l gets v of lane l ^ mask (all lanes take part).
TL_D int tl_lane_id() { return __builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u)); }
TL_D int tl_shfl_xor_b32(int v, int mask) {
  switch (mask) {  // folds away: mask is a constant after inlining
    case 1: return __builtin_amdgcn_update_dpp(0, v, 0xB1, 0xF, 0xF, false);  // quad_perm [1,0,3,2]
    case 2: return __builtin_amdgcn_update_dpp(0, v, 0x4E, 0xF, 0xF, false);  // quad_perm [2,3,0,1]
    case 4: return __builtin_amdgcn_ds_swizzle(v, 0x101F);   // and 0x1F, xor 4
    case 8: return __builtin_amdgcn_ds_swizzle(v, 0x201F);   // and 0x1F, xor 8
    case 16: return __builtin_amdgcn_ds_swizzle(v, 0x401F);  // and 0x1F, xor 16
    default: return __builtin_amdgcn_ds_bpermute((tl_lane_id() ^ mask) << 2, v);
  }
}
// Two K values of an operand stored [k][row] (B as K x N, A as K x M) from one 4-byte LDS read
// shared with lane ^ 1, which holds the adjacent row: the even lane reads K row k (rows r, r + 1),
// the odd lane K row k + 1; one exchange gives each lane its row's values at k and k + 1.
TL_D void tl_read_column_pair(void* dst, const void* src, int odd) {
  unsigned mine = *reinterpret_cast<const unsigned*>(src);
  unsigned other = (unsigned)tl_shfl_xor_b32((int)mine, 1);
  // one v_perm_b32 (bytes 0-3: mine, 4-7: other) with a per-lane selector, not a select of two
  // results: LLVM would keep both alive across the gemm
  unsigned bytes = odd ? 0x03020706u : 0x05040100u;  // odd: other's high, mine's high; even: lows
  *reinterpret_cast<unsigned*>(dst) = __builtin_amdgcn_perm(other, mine, bytes);
}
TL_D float tl_shfl_xor(float v, int mask) {
  return __builtin_bit_cast(float, tl_shfl_xor_b32(__builtin_bit_cast(int, v), mask));
}
TL_D int tl_shfl_xor(int v, int mask) { return tl_shfl_xor_b32(v, mask); }
TL_D unsigned tl_shfl_xor(unsigned v, int mask) { return (unsigned)tl_shfl_xor_b32((int)v, mask); }
TL_D double tl_shfl_xor(double v, int mask) {
  tl_u32x2 w = __builtin_bit_cast(tl_u32x2, v);
  w.x = (unsigned)tl_shfl_xor_b32((int)w.x, mask);
  w.y = (unsigned)tl_shfl_xor_b32((int)w.y, mask);
  return __builtin_bit_cast(double, w);
}
TL_D half tl_shfl_xor(half v, int mask) {
  unsigned short bits = __builtin_bit_cast(unsigned short, v);
  return __builtin_bit_cast(half, (unsigned short)tl_shfl_xor_b32((int)bits, mask));
}
// Atomics on global or shared memory, agent scope. tl_atomic_<kind>(p, v) is relaxed and returns
// nothing; tl_atomic_<kind>(p, v, order) and tl_atomic_<kind>_ret(p, v, order) (the previous
// value) take the memory order as its C11 id, which is the value of clang's __ATOMIC_* (0 relaxed,
// 1 consume, 2 acquire, 3 release, 4 acq_rel, 5 seq_cst): a constant once inlined. Max/min of
// floating types are compare-and-swap loops (clang widens 16-bit ones to the 32-bit word).
static_assert(__ATOMIC_RELAXED == 0 && __ATOMIC_CONSUME == 1 && __ATOMIC_ACQUIRE == 2 &&
              __ATOMIC_RELEASE == 3 && __ATOMIC_ACQ_REL == 4 && __ATOMIC_SEQ_CST == 5,
              "TileLang's memory-order ids are C11's");
// TVM's printer converts a float constant to half with CUDA's __float2half_rn (f16 atomics' values)
TL_D half __float2half_rn(float x) { return (half)x; }
template <typename T> struct tl_same { typedef T type; };  // a parameter that deduces nothing
template <int N> struct tl_word;
template <> struct tl_word<1> { typedef unsigned char type; };
template <> struct tl_word<2> { typedef unsigned short type; };
template <> struct tl_word<4> { typedef unsigned int type; };
template <> struct tl_word<8> { typedef unsigned long long type; };
// a failed compare-and-swap only reads: it cannot release
TL_D int tl_cas_failure_order(int order) { return order == 3 ? 0 : order == 4 ? 2 : order; }
struct tl_max_of { template <typename T> TL_D T apply(T a, T b) { return a < b ? b : a; } };
struct tl_min_of { template <typename T> TL_D T apply(T a, T b) { return b < a ? b : a; } };
template <typename F, typename T> TL_D T tl_atomic_cas_loop(T* addr, T value, int order) {
  typedef typename tl_word<sizeof(T)>::type U;
  U* word = reinterpret_cast<U*>(addr);
  U old = __hip_atomic_load(word, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
  T prev;
  do {
    prev = __builtin_bit_cast(T, old);
  } while (!__hip_atomic_compare_exchange_weak(word, &old, __builtin_bit_cast(U, F::apply(prev, value)),
                                               order, tl_cas_failure_order(order), __HIP_MEMORY_SCOPE_AGENT));
  return prev;
}
template <typename T> TL_D T tl_rmw_add(T* p, T v, int o) { return __hip_atomic_fetch_add(p, v, o, __HIP_MEMORY_SCOPE_AGENT); }
template <typename T> TL_D T tl_rmw_or(T* p, T v, int o) { return __hip_atomic_fetch_or(p, v, o, __HIP_MEMORY_SCOPE_AGENT); }
template <typename T> TL_D T tl_rmw_and(T* p, T v, int o) { return __hip_atomic_fetch_and(p, v, o, __HIP_MEMORY_SCOPE_AGENT); }
template <typename T> TL_D T tl_rmw_xor(T* p, T v, int o) { return __hip_atomic_fetch_xor(p, v, o, __HIP_MEMORY_SCOPE_AGENT); }
template <typename T> TL_D T tl_rmw_max(T* p, T v, int o) { return __hip_atomic_fetch_max(p, v, o, __HIP_MEMORY_SCOPE_AGENT); }
template <typename T> TL_D T tl_rmw_min(T* p, T v, int o) { return __hip_atomic_fetch_min(p, v, o, __HIP_MEMORY_SCOPE_AGENT); }
#define TL_RMW_CAS(KIND, T, OP) \
  TL_D T tl_rmw_##KIND(T* p, T v, int o) { return tl_atomic_cas_loop<OP>(p, v, o); }
TL_RMW_CAS(max, float, tl_max_of) TL_RMW_CAS(max, double, tl_max_of) TL_RMW_CAS(max, half, tl_max_of)
TL_RMW_CAS(min, float, tl_min_of) TL_RMW_CAS(min, double, tl_min_of) TL_RMW_CAS(min, half, tl_min_of)
// The value's type is the element's (TVM prints an int64 constant as a plain int): not deduced.
#define TL_ATOMIC_KIND(KIND)                                                                     \
  template <typename T> TL_D T tl_atomic_##KIND##_ret(T* addr, typename tl_same<T>::type value, int order) { \
    return tl_rmw_##KIND(addr, value, order);                                                    \
  }                                                                                              \
  template <typename T> TL_D void tl_atomic_##KIND(T* addr, typename tl_same<T>::type value) {   \
    tl_rmw_##KIND(addr, value, 0);                                                               \
  }                                                                                              \
  template <typename T> TL_D void tl_atomic_##KIND(T* addr, typename tl_same<T>::type value, int order) { \
    tl_rmw_##KIND(addr, value, order);                                                           \
  }
TL_ATOMIC_KIND(add) TL_ATOMIC_KIND(max) TL_ATOMIC_KIND(min)
TL_ATOMIC_KIND(or) TL_ATOMIC_KIND(and) TL_ATOMIC_KIND(xor)
template <typename T> TL_D void tl_atomic_store(T* addr, typename tl_same<T>::type value, int order) {
  typedef typename tl_word<sizeof(T)>::type U;
  __hip_atomic_store(reinterpret_cast<U*>(addr), __builtin_bit_cast(U, value), order, __HIP_MEMORY_SCOPE_AGENT);
}
template <typename T> TL_D void tl_atomic_store(T* addr, typename tl_same<T>::type value) {
  tl_atomic_store<T>(addr, value, 0);
}
template <typename T> TL_D T tl_atomic_load(const T* addr, int order) {
  typedef typename tl_word<sizeof(T)>::type U;
  return __builtin_bit_cast(T, __hip_atomic_load(reinterpret_cast<const U*>(addr), order, __HIP_MEMORY_SCOPE_AGENT));
}
"""

MFMA_HELPERS = r"""// ---- MFMA (gfx9): D^T = B^T A^T, so each lane holds a row of C (layouts.py) --------------------
typedef _Float16 tl_f16x4 __attribute__((ext_vector_type(4)));
typedef short tl_i16x4 __attribute__((ext_vector_type(4)));
typedef float tl_f32x4 __attribute__((ext_vector_type(4)));
typedef float tl_f32x16 __attribute__((ext_vector_type(16)));
#define TL_MFMA(NAME, BUILTIN, IN, ACC)                                                  \
  TL_D void NAME(float* c, const void* a, const void* b) {                              \
    ACC* d = reinterpret_cast<ACC*>(c);                                                  \
    *d = BUILTIN(*reinterpret_cast<const IN*>(b), *reinterpret_cast<const IN*>(a), *d, 0, 0, 0); \
  }
TL_MFMA(tl_mfma_f32_16x16x16_f16, __builtin_amdgcn_mfma_f32_16x16x16f16, tl_f16x4, tl_f32x4)
TL_MFMA(tl_mfma_f32_16x16x16_bf16, __builtin_amdgcn_mfma_f32_16x16x16bf16_1k, tl_i16x4, tl_f32x4)
TL_MFMA(tl_mfma_f32_32x32x8_f16, __builtin_amdgcn_mfma_f32_32x32x8f16, tl_f16x4, tl_f32x16)
TL_MFMA(tl_mfma_f32_32x32x8_bf16, __builtin_amdgcn_mfma_f32_32x32x8bf16_1k, tl_i16x4, tl_f32x16)
"""

WMMA_HELPERS = r"""// ---- WMMA (gfx11, wave32): D^T = B^T A^T (layouts.py) ------------------------------------------
typedef _Float16 tl_f16x16 __attribute__((ext_vector_type(16)));
typedef short tl_i16x16 __attribute__((ext_vector_type(16)));
typedef float tl_f32x8 __attribute__((ext_vector_type(8)));
#define TL_WMMA(NAME, BUILTIN, IN)                                                        \
  TL_D void NAME(float* c, const void* a, const void* b) {                              \
    tl_f32x8* d = reinterpret_cast<tl_f32x8*>(c);                                        \
    *d = BUILTIN(*reinterpret_cast<const IN*>(b), *reinterpret_cast<const IN*>(a), *d);  \
  }                                                                                       \
  /* A in the accumulator layout: this lane has k = 2v + g (g = lane / 16); lane ^ 16 has */ \
  /* the other parity of the same row. Selects, not a g-indexed store: registers stay registers. */ \
  TL_D void NAME##_ra(float* c, const void* a8, const void* b) {                        \
    const unsigned* mine = reinterpret_cast<const unsigned*>(a8);                       \
    unsigned row[8] __attribute__((aligned(32)));                                        \
    bool odd = (tl_lane_id() >> 4) & 1;                                                  \
    for (int p = 0; p < 4; ++p) {                                                         \
      unsigned other = (unsigned)tl_shfl_xor_b32((int)mine[p], 16);                      \
      for (int h = 0; h < 2; ++h) {                                                      \
        unsigned m = (mine[p] >> (16 * h)) & 0xFFFFu, o = (other >> (16 * h)) & 0xFFFFu;  \
        row[2 * p + h] = odd ? (o | (m << 16)) : (m | (o << 16)); /* k = 2v, 2v + 1 */   \
      }                                                                                   \
    }                                                                                     \
    NAME(c, row, b);                                                                     \
  }
TL_WMMA(tl_wmma_f32_16x16x16_f16, __builtin_amdgcn_wmma_f32_16x16x16_f16_w32, tl_f16x16)
TL_WMMA(tl_wmma_f32_16x16x16_bf16, __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32, tl_i16x16)
"""


def device_prelude(matrix_unit: str, kernels: str = "") -> str:
    """The prelude for an arch whose matrix unit is ``"mfma"`` or ``"wmma"`` (target.CAPABILITIES),
    with the warp helpers (warp_intrinsics.py) when ``kernels`` call one of them."""
    units = {"mfma": MFMA_HELPERS, "wmma": WMMA_HELPERS}
    warp = WARP_HELPERS if WARP_HELPER_CALL.search(kernels) else ""
    return DEVICE_PRELUDE + HELPERS + warp + units.get(matrix_unit, "")
