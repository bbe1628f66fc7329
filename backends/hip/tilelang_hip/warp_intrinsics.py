"""The HIP definitions of the SIMT kit's warp helpers (votes, shuffles, warp reductions, bit
scans, ``__ldg``; contract in tilelang_core/simt/__init__.py), from clang's AMDGPU builtins (the
prelude compiles without HIP's headers):

* votes: the wave's ballot (``__builtin_amdgcn_ballot_w64`` / ``_w32``: one bit per lane of the
  wave, 64 or 32) masked with the kit's 64-bit lane mask; ``activemask`` is the ballot of true;
* ``tl_shfl_sync``: ``ds_bpermute`` (any lane of the wave), word by word;
* ``match_*``: one shuffle per lane of the (32-lane) wave, bit patterns compared;
* warp reductions: a butterfly of shuffles over the whole wave;
* ``syncthreads_*``: an LDS counter between block barriers (HIP's own needs the device libs);
* ``sync_warp``: wave-scope fences around ``s_barrier``-free ``wave_barrier``.
"""

from __future__ import annotations

import re

#: a call of one of the helpers below in a kernel's source (only such kernels get them)
WARP_HELPER_CALL = re.compile(r"\btl_(?:ballot_sync|any_sync|all_sync|activemask|match_any_sync|match_all_sync|"
                              r"shfl_sync|warp_reduce_\w+|sync_warp|elect_one_sync|syncthreads_\w+|ffs|fns|"
                              r"ldg|device_assert)\(")

