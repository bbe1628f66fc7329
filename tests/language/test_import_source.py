"""TileLang's T.import_source(src) and T.Kernel(..., prelude=src): device source a kernel brings
for T.call_extern to call (tilelang_core/ir/import_source.py). The cuda backend puts it before the
kernel (backends/cuda/tests/test_build.py builds it with nvcc); every other backend and the
interpreters refuse the kernel by name instead of failing on an unknown function."""

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core import FrontendError, LoweringError
from tilelang_core.ir.import_source import imported_sources
from tilelang_core.testing.oracle import PATHS, run

SOURCE = "__device__ void twice(const float* s, float* d) { d[0] = 2.0f * s[0]; }\n"


def kernel(prelude: bool, imports: int = 1):
    @T.prim_func
    def k(A: T.Tensor((64,), T.float32), B: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64, prelude=SOURCE if prelude else None):
            for _ in T.serial(imports):
                T.import_source(SOURCE)  # (imported again and again: kept once)
            tx = T.get_thread_binding()
            s = T.alloc_local((1,), T.float32)
            d = T.alloc_local((1,), T.float32)
            s[0] = A[tx]
            T.call_extern("twice", T.access_ptr(s, "r"), T.access_ptr(d, "w"), dtype=T.float32)
            B[tx] = d[0]

    return k


@pytest.mark.parametrize("prelude,imports", [(False, 1), (True, 0), (True, 3)])
def test_the_source_is_kept_once_as_the_kernels_attribute(prelude, imports):
    assert imported_sources(kernel(prelude, imports)) == [SOURCE]


@pytest.mark.parametrize("path", PATHS)
def test_backends_that_cannot_compile_it_refuse_by_name(path):
    a = np.ones(64, np.float32)
    kind = path.partition(":")[0]
    where = {"cpu": "the cpu backend", "cuda": "the SIMT interpreter"}.get(kind, f"the {kind} backend")
    with pytest.raises(LoweringError, match=f"kernel 'k' brings its own device source.*{where}"):
        run(path, kernel(False), A=a, B=np.zeros_like(a))


def test_bad_arguments_are_refused():
    with pytest.raises(FrontendError, match="takes the device source as a string"):
        @T.prim_func
        def k(A: T.Tensor((64,), T.float32)):
            with T.Kernel(1, threads=64):
                T.import_source(42)
    with pytest.raises(FrontendError, match="T.import_source must be used inside"):
        T.import_source(SOURCE)
