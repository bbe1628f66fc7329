"""The Metal definitions of the SIMT kit's warp helpers (contract in
tilelang_core/simt/__init__.py), from MSL's SIMD-group functions: ``simd_ballot`` and
``simd_active_threads_mask`` for the votes (masked with the kit's lane mask), ``simd_shuffle``
(the kit computed the source lane of each shuffle form), ``simd_sum``/``simd_max``/``simd_min``/
``simd_and``/``simd_or`` for warp reductions of 16- and 32-bit values (64-bit integers: a
butterfly of 32-bit shuffles), ``simdgroup_barrier`` and ``simd_is_first``.

Not here, refused at the user's line (``SimtDialect.block_votes=False`` in lowering.py):
``T.syncthreads_*`` (a block vote needs threadgroup memory, which MSL declares only in kernel
scope, not in a helper).
"""

from __future__ import annotations

import re

#: a call of one of the helpers below in a kernel's source
WARP_HELPER_CALL = re.compile(r"\btl_(?:ballot_sync|any_sync|all_sync|activemask|match_any_sync|match_all_sync|"
                              r"shfl_sync|warp_reduce_\w+|sync_warp|sync_threads_device|elect_one_sync|ffs|fns|ldg)\(")

WARP_HELPERS = r"""
// Warp helpers (tilelang_metal/warp_intrinsics.py): lane masks are 64-bit, a simdgroup has 32 lanes.
inline ulong tl_simd_bits(simd_vote vote) { return static_cast<ulong>(static_cast<simd_vote::vote_t>(vote)); }
inline ulong tl_ballot_sync(ulong lanes, bool pred) { return tl_simd_bits(simd_ballot(pred)) & lanes; }
inline int tl_any_sync(ulong lanes, bool pred) { return (tl_simd_bits(simd_ballot(pred)) & lanes) != 0; }
inline int tl_all_sync(ulong lanes, bool pred) {
  return (tl_simd_bits(simd_ballot(pred)) & lanes) == (tl_simd_bits(simd_active_threads_mask()) & lanes);
}
inline ulong tl_activemask() { return tl_simd_bits(simd_active_threads_mask()); }
template <typename T> inline T tl_shfl_sync(ulong lanes, T v, int src_lane) { return simd_shuffle(v, ushort(src_lane)); }
inline bool tl_shfl_sync(ulong lanes, bool v, int src_lane) { return simd_shuffle(ushort(v), ushort(src_lane)) != 0; }
inline long tl_shfl_sync(ulong lanes, long v, int src_lane) {
  uint2 w = as_type<uint2>(v);
  return as_type<long>(uint2(simd_shuffle(w.x, ushort(src_lane)), simd_shuffle(w.y, ushort(src_lane))));
}
inline ulong tl_shfl_sync(ulong lanes, ulong v, int src_lane) {
  return as_type<ulong>(tl_shfl_sync(lanes, as_type<long>(v), src_lane));
}
inline ulong tl_bit_pattern(int v) { return as_type<uint>(v); }
inline ulong tl_bit_pattern(uint v) { return v; }
inline ulong tl_bit_pattern(float v) { return as_type<uint>(v); }
inline ulong tl_bit_pattern(long v) { return as_type<ulong>(v); }
inline ulong tl_bit_pattern(ulong v) { return v; }
template <typename T> inline uint tl_match_any_sync(ulong lanes, T v) {
  ulong live = tl_activemask() & lanes;
  uint peers = 0;
  for (int lane = 0; lane < 32; ++lane) {
    T other = tl_shfl_sync(lanes, v, lane);
    if (((live >> lane) & 1) && tl_bit_pattern(other) == tl_bit_pattern(v)) peers |= 1u << lane;
  }
  return peers;
}
template <typename T> inline uint tl_match_all_sync(ulong lanes, T v) {
  return tl_match_any_sync(lanes, v) == uint(tl_activemask() & lanes) ? uint(lanes) : 0u;
}
template <typename T> inline T tl_warp_reduce_sum(T v) { return simd_sum(v); }
template <typename T> inline T tl_warp_reduce_max(T v) { return simd_max(v); }
template <typename T> inline T tl_warp_reduce_min(T v) { return simd_min(v); }
template <typename T> inline T tl_warp_reduce_bitand(T v) { return simd_and(v); }
template <typename T> inline T tl_warp_reduce_bitor(T v) { return simd_or(v); }
// 64-bit integers: simd_sum and co. take 16- and 32-bit values; a butterfly of 32-bit halves
#define TL_WARP_REDUCE_64_KIND(T, KIND, COMBINE)                                                 \
  inline T tl_warp_reduce_##KIND(T v) {                                                          \
    for (ushort offset = 16; offset > 0; offset >>= 1) {                                         \
      uint2 w = as_type<uint2>(v);                                                               \
      T other = as_type<T>(uint2(simd_shuffle_xor(w.x, offset), simd_shuffle_xor(w.y, offset))); \
      v = COMBINE;                                                                               \
    }                                                                                            \
    return v;                                                                                    \
  }
TL_WARP_REDUCE_64_KIND(long, sum, v + other)
TL_WARP_REDUCE_64_KIND(long, max, max(v, other))
TL_WARP_REDUCE_64_KIND(long, min, min(v, other))
TL_WARP_REDUCE_64_KIND(long, bitand, v & other)
TL_WARP_REDUCE_64_KIND(long, bitor, v | other)
TL_WARP_REDUCE_64_KIND(ulong, sum, v + other)
TL_WARP_REDUCE_64_KIND(ulong, max, max(v, other))
TL_WARP_REDUCE_64_KIND(ulong, min, min(v, other))
TL_WARP_REDUCE_64_KIND(ulong, bitand, v & other)
TL_WARP_REDUCE_64_KIND(ulong, bitor, v | other)
inline void tl_sync_warp(ulong lanes) { simdgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup); }
inline void tl_sync_threads_device() { threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup); }
inline bool tl_elect_one_sync() { return simd_is_first(); }
inline int tl_ffs(uint v) { return v == 0 ? 0 : int(ctz(v)) + 1; }
inline int tl_ffs(int v) { return tl_ffs(as_type<uint>(v)); }
inline int tl_ffs(ulong v) {
  uint lo = uint(v), hi = uint(v >> 32);
  return lo != 0 ? tl_ffs(lo) : (hi != 0 ? tl_ffs(hi) + 32 : 0);
}
inline int tl_ffs(long v) { return tl_ffs(as_type<ulong>(v)); }
inline uint tl_fns(uint mask, uint base, int offset) {
  base &= 31u;
  if (offset == 0) return ((mask >> base) & 1u) ? base : 0xFFFFFFFFu;
  int step = offset > 0 ? 1 : -1, count = (offset > 0 ? offset : -offset) - 1;
  for (int pos = int(base); pos >= 0 && pos < 32; pos += step) {
    if ((mask >> pos) & 1u) {
      if (count == 0) return uint(pos);
      --count;
    }
  }
  return 0xFFFFFFFFu;
}
template <typename T> inline T tl_ldg(const device T* p) { return *p; }
"""

__all__ = ["WARP_HELPER_CALL", "WARP_HELPERS"]
