"""Every kernel in examples/ compiled for sm_80 and sm_90a by the real toolchain (no GPU), with
the SASS instructions it should use: tensor cores (HMMA) fed by ldmatrix (LDSM) for the gemm
kernels, async copies (LDGSTS) where a T.Pipelined loop streams tiles, and no register spills."""

import importlib.util
import re
import warnings
from collections import Counter
from pathlib import Path

import pytest

from tilelang_cuda import compiler
from tilelang_cuda.options import CudaOptions
from tilelang_cuda.pipeline import CudaBackend

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def example(relpath):
    spec = importlib.util.spec_from_file_location("cuda_build_" + relpath.replace("/", "_")[:-3],
                                                  EXAMPLES / relpath)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Target:
    def __init__(self, arch):
        self.arch = arch


# name -> (PrimFunc factory, SASS that must appear[, SASS that must appear on sm_90a instead]):
# on sm_90a, gemms whose tiles fit wgmma run on it (HGMMA), fed by TMA (UTMALDG) in pipelines
CASES = {
    # the examples' default block_K = 32: A's 64-byte rows take the 64-byte swizzle on sm_90a
    "gemm": (lambda: example("gemm/gemm.py").gemm.get_tir(1000, 520, 264), {"HMMA", "LDSM", "LDGSTS"},
             {"HGMMA", "UTMALDG"}),
    "gemm_nt": (lambda: example("gemm/gemm.py").gemm.get_tir(512, 256, 128, False, True),
                {"HMMA", "LDSM", "LDGSTS"}, {"HGMMA", "UTMALDG"}),
    "gemm_splitk": (lambda: example("gemm/gemm_splitk.py").gemm_splitk.get_tir(256, 200, 1000),
                    {"HMMA", "LDSM", "LDGSTS", "RED"}, {"HGMMA", "UTMALDG", "RED"}),
    "softmax": (lambda: example("softmax/softmax.py").softmax.get_tir(1000, 300), set()),
    "rms_norm": (lambda: example("norm/rms_norm.py").rms_norm.get_tir(1000, 384), set()),
    "layer_norm": (lambda: example("norm/layer_norm.py").layer_norm.get_tir(1000, 384), set()),
    "flash_attention": (lambda: example("attention/flash_attention.py").flash_attention.get_tir(2, 4, 1000, 128),
                        {"HMMA", "LDSM", "LDGSTS"}, {"HGMMA", "UTMALDG"}),
    "flash_attention_causal": (lambda: example("attention/flash_attention.py").flash_attention.get_tir(
        2, 4, 1000, 64, True), {"HMMA", "LDSM", "LDGSTS"}, {"HGMMA", "UTMALDG"}),
    "gemm_hopper_tiles": (lambda: example("gemm/gemm.py").gemm.get_tir(1000, 520, 264, block_M=128, block_N=128,
                                                                        block_K=64, num_stages=3, threads=256),
                          {"HMMA", "LDSM", "LDGSTS"}, {"HGMMA", "UTMALDG"}),
    "scale_add": (lambda: example("elementwise/scale_add.py").scale_add.get_tir(1000, 777, 0.5), set()),
    # MoE: the pipeline under the kernel's `if` keeps TMA + wgmma on sm_90a
    "grouped_gemm_contiguous": (lambda: example("moe/grouped_gemm.py").grouped_gemm_contiguous.get_tir(
        512, 520, 328, 4, block_M=128, block_N=128, block_K=64, num_stages=3, threads=256),
        {"HMMA", "LDSM", "LDGSTS"}, {"HGMMA", "UTMALDG"}),
    "grouped_gemm_masked": (lambda: example("moe/grouped_gemm.py").grouped_gemm_masked.get_tir(
        4, 300, 520, 328, block_M=128, block_N=128, block_K=64, num_stages=3, threads=256),
        {"HMMA", "LDSM", "LDGSTS"}, {"HGMMA", "UTMALDG"}),
    # decoded weights as the register operand (no LDSM for them), uint8 codes by TMA on sm_90a
    "w4a16_gemm": (lambda: example("dequant/w4a16_gemm.py").w4a16_gemm.get_tir(7, 1000, 1024),
                   {"HMMA", "LDGSTS"}, {"HGMMA", "UTMALDG"}),
    "flash_attention_bwd": (lambda: example("attention/flash_attention_bwd.py").flash_bwd.get_tir(
        2, 4, 1000, 64, True, block_M=64, block_N=64, num_stages=2, threads=128),
        {"HMMA", "LDSM", "LDGSTS", "RED"}, {"HGMMA", "UTMALDG", "RED"}),  # (lse and delta: 1-D TMA boxes)
    # grouped-query attention: the group's query heads in one pipelined loop (TMA coordinates from
    # the iteration's head and block)
    "flash_attention_bwd_gqa": (lambda: example("attention/flash_attention_bwd.py").flash_bwd.get_tir(
        2, 8, 1000, 64, False, block_M=64, block_N=128, num_stages=2, threads=256, stats="global", groups=4),
        {"HMMA", "LDSM", "RED"}, {"HGMMA", "UTMALDG", "RED"}),
    # MLA decode over a paged cache: a trip count read from memory (one CTA per tile, no
    # persistent walk), pages gathered through the block table by TMA on sm_90a
    "mla_decode_split": (lambda: example("attention/mla_decode.py").mla_decode_split.get_tir(
        4, 128, 512, 64, 64, 64, 16, 4), {"HMMA", "LDSM"}, {"HGMMA", "UTMALDG"}),
    "mla_decode_split_2_stages": (lambda: example("attention/mla_decode.py").mla_decode_split.get_tir(
        4, 128, 512, 64, 64, 64, 16, 4, num_stages=2), None, {"HGMMA", "UTMALDG"}),
    # chunked linear attention: four gemms per chunk, the state in registers across chunks (no TMA
    # producer on sm_90a: the float32 decay tile is not a TMA type here)
    "chunked_linear_attention": (lambda: example("linear_attention/chunked_linear_attention.py")
                                 .chunked_linear_attention.get_tir(2, 1000, 4, 128, 128),
                                 {"HMMA", "LDSM", "LDGSTS"}, {"HGMMA", "LDGSTS"}),
    # dim_k split as well: each block adds its share of O (float32) with vector reductions
    "chunked_linear_attention_split_k": (lambda: example("linear_attention/chunked_linear_attention.py")
                                         .chunked_linear_attention_split_k.get_tir(2, 1000, 4, 128, 128),
                                         {"HMMA", "LDSM", "LDGSTS", "RED"}, {"HGMMA", "LDGSTS", "RED"}),
    # e4m3 tensor-core instructions exist from sm_89: sm_90a only
    "fp8_blockscaled_gemm": (lambda: example("fp8/blockscaled_gemm.py").blockscaled_gemm.get_tir(1000, 520, 512),
                             None, {"QGMMA", "UTMALDG"}),  # (QGMMA: wgmma on fp8)
}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    if compiler.find_cuobjdump() is None:
        pytest.skip("cuobjdump missing: pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm")
    cache = {}

    def build(name, arch):
        if (name, arch) not in cache:
            workdir = tmp_path_factory.mktemp(f"{name}_{arch}")
            options = CudaOptions()
            backend = CudaBackend(Target(arch))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                mod = backend.lower(CASES[name][0](), options)
            backend.build(mod, backend.codegen(mod, options), options, workdir)
            sass = compiler.sass(workdir / "kernel.cubin")
            counts = Counter(re.findall(r"\b(HMMA|HGMMA|QGMMA|UTMALDG|LDSM|LDGSTS|REDG?|ATOMG?|LDL|STL)\b", sass))
            for short in ("RED", "ATOM"):  # sm_90 spells the global forms REDG / ATOMG
                counts[short] += counts.pop(short + "G", 0)
            cache[name, arch] = counts
        return cache[name, arch]

    return build


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_example_compiles_with_the_instructions_meant(built, name, arch):
    meant = CASES[name][2] if arch == "sm_90a" and len(CASES[name]) > 2 else CASES[name][1]
    if meant is None:
        pytest.skip(f"{name} has no {arch} form")
    counts = built(name, arch)
    missing = [op for op in sorted(meant) if counts[op] == 0 and not (op == "RED" and counts["ATOM"])]
    assert not missing, f"{name} for {arch}: no {missing} in the SASS ({dict(counts)})"
    assert counts["LDL"] == 0 and counts["STL"] == 0, f"{name} for {arch} spills registers: {dict(counts)}"
