"""Timing kernels the way a GPU engineer would: warm-up by time, many repetitions, medians.

    from tilelang_core.profiler import do_bench
    ms = do_bench(lambda: kernel(a, b))             # median milliseconds
"""

from .bench import BenchResult, do_bench, measure

__all__ = ["BenchResult", "do_bench", "measure"]
