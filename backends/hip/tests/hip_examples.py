"""Every kernel of examples/, as (name -> PrimFunc factory), for the hip build and interpreter
tests, and the toolchain markers. The quickstart is an eager kernel: its PrimFunc comes from
specializing it on sizes."""

import importlib.util
import shutil
from pathlib import Path

import pytest
import torch

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def example(relpath):
    spec = importlib.util.spec_from_file_location("hip_ex_" + relpath.replace("/", "_")[:-3], EXAMPLES / relpath)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def quickstart(m, n, k):
    program = example("quickstart.py").matmul_relu.program
    a, b = torch.empty(m, k, dtype=torch.float16), torch.empty(k, n, dtype=torch.float16)
    return program.specialize((a, b), {}).func


#: name -> (factory, uses T.gemm)
CASES = {
    "gemm": (lambda: example("gemm/gemm.py").gemm.get_tir(1000, 520, 264), True),
    "gemm_nt": (lambda: example("gemm/gemm.py").gemm.get_tir(512, 256, 128, False, True), True),
    "gemm_splitk": (lambda: example("gemm/gemm_splitk.py").gemm_splitk.get_tir(256, 200, 1000), True),
    "softmax": (lambda: example("softmax/softmax.py").softmax.get_tir(1000, 300), False),
    "rms_norm": (lambda: example("norm/rms_norm.py").rms_norm.get_tir(1000, 384), False),
    "layer_norm": (lambda: example("norm/layer_norm.py").layer_norm.get_tir(1000, 384), False),
    "flash_attention": (lambda: example("attention/flash_attention.py").flash_attention.get_tir(
        2, 4, 1000, 128), True),
    "flash_attention_causal": (lambda: example("attention/flash_attention.py").flash_attention.get_tir(
        2, 4, 1000, 64, True), True),
    "scale_add": (lambda: example("elementwise/scale_add.py").scale_add.get_tir(1000, 777, 0.5), False),
    "quickstart": (lambda: quickstart(1000, 520, 264), True),
}


def _clang19():
    try:
        from tilelang_hip.compiler import find_clang, find_objdump

        return find_clang() and find_objdump()
    except Exception:
        return None


#: tests that compile code objects: skipped (with the reason) where no LLVM >= 19 is installed
needs_clang = pytest.mark.skipif(not _clang19(), reason="clang++/llvm-objdump of LLVM >= 19 missing: "
                                 "bash tools/install-toolchains.sh (apt-get install clang-19 lld-19 llvm-19)")
needs_host_cxx = pytest.mark.skipif(not (shutil.which("c++") or shutil.which("g++")), reason="no host C++ compiler")
