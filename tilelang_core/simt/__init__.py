"""The SIMT kit: target-neutral lowering of tile programs for GPU-like backends (CUDA, HIP, Metal).

Such backends lower tile programs alike (threads of a block, fragments in registers, shared
memory, barriers, T.Parallel thread mapping, warp reductions, software pipelines) and differ in
declarations: a ``SimtDialect`` (dialect.py: kind, warp size, async copies, shuffle helper,
atomic types), the C definitions of the device helpers below (each backend's prelude), and the
matrix instruction of T.gemm (a rule the backend passes to ``register_simt_rules``).

What is here: ``pipeline.lower_simt`` (the passes in order), ``transform/`` (one pass per file,
sharing a ``KernelState``), the rules for copy and fill (lowering.py), reduce, atomic, cumsum and
the FMA gemm (lower_<op>.py), and ``intrinsics`` (how rules call helpers). Not imported by
``import tilelang_core``; it needs tvm, so a backend imports it on its first compile.

Example (a backend's pipeline)::

    from tilelang_core.simt import SimtDialect, register_simt_rules
    from tilelang_core.simt.pipeline import lower_simt

    register_simt_rules("hip")                      # FMA gemm until an MFMA rule exists
    func = lower_simt(func, SimtDialect(kind="hip", warp_size=64, async_copy=False), options)

Device helper contract
----------------------
The kit emits ``call_extern`` calls to these names (TVM prints them verbatim); every backend
defines them in its prelude (CUDA: tilelang_cuda/intrinsics.py). Pointers are generic addresses
of buffer elements, aligned to the access size; ``N`` is 4, 8 or 16 (bytes).

``void tl_copy_N(void* dst, const void* src, bool pred)``
    Synchronous copy of N bytes into shared memory (from global or shared). ``pred`` false: no
    read, and N zero bytes are written (ragged tiles read as 0).
``void tl_store_N(void* dst, const void* src, bool pred)``
    Copy of N bytes into global memory (from shared or global). ``pred`` false: nothing is read
    or written (ragged tiles are not written past the tensor's end).
``void tl_cp_async_N(void* smem, const void* gmem, bool pred)``   (only if ``async_copy``)
    Asynchronous copy of N bytes global -> shared, issued by this thread; ``pred`` false
    zero-fills the destination. Complete only after a ``tl_cp_async_wait`` covering its group.
``void tl_cp_async_commit()``   (only if ``async_copy``)
    Closes this thread's group of async copies issued since the last commit (possibly empty).
``void tl_cp_async_wait<K>()``   (only if ``async_copy``; emitted with K in the name, K >= 0)
    Waits until at most K of this thread's committed groups are still in flight. It orders this
    thread's copies only: the kit follows it with a block barrier.
``T <dialect.shuffle_xor>(T v, int lane_mask)``   (``tl_shfl_xor`` by default)
    The value ``v`` of lane ``lane ^ lane_mask`` of the same warp (0 < lane_mask < warp_size),
    for every T a reduction accumulates in (float, double, int, half, bfloat16). All lanes of
    the warp execute it together: callers never predicate it.
``T <dialect.warp_reduce[kind]>(T v)``   (only for the kinds sum, max, min a dialect lists)
    The sum (max, min) of ``v`` over all lanes of the warp, returned to every lane (Metal's
    ``simd_sum``). Used instead of shuffles where a reduction's lanes are exactly one warp.
``void tl_atomic_<kind>(T* addr, T value[, int order])``   kind: add max min or and xor store
    Atomic ``*addr = *addr + value`` (``max``, ``min``, ``|``, ``&``, ``^``; ``store``: ``=
    value``) on global or shared memory, nothing returned, for every T in
    ``dialect.atomic_dtypes[kind]``. Without ``order`` it is relaxed; ``order`` is a memory order's
    id (0 relaxed, 1 consume, 2 acquire, 3 release, 4 acq_rel, 5 seq_cst: cuda::memory_order's
    and C11's), one of ``dialect.atomic_orders``, and the helper orders this thread's other
    accesses as C++ does. ``value`` has T's type exactly (the kit casts it).
``T tl_atomic_<kind>_ret(T* addr, T value, int order)``   kind: add max min or and xor
    The same atomic, returning the value ``*addr`` held before (``return_prev=True``).
``void AtomicAddx<N>(T* addr, T v0, ..., T v<N-1>[, int order])``   N: 2, 4
    ``tl_atomic_add`` of ``v<k>`` into ``addr[k]`` for each k, in one instruction where the
    hardware has one, each element's add atomic on its own; for the types and N of
    ``dialect.vector_atomic_adds``, ``addr`` a global element N-aligned (vector_atomic_adds.py).
    TileLang's names for them.
``T tl_atomic_load(T* addr, int order)``
    ``*addr`` read atomically (``dialect.atomic_dtypes["load"]``; order relaxed, consume, acquire
    or seq_cst).

Warp helpers (TileLang's T.ballot_sync, T.shfl_*, T.warp_reduce_*, ...; lowered by
transform/lower_intrinsics.py, which computes lane indices, shuffle source lanes and
``shuffle_elect`` groups itself from ``SimtDialect.warp_size``). ``lanes`` is a 64-bit lane mask
of the caller's warp (bit l: lane l): every lane it names that exists in the block must execute
the call together; a lane of a partial last warp that does not exist counts as exited. The
interpreter (interpreter_warp.py) raises where this is broken.

``uint64 tl_ballot_sync(uint64 lanes, bool pred)``
    Bit l set iff lane l is named by ``lanes``, executes the call, and its ``pred`` is true.
``int tl_any_sync(uint64 lanes, bool pred)`` / ``int tl_all_sync(uint64 lanes, bool pred)``
    Non-zero iff ``pred`` is true on some (every) executing lane named by ``lanes``.
``uint64 tl_activemask()``
    Bit l set iff lane l of the warp executes the call.
``uint32 tl_match_any_sync(uint64 lanes, T v)`` / ``uint32 tl_match_all_sync(uint64 lanes, T v)``
    (warps of at most 32 lanes; T: 32/64-bit integer or float, compared as bit patterns) The
    lanes named by ``lanes`` whose ``v`` equals this lane's; ``(uint32)lanes`` if they all agree,
    else 0.
``T tl_shfl_sync(uint64 lanes, T v, int src_lane)``
    ``v`` of lane ``src_lane`` (0 <= src_lane < warp_size), which must execute the call.
``T tl_warp_reduce_<sum|max|min|bitand|bitor>(T v)``
    The reduction over every lane of a whole warp (the block is whole warps), to every lane:
    a butterfly of xor shuffles (offsets warp_size / 2 down to 1) where the vendor has none;
    max/min ignore NaN (fmax/fmin).
``void tl_sync_warp(uint64 lanes)``
    A barrier and memory fence for the lanes named.
``bool tl_elect_one_sync()``
    True on the lowest executing lane of the warp.
``int tl_syncthreads_count|and|or(bool pred)``   (only if ``dialect.block_votes``)
    A block barrier returning the number of threads with ``pred`` (non-zero iff all / any).
``int tl_ffs(T v)`` (32- and 64-bit integers), ``uint32 tl_fns(uint32 mask, uint32 base, int offset)``
    CUDA's ``__ffs``/``__ffsll`` and ``__fns`` (base modulo 32).
``T tl_ldg(const T* p)``
    ``*p`` of a global tensor the kernel does not write (CUDA: the read-only data cache).

TileLang's explicit vector accesses (T.ldg128, T.sts64, ...) need no helper: the frontend builds
them as one vector load/store with a bit cast, and the kit checks their alignment and
``dialect.vector_bytes``.

Block barriers are not helpers: the kit emits TVM's ``tvm_storage_sync("shared")``, which each
codegen prints as its barrier (``__syncthreads()`` on CUDA).

Gemm rules and the pipeline
---------------------------
A gemm that is the whole consumer side of a pipelined loop carries the option
``tl_fragment_prefetch`` (transform/state.py: FRAGMENT_PREFETCH). A rule may ignore it; a rule
that honours it lowers the gemm as marked k-steps (FRAGMENT_STEPS around FRAGMENT_LOAD(kk) /
FRAGMENT_COMPUTE(kk) pairs, each step loading into registers of its own), and the kit's
prefetch_fragments pass then loads the next stage's step 0 before the last step's compute
(CUDA's mma.sync rule does; HIP and Metal do not yet).
"""

