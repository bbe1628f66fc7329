"""4- and 8-bit float values: a constant of the type (T.max_value(T.float4_e2m1fn), as DeepSeek's
FP4/FP8 quantization divides by it) bound to a name works on every reference path (the cpu backend
failed on the float8 one); computing with a
float4 value is refused on the cpu backend by name (TVM's LLVM codegen crashed the process on
both)."""

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core import LoweringError
from tilelang_core.testing.oracle import PATHS, run


def scaled_by_max(dtype, live=True):
    @T.prim_func
    def main(A: T.Tensor((8,), T.float32)):
        with T.Kernel(1, threads=8):
            t = T.get_thread_binding()
            top = T.max_value(dtype)
            A[t] = A[t] / top if live else A[t] / 7.0

    return main


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("live", [True, False])
@pytest.mark.parametrize("dtype, top", [("float4_e2m1fn", 6.0), ("float8_e4m3fn", 448.0)])
def test_a_named_narrow_float_constant(path, live, dtype, top):
    a = np.random.default_rng(0).standard_normal(8).astype(np.float32)
    out = run(path, scaled_by_max(dtype, live), A=a.copy())["A"]
    np.testing.assert_allclose(out, a.astype(np.float64) / (top if live else 7.0), rtol=1e-6)


def test_computing_with_fp4_values_is_refused_on_cpu():
    @T.prim_func
    def main(A: T.Tensor((4,), T.float32)):
        with T.Kernel(1, threads=4):
            t = T.get_thread_binding()
            v = T.float4_e2m1fn(A[t])
            A[t] = A[t] / v

    with pytest.raises(LoweringError, match="cannot compute with float4_e2m1fn values"):
        run("cpu", main, A=np.ones(4, np.float32))
