"""The metal rule table: the SIMT kit's rules (copy, fill, reduce, atomic, cumsum; see
tilelang_core/simt) with this backend's gemm (simdgroup_matrix, lower_gemm.py), and the kit's
knobs for Metal.

Rules are looked up by kind at LowerTileOps; importing this module registers them (idempotent).
"""

from __future__ import annotations

from tilelang_core.simt import SimtDialect, register_simt_rules

from .lower_gemm import lower_gemm

KIND = "metal"

#: Metal's native atomics on device and threadgroup memory (atomic_float only adds, loads and
#: stores; float max/min go through a compare-and-swap loop in the prelude)
_INTS = ("int32", "uint32")
ATOMIC_DTYPES = {"add": ("float32",) + _INTS, "max": ("float32",) + _INTS, "min": ("float32",) + _INTS,
                 "or": _INTS, "and": _INTS, "xor": _INTS, "store": ("float32",) + _INTS,
                 "load": ("float32",) + _INTS}
#: MSL's atomics are relaxed only (memory_order_relaxed): any other order is refused by name
ATOMIC_ORDERS = ("relaxed",)

#: 32-lane simdgroups; no asynchronous global->threadgroup copies (T.Pipelined runs
#: synchronously); MSL's own simdgroup functions for butterflies and whole-simdgroup reductions;
#: no block votes (T.syncthreads_count/and/or), no 32-byte vectors
METAL = SimtDialect(kind=KIND, warp_size=32, async_copy=False, shuffle_xor="simd_shuffle_xor",
                    atomic_dtypes=ATOMIC_DTYPES, atomic_orders=ATOMIC_ORDERS,
                    warp_reduce={"sum": "simd_sum", "max": "simd_max", "min": "simd_min"},
                    block_votes=False,  # warp_intrinsics.py: MSL has no threadgroup memory in helpers
                    vector_bytes=16,  # MSL vectors: at most 4 x 32 bits (no T.ldg256)
                    device_barrier="tl_sync_threads_device")  # (its block barrier orders threadgroup memory)

register_simt_rules(KIND, gemm=lower_gemm)
