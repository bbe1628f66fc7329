"""The SIMT kit's lowering, in order: tile-level TIRX -> thread-level TIRX for one kernel.

0. mark_thread_ranges  `if tx < 128:` around tile ops -> a group of 128 threads for them (core)
1. infer_layouts       fragment layouts (gemm accumulators from the backend's layout function)
   block_swizzle       T.use_swizzle -> panel-ordered block indices
   split_masked_fills  a loop's mask fill that is all zeros in some iterations writes zeros there
2. software_pipeline   T.Pipelined -> multi-stage async-copy pipeline (SimtDialect.async_copy)
3. insert_barriers     block barriers where shared accesses of different threads conflict
   parallel_tile_ops   tile ops in T.Parallel bodies -> one per element (atomics; others refused)
4. LowerTileOps        tile ops -> per-thread code (the rules registered for ``dialect.kind``)
5. lower_parallel      T.Parallel nests -> per-thread register loops (each thread group first)
   lower_atomic_calls  atomics used as values (return_prev, T.atomic_load) -> helper calls
   merge_adjacent      adjacent atomic adds into consecutive elements -> one vector atomic
6. apply_layouts       fragments -> registers, shared -> flat swizzled arrays, scratch allocated
   lower_intrinsics    warp votes, shuffles, lane queries -> device helpers (checked before step 1)
7. VerifyNoTileOps

A backend adds its own checks around it (dtypes, shared memory limit) and registers its rules
first (``register_simt_rules(kind, gemm=...)``). Example::

    func = lower_simt(func, SimtDialect(kind="hip", warp_size=64, async_copy=False), options)
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import tvm
import tvm_ffi
from tvm import tirx

from tilelang_core.ir.intrinsics import calls_in, vector_accesses
from tilelang_core.language.assumes import checked_assumes
from tilelang_core.lowering import LoweringContext
from tilelang_core.transform.buffer_views import buffer_views, check_views
from tilelang_core.transform.instrumented import run_pass
from tilelang_core.transform.layout_inference import infer_layouts, is_fragment
from tilelang_core.transform.lower_tile_ops import kernel_name, lower_tile_ops
from tilelang_core.transform.parallel_copies import parallel_copies
from tilelang_core.transform.safe_values import take_safe_values
from tilelang_core.transform.thread_ranges import in_thread_ranges, mark_thread_ranges, strip_thread_ranges
from tilelang_core.transform.verify_no_tile_ops import verify_no_tile_ops

from .dialect import SimtDialect
from .intrinsics import call as simt_call
from .lower_atomic_calls import lower_atomic_calls
from .vector_atomic_adds import merge_adjacent
from .lower_gemm_fma import fma_accumulator_layout
from .transform import (KernelState, apply_layouts, block_swizzle, insert_barriers, longest_first,
                        lower_parallel, parallel_tile_ops, prefetch_fragments, software_pipeline, split_masked_fills,
                        thread_binding)
from .transform.grid_sync import check_grid_syncs
from .transform.apply_layouts import annotated_fragments, annotated_layouts, settle_view_annotations
from .transform.lower_intrinsics import WARP_SIZE_ATTR, check_intrinsics, lower_intrinsics
from .transform.mbarriers import barrier_buffers, lower_barrier_inits
from .transform.named_barriers import GroupBarriers
from .transform.vectorized_loops import has_vectorized_loops, plan_vectorized_loops


@dataclass
class SimtLoweringContext(LoweringContext):
    """The core context plus this kernel's KernelState (threads, layouts, register buffers)."""

    state: Any = None

    def narrowed(self, thread_var, num_threads: int) -> "SimtLoweringContext":
        # the rules read threads from the state
        return replace(self, thread_group=(thread_var, num_threads),
                       state=self.state.for_group(thread_var, num_threads))


def _on_body(transform):
    """A pass over a kernel body (``transform(body, *args) -> body``) as one over the PrimFunc."""
    def run(func, *args, **kwargs):
        return func.with_body(transform(func.body, *args, **kwargs))

    return run


