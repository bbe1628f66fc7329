"""Passes of the cpu backend, one per file, in pipeline order (see ../pipeline.py)."""

from .blocks_to_loops import BlocksToLoops, blocks_to_loops
from .exact_fp8_casts import exact_fp8_casts
from .guard_parallel_globals import guard_parallel_globals
from .legalize_for_cpu import LegalizeForCpu, legalize_for_cpu
from .threads_to_loops import ThreadsToLoops, threads_to_loops

__all__ = ["BlocksToLoops", "LegalizeForCpu", "ThreadsToLoops", "blocks_to_loops", "exact_fp8_casts", "guard_parallel_globals",
           "legalize_for_cpu", "threads_to_loops"]
