"""Vector atomic adds: the ``AtomicAddx2`` / ``AtomicAddx4`` helpers of the SIMT kit
(tilelang_core/simt/vector_atomic_adds.py: a thread's adds into 2 or 4 consecutive global elements
as one instruction) and, below, the tile add of float32 from shared memory as 16-byte vector
reductions.

Which types take how many lanes (``vector_atomic_adds(arch)``, the dialect's map): float16 pairs
everywhere (``atomicAdd`` of ``__half2``, sm_60 and up; a quad is two pairs); bfloat16 pairs and
quads on sm_90 (``__nv_bfloat162``: below sm_90 CUDA emulates it with a compare-and-swap loop, as
it does a single bfloat16 add, so nothing is gained); float32 pairs and quads on sm_90
(``red.global.add.v2/v4.f32``). Each element's add is atomic on its own, as the scalar helper's.

Tile atomic adds of float32 from shared memory into a global tensor as 16-byte vector reductions
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


def vector_atomic_adds(arch: str) -> dict[str, int]:
    """SimtDialect.vector_atomic_adds for ``arch`` (module docstring)."""
    lanes = {"float16": 4}
    if capability(arch, "vector_red"):
        lanes.update(bfloat16=4, float32=4)
    return lanes


#: AtomicAddx<N>(dst, v0, .., v<N-1>[, order]): dst 2N-byte (float16), 4N-byte (float32) aligned in
#: global memory; an order goes around the relaxed adds as around the scalar helpers' (tl_fence_*)
_ADDX = r"""// AtomicAddx2 / AtomicAddx4 (tilelang_core/simt/vector_atomic_adds.py): consecutive global
// elements added by one reduction, each element's add atomic on its own. Inline PTX, not atomicAdd
// of a __half2: that takes a generic pointer and compiles a shared-memory branch beside it. Defined
// as tl_atomic_addx2/x4; kernels call them by TileLang's names, so their source reads as TileLang's.
#define AtomicAddx2 tl_atomic_addx2
#define AtomicAddx4 tl_atomic_addx4
__device__ __forceinline__ unsigned tl_pack2(half a, half b) {
  __half2 v = __halves2half2(a, b);
  return *reinterpret_cast<unsigned*>(&v);
}
__device__ __forceinline__ void tl_atomic_addx2(half* dst, half a, half b) {
  asm volatile("red.global.add.noftz.f16x2 [%0], %1;" :: "l"(dst), "r"(tl_pack2(a, b)) : "memory");
}
__device__ __forceinline__ void tl_atomic_addx4(half* dst, half a, half b, half c, half d) {
#if __CUDA_ARCH__ >= 900
  asm volatile("red.global.add.noftz.v2.f16x2 [%0], {%1, %2};" :: "l"(dst), "r"(tl_pack2(a, b)),
               "r"(tl_pack2(c, d)) : "memory");
#else
  tl_atomic_addx2(dst, a, b);
  tl_atomic_addx2(dst + 2, c, d);
#endif
}
#if __CUDA_ARCH__ >= 900
__device__ __forceinline__ unsigned tl_pack2(__nv_bfloat16 a, __nv_bfloat16 b) {
  __nv_bfloat162 v = __halves2bfloat162(a, b);
  return *reinterpret_cast<unsigned*>(&v);
}
__device__ __forceinline__ void tl_atomic_addx2(__nv_bfloat16* dst, __nv_bfloat16 a, __nv_bfloat16 b) {
  asm volatile("red.global.add.noftz.bf16x2 [%0], %1;" :: "l"(dst), "r"(tl_pack2(a, b)) : "memory");
}
__device__ __forceinline__ void tl_atomic_addx4(__nv_bfloat16* dst, __nv_bfloat16 a, __nv_bfloat16 b,
                                            __nv_bfloat16 c, __nv_bfloat16 d) {
  asm volatile("red.global.add.noftz.v2.bf16x2 [%0], {%1, %2};" :: "l"(dst), "r"(tl_pack2(a, b)),
               "r"(tl_pack2(c, d)) : "memory");
}
__device__ __forceinline__ void tl_atomic_addx2(float* dst, float a, float b) {
  asm volatile("red.global.add.v2.f32 [%0], {%1, %2};" :: "l"(dst), "f"(a), "f"(b) : "memory");
}
__device__ __forceinline__ void tl_atomic_addx4(float* dst, float a, float b, float c, float d) {
  asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" :: "l"(dst), "f"(a), "f"(b), "f"(c), "f"(d)
               : "memory");
}
#endif
template <typename T>
__device__ __forceinline__ void tl_atomic_addx2(T* dst, T a, T b, int order) {
  tl_fence_before(order);
  tl_atomic_addx2(dst, a, b);
  tl_fence_after(order);
}
template <typename T>
__device__ __forceinline__ void tl_atomic_addx4(T* dst, T a, T b, T c, T d, int order) {
  tl_fence_before(order);
  tl_atomic_addx4(dst, a, b, c, d);
  tl_fence_after(order);
}
"""

#: the helpers (intrinsics.ON_DEMAND_HELPERS): sm_90's vector reduction of a float4 from shared
#: memory (four scalar atomics below), and the AtomicAddx family (one block: x4 calls x2)
HELPERS = {"AtomicAddx2": _ADDX, "AtomicAddx4": _ADDX, HELPER: ("__device__ __forceinline__ void tl_red_add_v4(float* dst, const float* src) {\n"
                    "  const float4 v = *reinterpret_cast<const float4*>(src);\n"
                    "#if __CUDA_ARCH__ >= 900\n"
                    "  asm volatile(\"red.global.add.v4.f32 [%0], {%1, %2, %3, %4};\" :: \"l\"(dst), \"f\"(v.x), "
                    "\"f\"(v.y), \"f\"(v.z), \"f\"(v.w) : \"memory\");\n"
                    "#else\n"
                    "  atomicAdd(dst, v.x); atomicAdd(dst + 1, v.y); atomicAdd(dst + 2, v.z); atomicAdd(dst + 3, v.w);\n"
                    "#endif\n}\n")}