def _in_groups(transform):
    """``transform(body, st)`` applied to each thread group's branch with the group's threads,
    then to the whole body with the block's (transform/thread_ranges.py)."""
    def run(body, st):
        body = in_thread_ranges(body, lambda region, var, extent: transform(region, st.for_group(var, extent)))
        return transform(body, st)

    return run


def lower_simt(func: tirx.PrimFunc, dialect: SimtDialect, options=None, *,
               accumulator_layout=fma_accumulator_layout, operand_layout=None, backend=None,
               specialize=None, finalize=None, shared_limit: int | None = None,
               split_fills: bool = True, longest_first_blocks: bool = False,
               async_preload: bool = True) -> tirx.PrimFunc:
    """Lower one kernel with the kit's passes and the rules registered for ``dialect.kind``.

    ``accumulator_layout(gemm_op, num_threads)`` and ``operand_layout(gemm_op, name, num_threads)``
    are the backend's gemm layouts (its matrix instruction's); the default is the FMA path's.
    ``backend`` is stored as ``KernelState.backend`` for the backend's rules. Two optional
    backend passes: ``specialize(body, st) -> body`` runs before the software pipeline (CUDA's
    warp specialization on sm_90a takes over T.Pipelined loops there; the loops it leaves keep the
    kit's pipeline), ``finalize(body, st) -> body`` after ApplyLayouts. ``shared_limit``: the
    target's shared memory per block in bytes; the software pipeline gives a copy in the middle of
    a pipelined body its own slots only where they fit (None: no limit known). ``split_fills``:
    run split_masked_fills (a backend's switch to keep every mask fill as written).
    ``longest_first_blocks``: launch blocks whose loops grow along blockIdx.x in reverse x order
    (transform/longest_first.py; causal attention's longest row blocks first).
    ``async_preload``: copies global -> shared before a pipelined loop join its first async
    commit group (software_pipeline; False keeps them synchronous).
    """
    kind = dialect.kind
    name = kernel_name(func)
    tx, num_threads = thread_binding(func, kind)
    check_grid_syncs(func.body, name)  # (before thread ranges turn branches on the thread into regions)
    # a T.Parallel loop copying a global tile to shared in a T.Pipelined body is a T.copy: the
    # pipeline's producer (transform/parallel_copies.py)
    func = run_pass(f"{kind}.ParallelCopies", _on_body(parallel_copies), func)
    # `if tx < 128: T.copy(...)`: the copy runs on threads 0..127 (transform/thread_ranges.py)
    func = func.with_body(mark_thread_ranges(func.body, tx, num_threads, name, is_fragment))
    body, safe_values = take_safe_values(func.body)
    func = func.with_body(body)
    views = buffer_views(func.body)
    check_views(views, name, kind)
    layouts = infer_layouts(func, num_threads, accumulator_layout, operand_layout=operand_layout,
                            annotated=annotated_fragments(func.body, name, num_threads))
    st = KernelState(kernel=name, thread_var=tx, num_threads=num_threads, dialect=dialect,
                     layouts=layouts, options=options, backend=backend, safe_values=safe_values,
                     views=views, block_threads=num_threads, block_thread_var=tx)
    for buffer, layout in layouts.items():
        if buffer not in views:
            st.locals[buffer] = tirx.decl_buffer((layout.local_size,), str(buffer.ty.dtype),
                                                 name=str(buffer.name), scope="local")
    for view, source in views.items():  # a T.reshape of a fragment names the same registers
        if source in st.locals:
            st.locals[view] = st.locals[source]
    # T.alloc_barrier: initialized by one thread before a block barrier (transform/mbarriers.py)
    st.barriers = barrier_buffers(func.body)
    if st.barriers:
        func = run_pass(f"{kind}.LowerBarrierInits", _on_body(lower_barrier_inits), func, st)
    body, st.annotated = annotated_layouts(func.body, name, kind)
    settle_view_annotations(views, st.annotated, name)
    func = func.with_body(body)
    if has_vectorized_loops(func.body):  # the kernel's own, at widths and alignments the target takes
        func = run_pass(f"{kind}.PlanVectorizedLoops", _on_body(plan_vectorized_loops), func, st,
                        checked_assumes(func))
    # warp votes, shuffles, lane queries, explicit vector accesses (ir/intrinsics.py)
    intrinsics = bool(calls_in(func.body) or vector_accesses(func.body))
    if intrinsics:
        func = run_pass(f"{kind}.CheckIntrinsics", _on_body(check_intrinsics), func, st)
    # run_pass: plain calls, except under TILELANG_DUMP_IR, where each is dumped and timed
    if longest_first_blocks:  # before BlockSwizzle, which consumes the T.use_swizzle marker it respects
        func = run_pass(f"{kind}.LongestFirst", _on_body(longest_first), func)
    func = run_pass(f"{kind}.BlockSwizzle", _on_body(block_swizzle), func)
    if specialize is not None:
        func = run_pass(f"{kind}.Specialize", _on_body(specialize), func, st)
    if split_fills:
        func = run_pass(f"{kind}.SplitMaskedFills", _on_body(split_masked_fills), func)
    func = run_pass(f"{kind}.SoftwarePipeline", _on_body(software_pipeline), func,
                    use_async=dialect.async_copy, shared_limit=shared_limit, async_preload=async_preload)
    if not getattr(options, "disable_thread_storage_sync", False):  # (TileLang's key: the author orders them)
        barriers = GroupBarriers(func.body, st)
        device = dialect.device_barrier
        func = run_pass(f"{kind}.InsertBarriers", _on_body(insert_barriers), func,
                        group_barrier=barriers.for_region, range_barrier=barriers.for_branch,
                        global_barrier=(lambda: simt_call(device)) if device else None)
    func = run_pass(f"{kind}.ParallelTileOps", _on_body(parallel_tile_ops), func, st)
    # lower_tile_ops binds the loop ranges and bound values into st.analyzer (via ctx) first
    ctx = SimtLoweringContext(backend_kind=kind, kernel=name, analyzer=st.analyzer,
                              options=options, state=st)
    func = run_pass(f"{kind}.LowerTileOps", lower_tile_ops, func, kind, options, context=ctx)
    func = run_pass(f"{kind}.LowerParallel", _on_body(_in_groups(lower_parallel)), func, st)
    func = run_pass(f"{kind}.LowerAtomicCalls", _on_body(lower_atomic_calls), func, st)
    if dialect.vector_atomic_adds:  # T.atomic_addx2 / x4's lanes (vector_atomic_adds.py)
        func = run_pass(f"{kind}.MergeAtomicAdds", _on_body(merge_adjacent), func, st)
    func = func.with_body(strip_thread_ranges(func.body))
    func = run_pass(f"{kind}.ApplyLayouts", _on_body(apply_layouts), func, st, st.annotated)
    if intrinsics:
        func = run_pass(f"{kind}.LowerIntrinsics", lower_intrinsics, func, st)
    # the warps the helpers assume (shuffles of the scans and reductions too): the interpreter's
    func = func.with_attr(WARP_SIZE_ATTR, tirx.const(st.dialect.warp_size, "int32"))
    func = run_pass(f"{kind}.PrefetchFragments", _on_body(prefetch_fragments), func)
    if finalize is not None:
        func = run_pass(f"{kind}.Finalize", _on_body(finalize), func, st)
    return run_pass(f"{kind}.VerifyNoTileOps", verify_no_tile_ops, func, kind)


def buffer_bytes(buf) -> int:
    """Bytes of a buffer of constant shape (its element's bytes times its elements)."""
    size = tvm.runtime.DataType(str(buf.ty.dtype)).bits // 8
    for s in buf.ty.shape:
        size *= int(s)
    return size


def shared_bytes(func: tirx.PrimFunc) -> int:
    """Bytes of shared memory a lowered kernel allocates (for the backend's per-block limit)."""
    total = 0

    def on_alloc(alloc):
        nonlocal total
        buf = alloc.buffer
        if str(buf.ty.storage_scope).startswith("shared"):
            total += buffer_bytes(buf)

    tvm_ffi.structural_walk(func.body, [(tirx.AllocBuffer, on_alloc)])
    return total
