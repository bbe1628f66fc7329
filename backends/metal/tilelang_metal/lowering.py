"""The metal rule table: the SIMT kit's rules (copy, fill, reduce, atomic, cumsum; see
tilelang_core/simt) with this backend's gemm (simdgroup_matrix, lower_gemm.py), and the kit's
knobs for Metal.

Rules are looked up by kind at LowerTileOps; importing this module registers them (idempotent).
"""

from __future__ import annotations

from tilelang_core.simt import SimtDialect, register_simt_rules

from .lower_gemm import lower_gemm

KIND = "metal"

#: Metal's native atomics on device and threadgroup memory (atomic_float only adds; float max/min
#: go through a compare-and-swap loop in the prelude)
ATOMIC_DTYPES = {"add": ("float32", "int32", "uint32"), "max": ("float32", "int32", "uint32"),
                 "min": ("float32", "int32", "uint32")}

#: 32-lane simdgroups; no asynchronous global->threadgroup copies (T.Pipelined runs
#: synchronously); MSL's own simdgroup functions for butterflies and whole-simdgroup reductions
METAL = SimtDialect(kind=KIND, warp_size=32, async_copy=False, shuffle_xor="simd_shuffle_xor",
                    atomic_dtypes=ATOMIC_DTYPES,
                    warp_reduce={"sum": "simd_sum", "max": "simd_max", "min": "simd_min"})

register_simt_rules(KIND, gemm=lower_gemm)
