"""The hip rule table: the SIMT kit's rules (copy, fill, reduce, atomic, cumsum; see
tilelang_core/simt) with this backend's gemm (MFMA/WMMA, lower_gemm.py), and the kit's knobs
for AMD GPUs.

``async_copy`` is on although AMD has no per-lane async global->LDS copy: the prelude's
``tl_cp_async_N`` copies synchronously (intrinsics.py), which satisfies the kit's contract, and
the kit then gives T.Pipelined loops one LDS buffer per stage and one barrier per iteration, with
the next tile's global loads issued before the current tile's math (double-buffered LDS).
"""

from __future__ import annotations

from dataclasses import replace

from tilelang_core.simt import SimtDialect, register_simt_rules

from .lower_gemm import lower_gemm

KIND = "hip"

#: what the prelude's tl_atomic_* take (floating max/min by compare-and-swap; no bfloat16: the
#: device prelude has no bfloat16 type)
_INTS = ("int32", "uint32", "int64", "uint64")
HIP_ATOMIC_DTYPES = {
    "add": ("float16", "float32", "float64") + _INTS,
    "max": ("float16", "float32", "float64") + _INTS,
    "min": ("float16", "float32", "float64") + _INTS,
    "or": _INTS, "and": _INTS, "xor": _INTS,
    "store": ("int8", "uint8", "int16", "uint16", "float16", "float32", "float64") + _INTS,
    "load": ("int8", "uint8", "int16", "uint16", "float16", "float32", "float64") + _INTS,
}

#: CDNA wavefronts (gfx90a, gfx94x): 64 lanes
HIP_WAVE64 = SimtDialect(kind=KIND, warp_size=64, async_copy=True, atomic_dtypes=HIP_ATOMIC_DTYPES)
#: RDNA3 (gfx11) in wave32 mode, which WMMA's _w32 forms need
HIP_WAVE32 = replace(HIP_WAVE64, warp_size=32)

register_simt_rules(KIND, gemm=lower_gemm)


def dialect_for(wave_size: int, pipelining: bool = True) -> SimtDialect:
    dialect = HIP_WAVE32 if wave_size == 32 else HIP_WAVE64
    return dialect if pipelining else replace(dialect, async_copy=False)
