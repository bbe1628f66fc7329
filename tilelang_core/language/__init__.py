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
from .allocate import alloc_buffer, alloc_fragment, alloc_local, alloc_shared, alloc_var
from .annotations import annotate_layout, use_swizzle
from .intrinsics import (Broadcast, Ramp, Serial, Shuffle, address_of, assume, atan, attr, bitwise_and,
                       bitwise_not, bitwise_or, bitwise_xor, call_extern, call_intrin, clz, comm_reducer,
                       cosh, disable_warp_group_reg_alloc, evaluate, fmod, handle, isfinite, likely, log1p, nearbyint, popcount,
                       reinterpret, shift_left, shift_right, sinh, sync_threads, tan, tvm_thread_allreduce)
from .dtypes import DType, canonical_dtype
from .eager import EagerProgram, Specialization, const, empty, looks_eager
from .expr import (Cast, Select, abs, cast, ceil, ceildiv, clamp, cos, erf, exp, exp2, exp10, floor,
                   floordiv, floormod, if_then_else, infinity, isinf, isnan, log, log2, log10,
                   max, max_value, min, min_value, pow, round, rsqrt, sigmoid, sin, sqrt, tanh,
                   trunc, truncdiv, truncmod)
from .function import prim_func
from .kernel import (Kernel, get_block_binding, get_block_bindings, get_thread_binding,
                     get_thread_bindings)
from .macro import macro
from .reducers import alloc_reducer, finalize_reducer, reducer_init, reducer_update
from .loops import Parallel, Pipelined, grid, serial, thread_binding, unroll, vectorized
from .tensor import (Buffer, FragmentBuffer, LocalBuffer, SharedBuffer, Tensor, TensorType, dynamic,
                     symbolic)
from .tile_ops import (atomic_add, atomic_addx2, atomic_addx4, atomic_max, atomic_min, clear, copy, cumsum, fill, gemm,
                       reduce, reduce_absmax, reduce_abssum, reduce_max, reduce_min, reduce_sum)

globals().update(_dtypes.EXPORTED)  # T.float16, T.int32, T.bool, ...
# TileLang's fast-math names start with "__", which `from .intrinsics import` cannot spell inside a
# module without mangling worries; bind them explicitly.
from . import intrinsics as _intrinsics  # noqa: E402
for _name in ("__exp", "__exp10", "__log", "__log2", "__log10", "__tan", "__cos", "__sin"):
    globals()[_name] = getattr(_intrinsics, _name)
dtype = DType  # TileLang's annotation for dtype parameters: `dtype: T.dtype = T.float16`
