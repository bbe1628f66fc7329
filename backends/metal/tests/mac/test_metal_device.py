"""On a Mac: the examples compiled for Metal, run through torch.mps.compile_shader against torch
in float64 (skipped elsewhere). Together with the interpreter tests these verify what CI cannot:
the Metal compiler accepts our MSL, simdgroup_matrix's element order, barriers, atomics."""

import pytest
import torch

import tilelang_core as tl
from metal_cases import example
from test_metal_runtime import dynamic_scale

pytestmark = pytest.mark.filterwarnings("ignore")


@pytest.fixture(autouse=True)
def on_metal():
    with tl.Target("metal"):
        yield


@pytest.mark.parametrize("trans_A,trans_B", [(False, False), (False, True), (True, False)])
def test_gemm(trans_A, trans_B):
    assert example("gemm/gemm.py").check(300, 200, 136, trans_A, trans_B, device="mps") < 1e-3


def test_split_k_gemm():
    assert example("gemm/gemm_splitk.py").check(256, 200, 1000, device="mps") < 1e-4


def test_softmax_and_norms():
    assert example("softmax/softmax.py").check(1000, 300, device="mps") < 1e-3
    assert example("norm/rms_norm.py").check(1000, 384, device="mps") < 2e-3
    assert example("norm/layer_norm.py").check(1000, 384, device="mps") < 2e-3


@pytest.mark.parametrize("is_causal", [False, True])
def test_flash_attention(is_causal):
    assert example("attention/flash_attention.py").check(2, 4, 200, 64, is_causal, device="mps") < 2e-3


def test_scale_add_and_quickstart():
    assert example("elementwise/scale_add.py").check(1000, 777, device="mps") < 1e-6
    example("quickstart.py").main(["--m", "70", "--n", "40", "--k", "50", "--target", "metal"])


@pytest.mark.parametrize("m", [1, 65, 1000])
def test_dynamic_extent_and_scalar_argument(m):
    kernel = tl.compile(dynamic_scale(), target="metal")
    x = torch.randn(m, 128, device="mps")
    y = torch.empty_like(x)
    kernel(x, y, 0.5)
    torch.testing.assert_close(y.cpu(), x.cpu() * 0.5)
