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



def test_kernel_asm_computes_ptx_and_sass_on_first_access_and_keeps_them():
    """``kernel.asm["ptx"]`` / ``["sass"]`` on the compiled kernel object (issue 24), as in Triton."""
    import importlib.util

    import tilelang_core as tl

    spec = importlib.util.spec_from_file_location("gemm_example_for_asm", GEMM)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    kernel = tl.compile(module.gemm.fn(256, 256, 128), target="cuda:sm_80")
    assert kernel.asm.stages == ("tirx", "lowered", "source", "ptx", "sass") and "ptx" not in kernel.asm
    ptx = kernel.asm["ptx"]
    assert ".target sm_80" in ptx and "mma.sync.aligned.m16n8k16" in ptx
    assert kernel.asm["ptx"] is ptx  # kept
    if compiler.find_cuobjdump() is not None:
        assert "HMMA" in kernel.asm["sass"]
    with pytest.raises(KeyError, match="no stage 'cubin' for this kernel; it has tirx, lowered, source, ptx, sass"):
        kernel.asm["cubin"]
