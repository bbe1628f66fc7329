"""The metal prelude: the device helpers the lowering calls by name (``call_extern``), in MSL.

It implements the SIMT kit's helper contract (tilelang_core/simt/__init__.py) for Metal's address
spaces, plus ``tl_simdgroup_gemm`` (lower_gemm.py). MSL pointers carry their address space
(``device``, ``threadgroup``, ``thread``), so each helper is a template overloaded per space:
a call with a pointer of the wrong space does not compile (the syntax check in check.py sees
that too). The kit's shuffles and whole-simdgroup reductions need no helper: the dialect names
MSL's own ``simd_shuffle_xor`` and ``simd_sum``/``simd_max``/``simd_min``.

``PRELUDE`` is spliced by codegen after TVM's ``using namespace metal;``.
"""

from __future__ import annotations

from .warp_intrinsics import WARP_HELPER_CALL, WARP_HELPERS

PRELUDE = r"""
// ---- tilelang-metal device helpers (tilelang_metal/intrinsics.py) -----------------------------
// N-byte copies into threadgroup memory: a false predicate reads nothing and writes zeros.
// Copies into device memory (tl_store_N): a false predicate writes nothing. Pointers are aligned
// to N bytes by the lowering (threadgroup arrays are declared alignas(16)).
#define TL_COPY_HELPERS(N, V)                                                                    \
template <typename T, typename U>                                                                 \
inline void tl_copy_##N(threadgroup T* dst, const device U* src, bool pred) {                     \
  V v = V(0);                                                                                     \
  if (pred) v = *reinterpret_cast<const device V*>(src);                                          \
  *reinterpret_cast<threadgroup V*>(dst) = v;                                                     \
}                                                                                                 \
template <typename T, typename U>                                                                 \
inline void tl_copy_##N(threadgroup T* dst, const threadgroup U* src, bool pred) {                \
  V v = V(0);                                                                                     \
  if (pred) v = *reinterpret_cast<const threadgroup V*>(src);                                     \
  *reinterpret_cast<threadgroup V*>(dst) = v;                                                     \
}                                                                                                 \
template <typename T, typename U>                                                                 \
inline void tl_store_##N(device T* dst, const threadgroup U* src, bool pred) {                    \
  if (pred) *reinterpret_cast<device V*>(dst) = *reinterpret_cast<const threadgroup V*>(src);     \
}                                                                                                 \
template <typename T, typename U>                                                                 \
inline void tl_store_##N(device T* dst, const device U* src, bool pred) {                         \
  if (pred) *reinterpret_cast<device V*>(dst) = *reinterpret_cast<const device V*>(src);          \
}
TL_COPY_HELPERS(16, uint4)
TL_COPY_HELPERS(8, uint2)
TL_COPY_HELPERS(4, uint)

// Atomics on device or threadgroup memory, relaxed: the only order Metal's atomics have (the
// lowering refuses others by name). tl_atomic_<kind>(p, v) returns nothing, tl_atomic_<kind>_ret(
// p, v, order) the previous value; order is always 0 here. Metal has add, max, min, or, and, xor
// for int and uint and add for float; float max/min compare-and-swap the bits.
#define TL_ATOMIC_RMW(SPACE, T, A, KIND, FETCH)                                                    \
inline T tl_atomic_##KIND##_ret(SPACE T* addr, T value, int order) {                              \
  return FETCH(reinterpret_cast<SPACE A*>(addr), value, memory_order_relaxed);                   \
}                                                                                                 \
inline void tl_atomic_##KIND(SPACE T* addr, T value) { tl_atomic_##KIND##_ret(addr, value, 0); }
#define TL_ATOMIC_FLOAT_MINMAX(SPACE, KIND, KEEP)                                                  \
inline float tl_atomic_##KIND##_ret(SPACE float* addr, float value, int order) {                  \
  SPACE atomic_uint* word = reinterpret_cast<SPACE atomic_uint*>(addr);                          \
  uint old = atomic_load_explicit(word, memory_order_relaxed);                                    \
  while (!(as_type<float>(old) KEEP value)) {                                                     \
    if (atomic_compare_exchange_weak_explicit(word, &old, as_type<uint>(value),                   \
                                              memory_order_relaxed, memory_order_relaxed)) break; \
  }                                                                                               \
  return as_type<float>(old);                                                                     \
}                                                                                                 \
inline void tl_atomic_##KIND(SPACE float* addr, float value) { tl_atomic_##KIND##_ret(addr, value, 0); }
#define TL_ATOMIC_ACCESS(SPACE, T, A)                                                              \
inline void tl_atomic_store(SPACE T* addr, T value) {                                            \
  atomic_store_explicit(reinterpret_cast<SPACE A*>(addr), value, memory_order_relaxed);          \
}                                                                                                 \
inline T tl_atomic_load(SPACE T* addr, int order) {                                              \
  return atomic_load_explicit(reinterpret_cast<SPACE A*>(addr), memory_order_relaxed);           \
}
#define TL_ATOMIC_INT(SPACE, T, A)                                                                 \
TL_ATOMIC_RMW(SPACE, T, A, add, atomic_fetch_add_explicit)                                         \
TL_ATOMIC_RMW(SPACE, T, A, max, atomic_fetch_max_explicit)                                         \
TL_ATOMIC_RMW(SPACE, T, A, min, atomic_fetch_min_explicit)                                         \
TL_ATOMIC_RMW(SPACE, T, A, or, atomic_fetch_or_explicit)                                           \
TL_ATOMIC_RMW(SPACE, T, A, and, atomic_fetch_and_explicit)                                         \
TL_ATOMIC_RMW(SPACE, T, A, xor, atomic_fetch_xor_explicit)                                         \
TL_ATOMIC_ACCESS(SPACE, T, A)
TL_ATOMIC_INT(device, int, atomic_int)
TL_ATOMIC_INT(device, uint, atomic_uint)
TL_ATOMIC_INT(threadgroup, int, atomic_int)
TL_ATOMIC_INT(threadgroup, uint, atomic_uint)
TL_ATOMIC_RMW(device, float, atomic_float, add, atomic_fetch_add_explicit)
TL_ATOMIC_RMW(threadgroup, float, atomic_float, add, atomic_fetch_add_explicit)
TL_ATOMIC_ACCESS(device, float, atomic_float)
TL_ATOMIC_ACCESS(threadgroup, float, atomic_float)
TL_ATOMIC_FLOAT_MINMAX(device, max, >=)
TL_ATOMIC_FLOAT_MINMAX(device, min, <=)
TL_ATOMIC_FLOAT_MINMAX(threadgroup, max, >=)
TL_ATOMIC_FLOAT_MINMAX(threadgroup, min, <=)

// One simdgroup's share of a gemm: C (MI x NI tiles of 8x8, this lane's two elements of each in
// registers, in simdgroup_matrix order: c[(mi * NI + ni) * 2 + r]) += A (MI*8 x KS*8) * B
// (KS*8 x NI*8). B is row-major in threadgroup memory (rows of ldb elements), read transposed
// when TB; A likewise (lda, TA), or in registers (a previous gemm's accumulator in
// simdgroup_matrix order: tile (mi, kk) is a[(mi * KS + kk) * 2 + r]; lda unused). All 32 lanes
// of the simdgroup call it together.
template <int KS, bool TA, typename A>
inline void tl_simdgroup_load_a(thread simdgroup_matrix<A, 8, 8>& m, const threadgroup A* a, int lda,
                                int mi, int kk) {
  simdgroup_load(m, a + (TA ? kk * 8 * lda + mi * 8 : mi * 8 * lda + kk * 8), ulong(lda), ulong2(0, 0), TA);
}
template <int KS, bool TA, typename A>
inline void tl_simdgroup_load_a(thread simdgroup_matrix<A, 8, 8>& m, const thread A* a, int lda, int mi,
                                int kk) {
  m.thread_elements()[0] = a[(mi * KS + kk) * 2];
  m.thread_elements()[1] = a[(mi * KS + kk) * 2 + 1];
}
template <int MI, int NI, int KS, bool TA, bool TB, typename C, typename A, typename B, typename APtr>
inline void tl_simdgroup_gemm_impl(thread C* c, APtr a, int lda, const threadgroup B* b, int ldb) {
  simdgroup_matrix<C, 8, 8> acc[MI * NI];
  for (int t = 0; t < MI * NI; ++t) {
    acc[t].thread_elements()[0] = c[2 * t];
    acc[t].thread_elements()[1] = c[2 * t + 1];
  }
  for (int kk = 0; kk < KS; ++kk) {
    simdgroup_matrix<A, 8, 8> am[MI];
    simdgroup_matrix<B, 8, 8> bm[NI];
    for (int mi = 0; mi < MI; ++mi) {
      tl_simdgroup_load_a<KS, TA>(am[mi], a, lda, mi, kk);
    }
    for (int ni = 0; ni < NI; ++ni) {
      simdgroup_load(bm[ni], b + (TB ? ni * 8 * ldb + kk * 8 : kk * 8 * ldb + ni * 8), ulong(ldb),
                     ulong2(0, 0), TB);
    }
    for (int mi = 0; mi < MI; ++mi) {
      for (int ni = 0; ni < NI; ++ni) {
        simdgroup_multiply_accumulate(acc[mi * NI + ni], am[mi], bm[ni], acc[mi * NI + ni]);
      }
    }
  }
  for (int t = 0; t < MI * NI; ++t) {
    c[2 * t] = acc[t].thread_elements()[0];
    c[2 * t + 1] = acc[t].thread_elements()[1];
  }
}
template <int MI, int NI, int KS, bool TA, bool TB, typename C, typename A, typename B>
inline void tl_simdgroup_gemm(thread C* c, const threadgroup A* a, int lda, const threadgroup B* b, int ldb) {
  tl_simdgroup_gemm_impl<MI, NI, KS, TA, TB, C, A, B>(c, a, lda, b, ldb);
}
template <int MI, int NI, int KS, bool TA, bool TB, typename C, typename A, typename B>
inline void tl_simdgroup_gemm(thread C* c, const thread A* a, int lda, const threadgroup B* b, int ldb) {
  tl_simdgroup_gemm_impl<MI, NI, KS, TA, TB, C, A, B>(c, a, lda, b, ldb);
}
// ------------------------------------------------------------------------------------------------
"""

def prelude_for(kernels: str) -> str:
    """PRELUDE, with the warp helpers (warp_intrinsics.py) when the kernels call one of them: other
    kernels' source stays as it was. They go before the prelude's closing line (check.py cuts the
    prelude from the kernel there)."""
    if not WARP_HELPER_CALL.search(kernels):
        return PRELUDE
    end = PRELUDE.rindex("// -------")
    return PRELUDE[:end] + WARP_HELPERS + PRELUDE[end:]
