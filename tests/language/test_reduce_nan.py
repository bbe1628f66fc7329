"""T.reduce_max / reduce_min / reduce_absmax(nan_propagate=True): one NaN element makes the result
NaN, on every reference path, for register and shared reductions and with clear=False (TileLang's
reduce_maxmin_nan tests); rows without NaN keep their exact max/min."""

import re

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core import FrontendError
from tilelang_core.testing.oracle import PATHS, run


def reduction(kind, M, N, scope, clear, threads=64):
    reduce = getattr(T, f"reduce_{kind}")

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M,), "float32")):
        with T.Kernel(1, threads=threads):
            alloc = T.alloc_fragment if scope == "fragment" else T.alloc_shared
            src = alloc((M, N), "float32")
            dst = T.alloc_fragment((M,), "float32")
            T.copy(A, src)
            T.copy(B, dst)
            reduce(src, dst, dim=1, clear=clear, nan_propagate=True)
            T.copy(dst, B)

    return main


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("kind", ["max", "min", "absmax"])
@pytest.mark.parametrize("scope, clear", [("fragment", True), ("fragment", False), ("shared", True)])
def test_a_nan_element_makes_the_row_nan(path, kind, scope, clear):
    M, N = 8, 64
    rng = np.random.default_rng(len(kind))
    a = rng.standard_normal((M, N)).astype(np.float32)
    nan_rows = [1, 6]
    a[1, 7] = np.nan
    a[6, 63] = np.nan
    b = rng.standard_normal(M).astype(np.float32)
    out = run(path, reduction(kind, M, N, scope, clear), A=a, B=b.copy())["B"]
    x = np.abs(a.astype(np.float64)) if kind == "absmax" else a.astype(np.float64)
    want = x.max(1) if kind != "min" else x.min(1)
    if not clear:
        want = np.maximum(want, b) if kind != "min" else np.minimum(want, b)
    assert np.isnan(out[nan_rows]).all()
    keep = [r for r in range(M) if r not in nan_rows]
    np.testing.assert_array_equal(out[keep], want[keep].astype(np.float32))


def test_nan_propagate_on_a_sum_is_refused():
    with pytest.raises(FrontendError, match=r"only max, min and absmax"):
        @T.prim_func
        def bad(A: T.Tensor((4, 4), "float32"), B: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=32):
                f = T.alloc_fragment((4, 4), "float32")
                o = T.alloc_fragment((4,), "float32")
                T.copy(A, f)
                T.reduce_sum(f, o, dim=1, nan_propagate=True)
                T.copy(o, B)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_a_seeded_one_element_fragment_with_clear_false(path, dtype):
    """TileLang's GH-2697 kernel: ``out_frag[0] = -1.0`` outside T.Parallel writes every thread's
    copy of a fragment each thread holds whole, then the reduction folds into it."""
    @T.prim_func
    def kernel(a: T.Tensor((64,), dtype), out: T.Tensor((1,), dtype)):
        with T.Kernel(1, threads=32):
            frag = T.alloc_fragment((64,), dtype)
            out_frag = T.alloc_fragment((1,), dtype)
            T.copy(a, frag)
            out_frag[0] = -1.0
            T.reduce_max(frag, out_frag, clear=False, nan_propagate=True)
            T.copy(out_frag, out)

    a = -np.arange(2, 66).astype(dtype)  # every element below the seed
    assert run(path, kernel, a=a, out=np.zeros(1, dtype))["out"][0] == -1
    a[9] = np.nan
    assert np.isnan(run(path, kernel, a=a, out=np.zeros(1, dtype))["out"][0])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_nan_propagation_of_16_bit_floats_compiles_for_cuda(dtype):
    """(TVM's CUDA isnan refuses 16-bit floats: the widened value is tested.)"""
    import tilelang_core as tilelang

    @T.prim_func
    def kernel(a: T.Tensor((64,), dtype), out: T.Tensor((1,), dtype)):
        with T.Kernel(1, threads=32):
            frag = T.alloc_fragment((64,), dtype)
            out_frag = T.alloc_fragment((1,), dtype)
            T.copy(a, frag)
            T.reduce_min(frag, out_frag, nan_propagate=True)
            T.copy(out_frag, out)

    source = tilelang.compile(kernel, target="cuda:sm_90a").get_kernel_source()
    # x != x on the widened value (where the two lanes of the paired fold, tl::min2_nan, combine)
    assert re.search(r"\(\(float\)(\w+)\[(\d+)\]\) != \(\(float\)\1\[\2\]\)", source), source
    assert "tl::min2_nan(" in source