WARP_HELPERS = r"""// ---- warp helpers (tilelang_hip/warp_intrinsics.py) ---------------------------------------------
#ifndef __AMDGCN_WAVEFRONT_SIZE
#error "tilelang-hip: clang did not define __AMDGCN_WAVEFRONT_SIZE"
#endif
TL_D unsigned long long tl_wave_ballot(bool pred) {
#if __AMDGCN_WAVEFRONT_SIZE == 64
  return __builtin_amdgcn_ballot_w64(pred);
#else
  return (unsigned long long)__builtin_amdgcn_ballot_w32(pred);
#endif
}
TL_D unsigned long long tl_ballot_sync(unsigned long long lanes, bool pred) { return tl_wave_ballot(pred) & lanes; }
TL_D int tl_any_sync(unsigned long long lanes, bool pred) { return (tl_wave_ballot(pred) & lanes) != 0; }
TL_D int tl_all_sync(unsigned long long lanes, bool pred) {
  return (tl_wave_ballot(pred) & lanes) == (tl_wave_ballot(true) & lanes);
}
TL_D unsigned long long tl_activemask() { return tl_wave_ballot(true); }
// v of lane src_lane of the wave (the kit computed the lane of each shuffle form)
template <typename T> TL_D T tl_shfl_sync(unsigned long long, T v, int src_lane) {
  constexpr int words = (sizeof(T) + 3) / 4;
  unsigned w[words] = {};
  __builtin_memcpy(w, &v, sizeof(T));
  for (int i = 0; i < words; ++i) w[i] = (unsigned)__builtin_amdgcn_ds_bpermute(src_lane << 2, (int)w[i]);
  T r;
  __builtin_memcpy(&r, w, sizeof(T));
  return r;
}
template <typename T> TL_D unsigned long long tl_bit_pattern(T v) {
  unsigned long long bits = 0;
  __builtin_memcpy(&bits, &v, sizeof(T));
  return bits;
}
template <typename T> TL_D unsigned tl_match_any_sync(unsigned long long lanes, T v) {
  unsigned long long live = tl_wave_ballot(true) & lanes;
  unsigned peers = 0;
  for (int lane = 0; lane < 32; ++lane) {  // the kit refuses match_* on 64-lane waves
    T other = tl_shfl_sync(lanes, v, lane);
    if (((live >> lane) & 1) && tl_bit_pattern(other) == tl_bit_pattern(v)) peers |= 1u << lane;
  }
  return peers;
}
template <typename T> TL_D unsigned tl_match_all_sync(unsigned long long lanes, T v) {
  return tl_match_any_sync(lanes, v) == (unsigned)(tl_wave_ballot(true) & lanes) ? (unsigned)lanes : 0u;
}
template <typename T> TL_D T tl_lane_max(T a, T b) { return a < b ? b : a; }
template <typename T> TL_D T tl_lane_min(T a, T b) { return b < a ? b : a; }
TL_D float tl_lane_max(float a, float b) { return __builtin_fmaxf(a, b); }
TL_D float tl_lane_min(float a, float b) { return __builtin_fminf(a, b); }
TL_D double tl_lane_max(double a, double b) { return __builtin_fmax(a, b); }
TL_D double tl_lane_min(double a, double b) { return __builtin_fmin(a, b); }
TL_D half tl_lane_max(half a, half b) { return (half)__builtin_fmaxf((float)a, (float)b); }
TL_D half tl_lane_min(half a, half b) { return (half)__builtin_fminf((float)a, (float)b); }
#define TL_WARP_REDUCE(KIND, COMBINE)                                                         \
  template <typename T> TL_D T tl_warp_reduce_##KIND(T v) {                                 \
    for (int offset = __AMDGCN_WAVEFRONT_SIZE / 2; offset > 0; offset >>= 1) {              \
      T other = tl_shfl_sync(~0ull, v, tl_lane_id() ^ offset);                              \
      v = COMBINE;                                                                          \
    }                                                                                       \
    return v;                                                                               \
  }
TL_WARP_REDUCE(sum, v + other)
TL_WARP_REDUCE(max, tl_lane_max(v, other))
TL_WARP_REDUCE(min, tl_lane_min(v, other))
TL_WARP_REDUCE(bitand, v & other)
TL_WARP_REDUCE(bitor, v | other)
TL_D void tl_sync_warp(unsigned long long) {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
  __builtin_amdgcn_wave_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
}
TL_D bool tl_elect_one_sync() { return tl_lane_id() == __builtin_ctzll(tl_wave_ballot(true)); }
// Block votes: a counter in LDS between barriers (every thread of the block calls them)
TL_D int tl_block_count(bool pred) {
  __shared__ int tl_block_votes;
  if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) tl_block_votes = 0;
  __syncthreads();
  if (pred) __hip_atomic_fetch_add(&tl_block_votes, 1, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_WORKGROUP);
  __syncthreads();
  int votes = tl_block_votes;
  __syncthreads();  // nobody resets the counter for the next vote before everyone has read it
  return votes;
}
TL_D int tl_syncthreads_count(bool pred) { return tl_block_count(pred); }
TL_D int tl_syncthreads_and(bool pred) { return tl_block_count(!pred) == 0; }
TL_D int tl_syncthreads_or(bool pred) { return tl_block_count(pred) != 0; }
TL_D int tl_ffs(int v) { return __builtin_ffs(v); }
TL_D int tl_ffs(unsigned v) { return __builtin_ffs((int)v); }
TL_D int tl_ffs(long v) { return __builtin_ffsll((long long)v); }
TL_D int tl_ffs(unsigned long v) { return __builtin_ffsll((long long)v); }
TL_D int tl_ffs(long long v) { return __builtin_ffsll(v); }
TL_D int tl_ffs(unsigned long long v) { return __builtin_ffsll((long long)v); }
// CUDA's __fns (PTX fns.b32): the offset-th set bit from base, up (offset > 0) or down
TL_D unsigned tl_fns(unsigned mask, unsigned base, int offset) {
  base &= 31u;
  if (offset == 0) return ((mask >> base) & 1u) ? base : 0xFFFFFFFFu;
  int step = offset > 0 ? 1 : -1, count = (offset > 0 ? offset : -offset) - 1;
  for (int pos = (int)base; pos >= 0 && pos < 32; pos += step) {
    if ((mask >> pos) & 1u) {
      if (count == 0) return (unsigned)pos;
      --count;
    }
  }
  return 0xFFFFFFFFu;
}
template <typename T> TL_D T tl_ldg(const T* p) { return *p; }  // no separate read-only cache path
TL_D void tl_device_assert(bool ok, const char*) {  // T.device_assert: a trap (no device printf here)
  if (!ok) __builtin_trap();
}
"""

__all__ = ["WARP_HELPER_CALL", "WARP_HELPERS"]
