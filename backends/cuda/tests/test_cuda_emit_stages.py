"""`python -m tilelang_core compile ... --emit ptx|sass` for CUDA, on a machine with no GPU."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tilelang_cuda import compiler

GEMM = str(Path(__file__).resolve().parents[3] / "examples" / "gemm" / "gemm.py")


def emit(stage, arch, tmp_path):
    env = {**os.environ, "TILELANG_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-W", "ignore", "-m", "tilelang_core", "compile", f"{GEMM}:gemm",
                          "--args", "256", "256", "128", "--target", f"cuda:{arch}", "--emit", stage],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_ptx_of_the_gemm_example_has_mma_and_async_copies(tmp_path):
    ptx = emit("ptx", "sm_80", tmp_path)
    assert ".target sm_80" in ptx and "mma.sync.aligned.m16n8k16" in ptx and "cp.async" in ptx


def test_sass_of_the_gemm_example_has_tensor_core_instructions(tmp_path):
    if compiler.find_cuobjdump() is None:
        pytest.skip("cuobjdump missing: pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm")
    sass = emit("sass", "sm_90a", tmp_path)
    assert "HGMMA" in sass and "UTMALDG" in sass  # block_K = 32: wgmma through the 64-byte swizzle
