"""Timing kernels the way a GPU engineer would, and checking them against a reference.

TileLang's names and units (milliseconds)::

    from tilelang_core.profiler import do_bench
    ms = do_bench(lambda: kernel(a, b))             # mean ms per call (CUDA events on a GPU)

    profiler = kernel.get_profiler()                # fresh random inputs for the kernel's params
    profiler.assert_allclose(ref_program, atol=1e-2, rtol=1e-2)
    ms = profiler.do_bench(backend="cupti")
"""

from .bench import BenchResult, do_bench, measure
from .profiler import Profiler, compare_outputs
from .supply import TensorSupplyType, get_tensor_supply, make_inputs

__all__ = ["BenchResult", "Profiler", "TensorSupplyType", "compare_outputs", "do_bench",
           "get_tensor_supply", "make_inputs", "measure"]