from .dialect import SimtDialect

__all__ = ["SimtDialect", "register_simt_rules"]


def register_simt_rules(kind: str, *, gemm=None, atomic=None) -> None:
    """Register the kit's rules (copy, fill, reduce, atomic, cumsum, gemm) for backend ``kind``.

    ``gemm`` is the backend's own T.gemm rule (its matrix instructions, falling back to
    ``lower_gemm_fma.lower_gemm_fma`` where they do not apply); without one, every gemm takes the
    kit's FMA path. ``atomic``: the backend's own tile-atomic rule (wider instructions where they
    apply, ``lower_atomic.lower_atomic`` elsewhere); without one, the kit's. Idempotent: the rules are module-level functions and registering the same
    function again is a no-op (another gemm rule for a kind that has one is an error).
    """
    from tilelang_core.lowering import register_lowering

    from .lower_atomic import lower_atomic
    from .lower_cumsum import lower_cumsum
    from .lower_gemm_fma import lower_gemm as lower_gemm_fma
    from .lower_reduce import lower_reduce
    from .lowering import lower_copy, lower_fill

    from .transform.mbarriers import lower_tma_copy

    rules = {"copy": lower_copy, "fill": lower_fill, "reduce": lower_reduce,
             "atomic": atomic or lower_atomic, "cumsum": lower_cumsum, "gemm": gemm or lower_gemm_fma,
             "tma_copy": lower_tma_copy}
    for op_name, rule in rules.items():
        register_lowering(op_name, kind)(rule)
