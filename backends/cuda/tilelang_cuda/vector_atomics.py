"""Tile atomic adds of float32 from shared memory into a global tensor as 16-byte vector reductions
(``red.global.add.v4.f32``, sm_90 and up): TileLang's ``T.atomic_add(dQ[tile], dq_shared)``, the
FlashAttention backward's dQ accumulation.

The kit's rule (tilelang_core/simt/lower_atomic.py) adds element by element: one 4-byte atomic per
element, each warp's scattered over rows. Here each thread takes 4 consecutive elements of a row
(one 16-byte shared load; the swizzles keep 16-byte chunks whole) and adds them with one vector
reduction, and a warp covers 512 contiguous bytes of a row: 4x fewer atomic operations, whole
cache lines. Same values: float addition per element, in some order, as before.

Taken when: ``add``, relaxed, a tile atomic (not per thread, not inside T.Parallel), source a
shared tile and destination a global float32 tensor, both with rows in whole, 4-aligned runs of
4 along the tensor's contiguous last axis (``row_aligned``), on sm_90 or newer. Otherwise the
kit's rule. Rows past a ragged tensor's end are skipped, as there.
"""

from __future__ import annotations

from tvm import tirx

from tilelang_core.ir import Atomic, TileOp
from tilelang_core.ir import region as R
from tilelang_core.simt.lower_atomic import lower_atomic as lower_atomic_elementwise
from tilelang_core.simt.lowering import (GLOBAL, SHARED, dtype, in_bounds, load, region_index, row_aligned, scope,
                                         spread_over_threads, state_of, tile_extents)

from .target import capability

HELPER = "tl_red_add_v4"
VEC = 4


def float32_tile_add(op) -> bool:
    """A relaxed tile ``T.atomic_add`` of a float32 shared tile into a float32 global tensor (what
    the vector reductions here and the TMA reduce-adds of hopper/tma_reduce.py can take)."""
    return (isinstance(op, Atomic) and not op.per_thread and op.kind == "add" and op.memory_order == "relaxed"
            and op.src_is_region and scope(op.src) in SHARED and scope(op.dst) in GLOBAL
            and dtype(op.src) == "float32" and dtype(op.dst) == "float32")


def vectorizable(op: Atomic, st) -> bool:
    if not float32_tile_add(op):
        return False
    if not capability(st.backend.arch, "vector_red"):
        return False
    extents = [R.as_int(e) for e in tile_extents(op.dst)]
    if not extents or any(e is None for e in extents) or extents != [R.as_int(e) for e in tile_extents(op.src)]:
        return False
    return all(row_aligned(r, VEC, st) for r in (op.src, op.dst))


def lower_atomic(call, ctx):
    op: Atomic = TileOp.from_stmt(call)
    st = state_of(ctx)
    if not vectorizable(op, st):
        return lower_atomic_elementwise(call, ctx)
    extents = [R.as_int(e) for e in tile_extents(op.dst)]

    def element(index):
        at = index[:-1] + [index[-1] * VEC]
        dst_index, src_index = region_index(op.dst, at), region_index(op.src, at)
        stmt = tirx.Evaluate(tirx.call_extern("void", HELPER, tirx.address_of(load(op.dst, dst_index)),
                                              tirx.address_of(load(op.src, src_index))))
        return stmt, [in_bounds(st, op.dst, dst_index)]

    return spread_over_threads(st, extents[:-1] + [extents[-1] // VEC], element)


#: the helper (intrinsics.ON_DEMAND_HELPERS): sm_90's vector reduction, four scalar atomics below
HELPERS = {HELPER: ("__device__ __forceinline__ void tl_red_add_v4(float* dst, const float* src) {\n"
                    "  const float4 v = *reinterpret_cast<const float4*>(src);\n"
                    "#if __CUDA_ARCH__ >= 900\n"
                    "  asm volatile(\"red.global.add.v4.f32 [%0], {%1, %2, %3, %4};\" :: \"l\"(dst), \"f\"(v.x), "
                    "\"f\"(v.y), \"f\"(v.z), \"f\"(v.w) : \"memory\");\n"
                    "#else\n"
                    "  atomicAdd(dst, v.x); atomicAdd(dst + 1, v.y); atomicAdd(dst + 2, v.z); atomicAdd(dst + 3, v.w);\n"
                    "#endif\n}\n")}
