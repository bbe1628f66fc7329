"""The CUDA source of guarded vector runs (simt/transform/lane_guards.py) builds with nvcc for
sm_80 and sm_90a: the vector access under ``if every lane passes`` and the lane loop in its
``else``, for a ragged 1-D tensor, the author's ``if row < M and col < N`` (float16, vectors of
8) and a ragged bias added to a gemm's fragment. Their numerics are checked on every interpreter
in tests/simt/test_lane_guards.py and on a GPU in gpu/test_gpu_spread_loops.py."""

import sys
from pathlib import Path

import pytest

pytest.importorskip("tilelang_cuda")
sys.path.append(str(Path(__file__).parents[3] / "tests" / "simt"))

import kernels  # noqa: E402
from test_lane_guards import flat_scale, guarded_add  # noqa: E402
from test_language_fidelity_build import compiles, needs_nvcc  # noqa: E402

CASES = {"flat_1001": lambda: flat_scale(1001, 128), "guarded_f16": lambda: guarded_add(37, 96, 16, 64, "float16"),
         "bias_relu": lambda: kernels.make_matmul_bias_relu(100, 72, 64)}


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_builds(case, arch, tmp_path):
    source = compiles(CASES[case](), arch, tmp_path)
    kernel = source[source.find('extern "C" __global__'):]
    assert "for (int vs = 0;" in kernel or case == "guarded_f16", kernel  # (the ragged edge, lane by lane)
    assert any(v in kernel for v in ("float2", "float4", "uint4", "half2")), kernel
