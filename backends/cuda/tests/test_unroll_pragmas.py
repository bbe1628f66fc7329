"""``T.unroll(..., unroll_factor=N)``: the loop stays a loop and nvcc gets ``#pragma unroll N`` right
before it (tilelang_cuda/unroll_pragmas.py; TileLang prints the same); the values do not change."""

import re

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core.testing.oracle import run

pytest.importorskip("tilelang_cuda")
from test_language_fidelity_build import compiles, needs_nvcc  # noqa: E402
from test_paired_folds import source  # noqa: E402
from tilelang_cuda.unroll_pragmas import with_unroll_pragmas  # noqa: E402


def partially_unrolled(rows=8, cols=16, factor=4):
    @T.prim_func
    def main(A: T.Tensor((rows, cols), "float32"), B: T.Tensor((rows, cols), "float32")):
        with T.Kernel(1, threads=32):
            tx = T.get_thread_binding()
            if tx < rows:
                for j in T.unroll(0, cols, unroll_factor=factor):
                    B[tx, j] = A[tx, j] * 2.0 + tx * j

    return main


def _kernel(src: str) -> str:
    return src[src.find("__global__"):]


@pytest.mark.parametrize("factor", [2, 4, 16])
def test_the_pragma_stands_right_before_its_loop(factor):
    src = _kernel(source(partially_unrolled(factor=factor), "sm_90a"))
    assert re.search(rf"#pragma unroll {factor}\n\s*for \(int j = 0; j < 16; \+\+j\)", src), src
    assert "tl_unroll_pragma" not in src


def test_statements_printed_between_marker_and_loop_stay_before_the_pragma():
    src = "  tl_unroll_pragma(4);\n  int cse_v1 = tx * 16;\n  for (int j = 0; j < 16; ++j) {\n  }\n}\n"
    assert with_unroll_pragmas(src) == "  int cse_v1 = tx * 16;\n  #pragma unroll 4\n  for (int j = 0; j < 16; ++j) {\n  }\n}\n"


def test_a_marker_whose_loop_was_unrolled_away_is_dropped():
    src = "  if (x) {\n    tl_unroll_pragma(2);\n    A[0] = 1;\n    A[1] = 1;\n  }\n  for (int j = 0; j < 4; ++j) {\n  }\n"
    assert with_unroll_pragmas(src) == "  if (x) {\n    A[0] = 1;\n    A[1] = 1;\n  }\n  for (int j = 0; j < 4; ++j) {\n  }\n"


@pytest.mark.parametrize("path", ["cpu", "cuda:sm_80"])
def test_the_values_are_the_loops(path):
    a = np.random.default_rng(0).standard_normal((8, 16)).astype(np.float32)
    got = run(path, partially_unrolled(), A=a, B=np.zeros((8, 16), np.float32))["B"]
    np.testing.assert_allclose(got, a * 2 + np.arange(8)[:, None] * np.arange(16)[None, :], rtol=1e-6)


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_the_pragma_compiles(arch, tmp_path):
    assert "#pragma unroll 4" in compiles(partially_unrolled(), arch, tmp_path)
