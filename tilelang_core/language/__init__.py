"""The TileLang kernel language: ``import tilelang_core.language as T``.

Same names and semantics as TileLang's ``tilelang.language``, so a kernel ports by changing the
import. Example::

    import tilelang_core.language as T

    @T.prim_func
    def matmul(A: T.Tensor((1024, 1024), T.float16), B: T.Tensor((1024, 1024), T.float16),
               C: T.Tensor((1024, 1024), T.float32)):
        with T.Kernel(T.ceildiv(1024, 128), T.ceildiv(1024, 128), threads=128) as (bx, by):
            A_s = T.alloc_shared((128, 32), T.float16)
            B_s = T.alloc_shared((32, 128), T.float16)
            C_f = T.alloc_fragment((128, 128), T.float32)
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(1024, 32), num_stages=3):
                T.copy(A[by * 128, k * 32], A_s)
                T.copy(B[k * 32, bx * 128], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * 128, bx * 128])
"""

from ..ir import GemmWarpPolicy
from ..layout import Layout  # T.Layout(shape, forward): TileLang's layouts, flat or multi-dimensional
from ..jit import compile  # T.compile(func, out_idx=None, target="auto", pass_configs=None)
from . import dtypes as _dtypes
from .allocate import alloc_buffer, alloc_fragment, alloc_global, alloc_local, alloc_shared, alloc_var
from .barriers import (WarpSpecialize, alloc_barrier, alloc_cluster_barrier, annotate_consumer_reg_alloc,
                       annotate_producer_reg_dealloc, barrier_arrive, barrier_wait, cp_async_barrier_noinc, dec_max_nreg, inc_max_nreg, mbarrier_arrive,
                       mbarrier_arrive_expect_tx, mbarrier_expect_tx, mbarrier_wait_parity, no_set_max_nreg,
                       set_max_nreg, tma_copy, tma_store_arrive, tma_store_wait, ws)
from .annotations import (Fragment, annotate_compile_flags, annotate_layout, annotate_min_blocks_per_sm, annotate_pass_configs,
                          annotate_safe_value, use_swizzle)
from .async_groups import access_ptr, ptx_commit_group, ptx_cp_async, ptx_wait_group
from .warp_matrix import ptx_ldmatrix, ptx_mma
from .sparse_gemm import gemm_sp
from .intrinsics import (Broadcast, Ramp, Serial, Shuffle, address_of, assume, atan, attr, bitwise_and,
                       bitwise_not, bitwise_or, bitwise_xor, call_extern, call_intrin, clz, comm_reducer,
                       copysign, cosh, device_assert, disable_warp_group_reg_alloc, evaluate, extract_lane, fmod, func_attr, handle, hypot, ldexp, nextafter, isfinite, let, likely, log1p, nearbyint, popcount,
                       reinterpret, shift_left, shift_right, sinh, sync_threads, tan, tvm_thread_allreduce)
from .debug_print import print  # noqa: A004 - T.print
from .dtypes import DType, canonical_dtype
from .eager import EagerProgram, Specialization, const, empty, looks_eager
from .expr import (Cast, Select, abs, align_up, cast, ceil, ceildiv, clamp, cos, erf, exp, exp2, exp10, floor,
                   floordiv, floormod, if_then_else, infinity, isinf, isnan, log, log2, log10,
                   max, max_value, min, min_value, pow, round, rsqrt, sigmoid, sin, sqrt, tanh,
                   trunc, truncdiv, truncmod)
from .function import prim_func
from .kernel import (Kernel, get_block_binding, get_block_bindings, get_thread_binding, import_source,
                     get_thread_bindings, launch_thread)
from .launch_dependency import pdl_sync, pdl_trigger, sync_grid
from .source_kernel import CUDASourceCodeKernel
from .cluster import (ClusterKernel, block_rank_in_cluster, cluster_arrive, cluster_arrive_relaxed, cluster_sync,
                      cluster_wait)
from .macro import Ref, macro
from .thread_return import thread_return
from .packed_math import abs2, add2, fma2, max2, min2, mul2, sub2
from .pointers import make_tensor, match_buffer, ptr
from .random import rng_init, rng_rand, rng_rand_float
from .reducers import alloc_reducer, finalize_reducer, reducer_init, reducer_update
from .tile_schedule import Persistent, PersistentTileScheduler
from .loops import Parallel, Pipelined, Unroll, grid, parallel, serial, thread_binding, unroll, vectorized
from .tensor import (Buffer, FragmentBuffer, LocalBuffer, SharedBuffer, StridedTensor, Tensor, TensorType,
                     dynamic, symbolic)
from .tile_ops import (atomic_add, atomic_addx2, atomic_addx4, atomic_max, atomic_min, async_copy, clear, copy, cummax, cumsum, fill, gemm,
                       reduce, reduce_absmax, reduce_abssum, reduce_bitand, reduce_bitor, reduce_bitxor, reduce_max,
                       reduce_min, reduce_sum, transpose, wait_wgmma, wgmma_gemm)
from .atomics import atomic_and, atomic_load, atomic_or, atomic_store, atomic_xor
from .logical import all_of, any_of
from .views import reshape, view
from .vector_access import (ldg32, ldg64, ldg128, ldg256, lds32, lds64, lds128, stg32, stg64, stg128, stg256,
                            sts32, sts64, sts128)
from .warp import (activemask, all_sync, any_sync, ballot, ballot_sync, get_lane_idx, get_warp_group_idx,
                   get_warp_idx, get_warp_idx_sync, match_all_sync, match_any_sync, shfl_down, shfl_sync, shfl_up,
                   shfl_xor, shuffle_elect, sync_warp, syncthreads_and, syncthreads_count, syncthreads_or,
                   warp_reduce_bitand, warp_reduce_bitor, warp_reduce_max, warp_reduce_min, warp_reduce_sum)

globals().update(_dtypes.EXPORTED)  # T.float16, T.int32, T.bool, ...
# TileLang's fast-math names start with "__", which `from .intrinsics import` cannot spell inside a
# module without mangling worries; bind them explicitly.
from . import intrinsics as _intrinsics  # noqa: E402
for _name in ("__exp", "__exp10", "__log", "__log2", "__log10", "__tan", "__cos", "__sin"):
    globals()[_name] = getattr(_intrinsics, _name)
from . import vector_access as _vector_access, warp as _warp  # noqa: E402
globals().update({"__ffs": _warp.ffs, "__fns": _warp.fns, "__ldg": _vector_access.ldg})  # TileLang's CUDA names
dtype = DType  # TileLang's annotation for dtype parameters: `dtype: T.dtype = T.float16`
# TileLang's T.Var (a macro parameter annotation: ``x: T.Var`` takes a T.alloc_var by reference, as
# any alloc_var argument is here) and T.PrimExpr (helpers' annotations) are TVM's classes
from tvm.tirx import PrimExpr, Var  # noqa: E402  (tvm_compat above gives tirx.PrimExpr)
