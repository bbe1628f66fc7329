"""What the metal tests share: the examples as PrimFuncs, and lowering/codegen for apple7."""

from __future__ import annotations

import functools
import importlib.util
import shutil
import warnings
from pathlib import Path

import pytest

from tilelang_metal.options import MetalOptions
from tilelang_metal.pipeline import MetalBackend

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"

needs_clang = pytest.mark.skipif(shutil.which("clang-19") is None,
                                 reason="clang-19 missing: bash tools/dev.sh setup installs it (CI has it)")


class Target:
    def __init__(self, arch="apple7"):
        self.arch = arch


@functools.lru_cache(maxsize=None)
def example(relpath: str):
    spec = importlib.util.spec_from_file_location("metal_ex_" + relpath.replace("/", "_")[:-3],
                                                  EXAMPLES / relpath)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def quickstart(m=1000, n=520, k=264):
    import torch

    a, b = torch.randn(m, k, dtype=torch.float16), torch.randn(k, n, dtype=torch.float16)
    return example("quickstart.py").matmul_relu.program.specialize((a, b), {}).func


def lower(func, arch="apple7", **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod = MetalBackend(Target(arch)).lower(func, MetalOptions(**options))
    (gvar,) = mod.functions.keys()
    return mod, mod[gvar]


def msl(func, **options) -> str:
    mod, _ = lower(func, **options)
    return MetalBackend(Target()).codegen(mod)


# name -> (PrimFunc factory, has a T.gemm that must take the simdgroup_matrix path)
EXAMPLE_CASES = {
    "gemm": (lambda: example("gemm/gemm.py").gemm.get_tir(1000, 520, 264), True),
    "gemm_nt": (lambda: example("gemm/gemm.py").gemm.get_tir(512, 256, 128, False, True), True),
    "gemm_tn": (lambda: example("gemm/gemm.py").gemm.get_tir(512, 256, 128, True, False), True),
    "gemm_splitk": (lambda: example("gemm/gemm_splitk.py").gemm_splitk.get_tir(256, 200, 1000), True),
    "softmax": (lambda: example("softmax/softmax.py").softmax.get_tir(1000, 300), False),
    "rms_norm": (lambda: example("norm/rms_norm.py").rms_norm.get_tir(1000, 384), False),
    "layer_norm": (lambda: example("norm/layer_norm.py").layer_norm.get_tir(1000, 384), False),
    "flash_attention": (lambda: example("attention/flash_attention.py").flash_attention.get_tir(2, 4, 1000, 64), True),
    "flash_attention_causal": (lambda: example("attention/flash_attention.py").flash_attention.get_tir(
        2, 4, 1000, 64, True), True),
    "scale_add": (lambda: example("elementwise/scale_add.py").scale_add.get_tir(1000, 777, 0.5), False),
    "quickstart": (quickstart, True),
}
