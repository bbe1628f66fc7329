"""Passes of the SIMT kit, in the order tilelang_core/simt/pipeline.py runs them:

longest_first      (a backend's switch) blocks whose loops grow along x launched longest first
block_swizzle      T.use_swizzle: blocks walk the grid in panels (L2 reuse)
split_masked_fills a loop's mask fill that is all zeros in some iterations writes zeros there
software_pipeline  T.Pipelined loops -> multi-stage async-copy pipelines (stages, waits, barriers)
insert_barriers    block barriers between conflicting shared-memory accesses
parallel_tile_ops  tile ops in T.Parallel bodies -> per-element code (atomics), others refused
(LowerTileOps)     tile ops -> per-thread code with the rules of ../lowering.py and ../lower_*.py
lower_parallel     T.Parallel nests -> loops over each thread's registers
apply_layouts      fragments -> register arrays, shared tiles -> flat swizzled arrays
prefetch_fragments a pipelined gemm's next-stage fragments loaded before its last k-step's compute
"""

from .apply_layouts import apply_layouts
from .block_swizzle import block_swizzle
from .insert_barriers import insert_barriers
from .longest_first import longest_first
from .lower_parallel import lower_parallel
from .parallel_tile_ops import parallel_tile_ops
from .prefetch_fragments import prefetch_fragments
from .software_pipeline import software_pipeline
from .split_masked_fills import split_masked_fills
from .state import KernelState, thread_binding

__all__ = ["KernelState", "apply_layouts", "block_swizzle", "insert_barriers", "longest_first", "lower_parallel",
           "parallel_tile_ops", "prefetch_fragments", "software_pipeline", "split_masked_fills", "thread_binding"]
