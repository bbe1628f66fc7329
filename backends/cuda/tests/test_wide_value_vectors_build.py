"""The CUDA source of 8-lane runs of half and bfloat16 values computed in float32 builds with nvcc
for sm_80 and sm_90a (tests/simt/test_wide_value_vectors.py checks their widths and numerics on
every interpreter; gpu/test_gpu_spread_loops.py runs them on a GPU):

* each run is one 16-byte load per operand (``uint4``) and one 16-byte store, or, for a float8
  result, the 8-lane paired conversion ``tl_cvt_floatx8_to_fp8_e4m3x8``;
* TVM prints the float32x8 values as ``ulonglong4`` and a float literal broadcast over them as
  ``make_ulonglong4`` of 8 floats, which the intrinsics' overload builds (without it nvcc stops
  at "too many arguments");
* an explicit ``T.vectorized(8)`` over the same values builds too."""

import sys
from pathlib import Path

import pytest

pytest.importorskip("tilelang_cuda")
sys.path.append(str(Path(__file__).parents[3] / "tests" / "simt"))

import tilelang_core.language as T  # noqa: E402
from test_language_fidelity_build import compiles, needs_nvcc  # noqa: E402
from test_wide_value_vectors import flat_scale, scale_add, swiglu  # noqa: E402


def explicit_vectorized(N=1024):
    """The user's own ``T.vectorized(8)`` over bfloat16 values scaled in float32."""
    @T.prim_func
    def main(A: T.Tensor((N,), "bfloat16"), B: T.Tensor((N,), "bfloat16")):
        with T.Kernel(N // 256, threads=32) as bx:  # (8 elements a thread)
            tx = T.get_thread_binding()
            for v in T.vectorized(8):
                B[bx * 256 + tx * 8 + v] = T.cast(T.cast(A[bx * 256 + tx * 8 + v], "float32") * 0.25, "bfloat16")

    return main


CASES = {
    "scale_add_bf16": (lambda: scale_add(256, 256, "bfloat16"), "uint4"),
    "scale_add_f16_ragged": (lambda: scale_add(37, 200, "float16"), "uint4"),
    "swiglu_bf16": (lambda: swiglu(256, 256, "bfloat16", "bfloat16"), "tl_cvt_floatx8_to_bfloat16x8"),
    "swiglu_f16": (lambda: swiglu(256, 256), "tl_cvt_floatx8_to_halfx8"),
    "flat_ragged": (lambda: flat_scale(1001), "uint4"),
    "explicit": (explicit_vectorized, "uint4"),
}


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_builds(case, arch, tmp_path):
    make, expected = CASES[case]
    source = compiles(make(), arch, tmp_path)
    kernel = source[source.find('extern "C" __global__'):]
    assert "*(uint4*)(A_ptr" in kernel, kernel  # 8 half lanes loaded at once
    assert expected in kernel, kernel
    if "make_ulonglong4(" in kernel:
        assert "ulonglong4 make_ulonglong4(float a" in source  # the 8-float overload


@needs_nvcc
def test_float8_result_builds(tmp_path):
    source = compiles(swiglu(256, 256, "bfloat16", "float8_e4m3fn"), "sm_90a", tmp_path)
    kernel = source[source.find('extern "C" __global__'):]
    assert "*(uint4*)(A_ptr" in kernel and "tl_cvt_floatx8_to_fp8_e4m3x8" in kernel, kernel
