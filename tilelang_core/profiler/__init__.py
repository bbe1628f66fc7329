"""Timing kernels the way a GPU engineer would: warm-up by time, many repetitions, medians.

    from tilelang_core.profiler import do_bench
    ms = do_bench(lambda: kernel(a, b))             # median milliseconds

    profiler = kernel.get_profiler()                # fresh random inputs for the kernel's params
    profiler.assert_allclose(ref_program, atol=1e-2, rtol=1e-2)
    ms = profiler.do_bench()
"""

from .bench import BenchResult, do_bench, measure
from .profiler import Profiler, compare_outputs
from .supply import TensorSupplyType, make_inputs

__all__ = ["BenchResult", "Profiler", "TensorSupplyType", "compare_outputs", "do_bench", "make_inputs",
           "measure"]
