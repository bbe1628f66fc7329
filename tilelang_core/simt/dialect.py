"""SimtDialect: what a SIMT GPU backend declares instead of rewriting the lowering.

CUDA, HIP and Metal lower tile programs the same way (threads of a block, fragments in registers,
shared memory, barriers, warp reductions, software pipelines); they differ in a few facts, which
the kit's passes and rules read from here (``KernelState.dialect``), never from a target name.
Stdlib only: a backend's light modules may build one without importing tvm.

Example::

    CUDA = SimtDialect(kind="cuda", warp_size=32, async_copy=True)
    HIP = SimtDialect(kind="hip", warp_size=64, async_copy=False,
                      atomic_dtypes={"add": ("float32", "int32"), "max": ("int32",), "min": ("int32",)})
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

#: the element types of 1, 2, 4 and 8 bytes: what atomic loads and stores take
_WORD_TYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16",
               "bfloat16", "float32", "float64")
_INTEGERS = ("int32", "uint32", "int64", "uint64")

#: CUDA's atomics (max/min of floating types through a compare-and-swap loop in the prelude)
CUDA_ATOMIC_DTYPES = MappingProxyType({
    "add": ("float16", "bfloat16", "float32", "float64") + _INTEGERS,
    "max": ("float16", "bfloat16", "float32", "float64") + _INTEGERS,
    "min": ("float16", "bfloat16", "float32", "float64") + _INTEGERS,
    "or": _INTEGERS, "and": _INTEGERS, "xor": _INTEGERS,
    "store": _WORD_TYPES, "load": _WORD_TYPES,
})
#: the folds a SimtDialect.paired_folds helper may implement (the NaN-propagating max and min apart)
PAIRED_FOLDS = ("sum", "max", "min", "max_nan", "min_nan")
#: memory orders of the C++ model, by name (ids 0..5 in the helpers: cuda::memory_order's)
ALL_MEMORY_ORDERS = ("relaxed", "consume", "acquire", "release", "acq_rel", "seq_cst")


@dataclass(frozen=True)
class SimtDialect:
    """The knobs of one SIMT backend (see tilelang_core/simt/__init__.py for the helper contract).

    kind: the backend kind the kit's rules are registered under (``Target.kind``); also used in
        messages and as the prefix of pass names in IR dumps (``cuda.SoftwarePipeline``).
    warp_size: lanes that run in lockstep and exchange registers by ``shuffle_xor`` (32 on NVIDIA,
        64 on AMD CDNA wavefronts, 32 on Apple simdgroups). Reductions shuffle inside it and go
        through shared memory across it.
    async_copy: global->shared copies can be issued asynchronously and waited for by group
        (``tl_cp_async_*``; cp.async on CUDA). When False, T.Pipelined loops run synchronously.
    shuffle_xor: name of the butterfly-exchange helper (``T tl_shfl_xor(T v, int lane_mask)``).
    warp_reduce: per reduction kind (sum, max, min), a helper ``T f(T v)`` returning the reduction
        over all lanes of the warp (Metal's ``simd_sum``/``simd_max``/``simd_min``). A reduction
        whose lanes span the whole warp uses it instead of log2(warp_size) shuffles; empty: always
        shuffles.
    atomic_dtypes: per atomic kind (add, max, min, or, and, xor, store, load), the element types
        the ``tl_atomic_<kind>`` helpers take.
    atomic_orders: the memory orders the atomic helpers implement (ALL_MEMORY_ORDERS); an atomic
        asking for another one is refused by name, never run relaxed.
    block_votes: the backend defines ``tl_syncthreads_count/and/or`` (T.syncthreads_*: a barrier
        that counts a predicate over the block); False: those are refused at the user's line.
    named_barriers: the backend defines ``tl_named_barrier(id, count)``, a barrier among ``count``
        threads (``bar.sync``; T.sync_threads(id, count) over part of the block); False: refused.
    mbarriers: the backend defines the ``tl_mbarrier_*`` helpers (T.alloc_barrier and its waits and
        arrivals; transform/mbarriers.py); False: those are refused at compile time.
    max_nreg: the backend defines ``tl_set_max_nreg<count, inc>()`` (T.set_max_nreg, setmaxnreg);
        False: the hint is dropped (values are the same).
    grid_dependency: the backend defines ``tl_pdl_trigger()`` / ``tl_pdl_sync()`` (T.pdl_trigger /
        T.pdl_sync, programmatic dependent launch) and launches a kernel that waits with the
        matching attribute; False: both are dropped (kernels then run in stream order: same values).
    grid_sync: the backend defines ``tl_sync_grid()`` (T.sync_grid, a barrier over the whole grid)
        and launches a kernel that calls it cooperatively; False: T.sync_grid is refused.
    clusters: the backend defines the thread-block cluster helpers (language/cluster.py): the marker
        ``tl_cluster_dims(x, y, z)`` its codegen turns into the kernel's cluster shape, ``tl_cluster_rank()``,
        ``tl_cluster_arrive()`` / ``_arrive_relaxed`` / ``_wait`` / ``_sync``, and with mbarriers
        ``tl_mbarrier_arrive_remote(bar, rank)`` and ``tl_mbarrier_wait_cluster(bar, parity)``; False:
        a T.ClusterKernel of more than one block a cluster and the cluster barriers are refused.
    vector_bytes: the widest vector load/store the codegen prints (T.ldg256 moves 32 bytes; MSL
        vectors hold 16); wider explicit accesses are refused at the user's line.
    value_vector_bytes: the widest vector of computed values the codegen prints. A T.Parallel run
        of 8 half lanes widened to float32 holds 32 bytes (CUDA prints ``ulonglong4``, and its
        intrinsics overload an 8-float ``make_ulonglong4`` for TVM's broadcasts); where a run's
        values are wider than this its lanes are halved, and its loads and stores with them.
    device_print: the backend defines ``tl_print_msg`` and ``tl_print_int/uint/float/bool`` (T.print,
        language/debug_print.py: the device's printf of a message alone, or of a value widened to
        long long, unsigned long long, double or bool with its dtype name, buffer name and
        index); False: T.print is refused.
    device_barrier: the helper (``void name()``) of a block barrier that also orders global memory,
        where the block barrier orders shared memory only (Metal's ``threadgroup_barrier(mem_flags::
        mem_threadgroup)``); empty: the block barrier orders both (CUDA's and HIP's __syncthreads).
        InsertBarriers places it between block-wide statements that touch one global buffer from
        different threads.
    paired_folds: per fold (sum, max, min, max_nan, min_nan), a helper that folds two 16-bit floats
        at once (``void f<bool abs = false>(T* acc, const T* v)``: ``acc[0:2] = op(acc[0:2],
        v[0:2])``, ``|v|`` with ``abs``; T float16 or bfloat16, both pointers 4-byte aligned). A
        register reduction of 16-bit floats whose pairs of values fold into one output or into
        two adjacent ones uses them (paired_fold.py: CUDA's half2 instructions); empty: one value
        at a time.
    vector_atomic_adds: per element type, the most consecutive global elements (2 or 4) one
        ``AtomicAddx<N>`` helper adds at once (vector_atomic_adds.py; CUDA's half2 and sm_90's
        vector reductions); empty: one ``tl_atomic_add`` per element.
    warp_matrix: the helpers of TileLang's hand-written warp matrix code (language/warp_matrix.py):
        ``ldmatrix_x<num>[_trans]`` -> ``void f(void* regs, const void* row)`` and each mma.sync
        form (``warp_matrix.mma_form``) -> ``void f(void* c, const void* a, const void* b)``;
        empty: T.ptx_ldmatrix / T.ptx_mma are refused.
    """

    kind: str
    warp_size: int = 32
    async_copy: bool = True
    shuffle_xor: str = "tl_shfl_xor"
    atomic_dtypes: Mapping[str, tuple] = field(default_factory=lambda: CUDA_ATOMIC_DTYPES)
    warp_reduce: Mapping[str, str] = field(default_factory=dict)
    atomic_orders: tuple = ALL_MEMORY_ORDERS
    block_votes: bool = True
    vector_bytes: int = 32
    value_vector_bytes: int = 16
    named_barriers: bool = False
    mbarriers: bool = False
    max_nreg: bool = False
    grid_dependency: bool = False
    grid_sync: bool = False
    clusters: bool = False
    device_print: bool = False
    device_barrier: str = ""
    paired_folds: Mapping[str, str] = field(default_factory=dict)
    vector_atomic_adds: Mapping[str, int] = field(default_factory=dict)
    warp_matrix: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self):
        if not self.kind:
            raise ValueError("SimtDialect.kind must name the backend kind (e.g. 'cuda')")
        if self.warp_size < 1 or self.warp_size & (self.warp_size - 1):
            raise ValueError(f"SimtDialect.warp_size must be a power of two, got {self.warp_size}")
        # frozen and hashable: a read-only mapping of tuples
        object.__setattr__(self, "atomic_dtypes", MappingProxyType(
            {k: tuple(v) for k, v in dict(self.atomic_dtypes).items()}))
        unknown = set(self.warp_reduce) - {"sum", "max", "min"}
        if unknown:
            raise ValueError(f"SimtDialect.warp_reduce takes the kinds sum, max, min; got {sorted(unknown)}")
        object.__setattr__(self, "warp_reduce", MappingProxyType(dict(self.warp_reduce)))
        unknown = set(self.paired_folds) - set(PAIRED_FOLDS)
        if unknown:
            raise ValueError(f"SimtDialect.paired_folds takes the folds {', '.join(PAIRED_FOLDS)}; "
                             f"got {sorted(unknown)}")
        object.__setattr__(self, "paired_folds", MappingProxyType(dict(self.paired_folds)))
        bad = {k: v for k, v in dict(self.vector_atomic_adds).items() if v not in (2, 4)}
        if bad:
            raise ValueError(f"SimtDialect.vector_atomic_adds maps element types to 2 or 4 lanes; got {bad}")
        object.__setattr__(self, "vector_atomic_adds", MappingProxyType(dict(self.vector_atomic_adds)))
        object.__setattr__(self, "atomic_orders", tuple(self.atomic_orders))
        object.__setattr__(self, "warp_matrix", MappingProxyType(dict(self.warp_matrix)))

    def __hash__(self):
        return hash((self.kind, self.warp_size, self.async_copy, self.shuffle_xor,
                     tuple(sorted(self.atomic_dtypes.items())), tuple(sorted(self.warp_reduce.items())),
                     self.atomic_orders, self.block_votes, self.vector_bytes, self.value_vector_bytes,
                     self.named_barriers, self.mbarriers, self.max_nreg, self.grid_dependency, self.grid_sync, self.clusters, self.device_print,
                     tuple(sorted(self.paired_folds.items())), tuple(sorted(self.vector_atomic_adds.items())),
                     tuple(sorted(self.warp_matrix.items()))))
