"""Every example, on the cpu reference backend: numerics against torch in float64 on random data
with sizes that do not divide the tiles, and each file run as a script the way a user would."""

import importlib.util
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

from tilelang_core.target import Target

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load(relpath: str):
    spec = importlib.util.spec_from_file_location(relpath.replace("/", "_")[:-3], EXAMPLES / relpath)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(autouse=True)
def on_cpu():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with Target("cpu"):
            yield


@pytest.mark.parametrize("trans_A, trans_B", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("dtype, tol", [(torch.float16, 1e-3), (torch.bfloat16, 8e-3)])
def test_gemm_with_transposes(trans_A, trans_B, dtype, tol):
    assert load("gemm/gemm.py").check(130, 72, 100, trans_A, trans_B, dtype=dtype) < tol


def test_gemm_with_other_tiles_and_float32():
    gemm = load("gemm/gemm.py")
    assert gemm.check(67, 33, 45, dtype=torch.float32, block_M=32, block_N=16, block_K=16) < 1e-6


def test_split_k_gemm_accumulates_every_slice():
    assert load("gemm/gemm_splitk.py").check(100, 70, 300, split_k=3) < 1e-5


@pytest.mark.parametrize("dtype, tol", [(torch.float16, 1e-3), (torch.bfloat16, 8e-3), (torch.float32, 1e-6)])
def test_softmax(dtype, tol):
    assert load("softmax/softmax.py").check(37, 100, dtype=dtype) < tol


@pytest.mark.parametrize("name", ["rms_norm", "layer_norm"])
@pytest.mark.parametrize("dtype, tol", [(torch.float16, 1e-3), (torch.bfloat16, 8e-3), (torch.float32, 1e-6)])
def test_norms(name, dtype, tol):
    assert load(f"norm/{name}.py").check(19, 72, dtype=dtype) < tol


@pytest.mark.parametrize("is_causal", [False, True])
def test_flash_attention(is_causal):
    assert load("attention/flash_attention.py").check(1, 2, 100, 32, is_causal, block_M=32, block_N=32) < 2e-3


def test_flash_attention_with_unequal_tiles():
    attention = load("attention/flash_attention.py")
    assert attention.check(1, 1, 77, 16, True, block_M=16, block_N=32) < 2e-3


@pytest.mark.parametrize("dtype, tol", [(torch.float32, 1e-6), (torch.float16, 1e-3)])
def test_scale_add(dtype, tol):
    assert load("elementwise/scale_add.py").check(33, 130, 0.75, dtype=dtype) < tol


SCRIPTS = [
    ["quickstart.py", "--m", "70", "--n", "40", "--k", "50"],
    ["gemm/gemm.py", "--m", "70", "--n", "40", "--k", "50", "--trans-a"],
    ["gemm/gemm_splitk.py", "--m", "70", "--n", "40", "--k", "130", "--split-k", "2"],
    ["softmax/softmax.py", "--m", "20", "--n", "30"],
    ["norm/rms_norm.py", "--m", "20", "--n", "30"],
    ["norm/layer_norm.py", "--m", "20", "--n", "30"],
    ["attention/flash_attention.py", "--seq-len", "50", "--dim", "16", "--heads", "1", "--batch", "1",
     "--is-causal"],
    ["elementwise/scale_add.py", "--m", "20", "--n", "30"],
]


@pytest.mark.parametrize("argv", SCRIPTS, ids=[a[0] for a in SCRIPTS])
def test_runs_as_a_script(argv, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TILELANG_")}
    env["TILELANG_CACHE_DIR"] = str(tmp_path)
    out = subprocess.run([sys.executable, str(EXAMPLES / argv[0]), *argv[1:]], capture_output=True, text=True,
                         env=env, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "OK" in out.stdout and "cpu reference backend" in out.stderr


def test_quickstart_shows_the_kernel_body_not_the_preamble():
    quickstart = load("quickstart.py")
    out = subprocess.run([sys.executable, str(EXAMPLES / "quickstart.py"), "--m", "64", "--n", "64", "--k", "32"],
                         capture_output=True, text=True, timeout=300,
                         env={k: v for k, v in os.environ.items() if not k.startswith("TILELANG_")})
    shown = out.stdout.split("=== generated source", 1)[1]
    assert "private constant" not in shown and ("parallel_lambda" in shown or "for_begin" in shown)  # loops
    cuda = ["#include <cuda_fp16.h>", "__device__ int helper();", 'extern "C" __global__ void k(float* A) {', "}"]
    assert quickstart.kernel_body_line(cuda) == 2
    assert quickstart.kernel_body_line(["#include <metal_stdlib>", "kernel void k(device float* A) {"]) == 1
    assert quickstart.kernel_body_line(["nothing here"]) == 0


def test_T_compile_and_tilelang_compile_are_the_same_entry_point():
    import numpy as np

    import tilelang_core as tilelang
    import tilelang_core.language as T

    assert T.compile is tilelang.compile
    kernel = T.compile(load("elementwise/scale_add.py").scale_add.get_tir(37, 41, 2.0), out_idx=[-1], target="cpu")
    a, b = np.random.rand(37, 41).astype("float32"), np.random.rand(37, 41).astype("float32")
    np.testing.assert_allclose(kernel(a, b), 2.0 * a.astype("float64") + b, rtol=1e-6)


@pytest.mark.parametrize("M, N, group", [(37, 256, 128), (1, 384, 128), (20, 256, 256)])
def test_swiglu_fp8_quant(M, N, group):
    """Scales exact to float64's, dequantized values within e4m3's rounding, ragged M, and one
    scale per token (group = N)."""
    assert load("quant/swiglu_fp8_quant.py").check(M, N, group=group) < 0.04


def test_swiglu_fp8_quant_values_match_torch():
    """Every e4m3 value is torch's rounding of y / S (or a neighbour where y / S sits on a
    rounding boundary that float32 and float64 see on different sides)."""
    quant = load("quant/swiglu_fp8_quant.py")
    x = (torch.randn(45, 512) * 3).bfloat16()
    q, s = quant.swiglu_fp8_quant(45, 256)(x)
    _, _, ref = quant.reference(x)
    differ = (q.double() != ref)
    assert differ.float().mean().item() < 1e-3
    assert (q.double() - ref).abs().max().item() <= 32  # one e4m3 step at the top of the range
