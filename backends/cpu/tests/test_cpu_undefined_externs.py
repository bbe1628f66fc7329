"""A kernel that calls a function no library defines (a CUDA device function through T.call_extern,
as DeepSeek's e5m6 cast calls __float2half_rz) is refused when it loads, with the function's name;
it ended the process with "symbol lookup error" at its first call before."""

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core import CompileError
from tilelang_core.testing.oracle import run


def test_an_undefined_extern_is_a_compile_error():
    @T.prim_func
    def main(A: T.Tensor((4,), T.float32), B: T.Tensor((4,), T.float16)):
        with T.Kernel(1, threads=4):
            t = T.get_thread_binding()
            B[t] = T.call_extern(T.float16, "__float2half_rz", A[t])

    with pytest.raises(CompileError, match="calls __float2half_rz, which no library"):
        run("cpu", main, A=np.ones(4, np.float32), B=np.zeros(4, np.float16))


def test_c_library_externs_still_load():
    @T.prim_func
    def main(A: T.Tensor((4,), T.float32)):
        with T.Kernel(1, threads=4):
            t = T.get_thread_binding()
            A[t] = T.call_extern(T.float32, "expf", A[t])

    out = run("cpu", main, A=np.zeros(4, np.float32))["A"]
    np.testing.assert_allclose(out, np.ones(4))
