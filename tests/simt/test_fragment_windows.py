"""A fragment read through a window in T.Parallel (TileLang's mHC pre: ``x_frag[i, jj * 4 + j]``
in a loop over ``i, j``, ``jj`` a serial loop outside, ``x_frag`` a gemm's A operand in registers).
The loop runs each element on the thread that holds it in every window; a layout that puts
windows in other threads is refused at the loop. cpu and the cuda interpreter against numpy."""

import numpy as np
import pytest

import tilelang_core as tl
import tilelang_core.language as T
from tilelang_core.errors import LayoutError
from tilelang_core.testing.oracle import run

TB, HB = 32, 64


def windowed_sum_and_gemm(dtype, window):
    @T.prim_func
    def k(X: T.Tensor((TB, HB), dtype), Fn: T.Tensor((32, HB), dtype), O: T.Tensor((TB, 32), "float32"),
          S: T.Tensor((TB,), "float32")):
        with T.Kernel(1, threads=128):
            out_frag = T.alloc_fragment((TB, 32), "float32")
            part = T.alloc_fragment((TB, window), "float32")
            T.clear(out_frag)
            T.clear(part)
            xs = T.alloc_shared((TB, HB), dtype)
            fs = T.alloc_shared((32, HB), dtype)
            T.copy(X, xs)
            T.copy(Fn, fs)
            x = T.alloc_fragment((TB, HB), dtype)
            T.copy(xs, x)
            for jj in T.serial(HB // window):
                for i, j in T.Parallel(TB, window):
                    part[i, j] += T.cast(x[i, jj * window + j], "float32") * T.cast(x[i, jj * window + j], "float32")
            T.gemm(x, fs, out_frag, transpose_B=True)
            total = T.alloc_fragment(TB, "float32")
            T.reduce_sum(part, total)
            T.copy(total, S)
            T.copy(out_frag, O)

    return k


@pytest.mark.parametrize("path", ["cpu", "cuda:sm_80"])
@pytest.mark.parametrize("dtype, window", [("float32", 4), ("float16", 8)])
def test_a_window_of_a_register_gemm_operand(path, dtype, window):
    rng = np.random.default_rng(window)
    x = rng.standard_normal((TB, HB)).astype(dtype)
    fn = rng.standard_normal((32, HB)).astype(dtype)
    out = run(path, windowed_sum_and_gemm(dtype, window), X=x, Fn=fn, O=np.zeros((TB, 32), np.float32),
              S=np.zeros(TB, np.float32))
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(out["S"], (x64 ** 2).sum(1), rtol=1e-4)
    np.testing.assert_allclose(out["O"], x64 @ fn.astype(np.float64).T, rtol=2e-2, atol=2e-2)


def test_windows_that_lie_in_other_threads_are_refused():
    # the fp16 operand puts columns 4..7 of every 8 in other lanes than 0..3: a window of 4 moves
    with pytest.raises(LayoutError, match=r"fragment 'x' is read at \[i, jj \* 4 \+ j\], whose windows lie in other threads"):
        tl.compile(windowed_sum_and_gemm("float16", 4), target="cuda:sm_80")
