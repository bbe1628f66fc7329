"""Every kernel in examples/ compiled to gfx942 (MI300, MFMA) and gfx1100 (RDNA3, WMMA) code
objects by clang, disassembled by llvm-objdump: matrix-core instructions where the kernel uses
T.gemm, 16-byte global loads, no private memory (scratch) and no register spills; and one kernel
built into the loadable .so (host wrapper + embedded code object)."""

import re
import warnings
from collections import Counter

import pytest
from hip_examples import CASES, needs_clang, needs_host_cxx

from tilelang_hip import codegen, compiler
from tilelang_hip.options import HipOptions
from tilelang_hip.pipeline import HipBackend

MATRIX = {"gfx942": "v_mfma_f32_16x16x16_f16", "gfx1100": "v_wmma_f32_16x16x16_f16"}


class Target:
    def __init__(self, arch):
        self.arch = arch


def build(name, arch, tmp_path, **options):
    backend, opts = HipBackend(Target(arch)), HipOptions(**options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod = backend.lower(CASES[name][0](), opts)
    source = backend.codegen(mod, opts)
    code_object = compiler.compile_device(codegen.split(source).device, arch, tmp_path, opts)
    asm = compiler.disassemble(code_object, arch)
    notes = compiler._run([compiler.find_objdump().replace("objdump", "readelf"), "--notes",
                           str(code_object)], "llvm-readelf")
    return source, code_object, Counter(re.findall(r"^\s+(v_mfma\w+|v_wmma\w+|scratch_\w+|"
                                                   r"global_load_(?:dwordx4|b128))", asm, re.M)), notes


def metadata(notes, key):
    return int(re.search(rf"\.{key}:\s+(\d+)", notes).group(1))


@needs_clang
@pytest.mark.parametrize("arch", ["gfx942", "gfx1100"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_example_compiles_with_the_instructions_meant(name, arch, tmp_path):
    _, _, counts, notes = build(name, arch, tmp_path)
    uses_gemm = CASES[name][1]
    if uses_gemm:
        assert counts[MATRIX[arch]] > 0, f"{name} for {arch}: no {MATRIX[arch]} ({dict(counts)})"
        assert counts["global_load_dwordx4"] + counts["global_load_b128"] > 0, dict(counts)
    else:
        assert not any(op.startswith(("v_mfma", "v_wmma")) for op in counts)
    # flash_attention at dim 128 on gfx1100 (wave32: S, O and P take 112 VGPRs per lane) spilled
    # 197 VGPRs until the gemm's element-wise reads took tl_opaque's lane row and its WMMA columns
    # were fenced (lower_gemm.py); without either it spills again
    spills = metadata(notes, "vgpr_spill_count")
    assert spills == 0 and metadata(notes, "private_segment_fixed_size") == 0, \
        f"{name} for {arch} uses scratch: {spills} spilled VGPRs, {dict(counts)}"


@needs_clang
@pytest.mark.parametrize("arch", ["gfx942", "gfx1100"])
@pytest.mark.parametrize("name", ["gemm", "flash_attention"])
def test_operands_stored_k_by_n_are_read_4_bytes_per_lane_pair(name, arch, tmp_path):
    """B as K x N (gemm's B, attention's V): no 2-byte LDS reads, 4-byte ones (LLVM pairs some
    into ds_read2 / ds_load_2addr) and one v_perm_b32 per read."""
    build(name, arch, tmp_path)
    asm = compiler.disassemble(tmp_path / "kernel.hsaco", arch)
    reads = Counter(re.findall(r"^\s+(ds_(?:read|load)\w*)", asm, re.M))
    assert not any("u16" in op for op in reads), dict(reads)
    assert any("b32" in op for op in reads) and "v_perm_b32" in asm, dict(reads)


@needs_clang
@pytest.mark.parametrize("name", ["gemm", "flash_attention_causal"])
def test_mfma_32x32x8_on_request(name, tmp_path):
    _, _, counts, _ = build(name, "gfx942", tmp_path, mfma="32x32x8")
    assert counts["v_mfma_f32_32x32x8_f16"] > 0 and counts["v_mfma_f32_16x16x16_f16"] == 0, dict(counts)


@needs_clang
@needs_host_cxx
def test_the_library_embeds_the_code_object_and_launches_through_the_hip_module_api(tmp_path):
    source, _, _, _ = build("gemm_nt", "gfx942", tmp_path / "dev")
    result = compiler.build_shared_library(source, "gfx942", tmp_path, HipOptions())
    data = result.path.read_bytes()
    assert result.code_object.read_bytes() in data   # the .incbin'd hsaco, byte for byte
    import subprocess
    undefined = subprocess.run(["nm", "-D", "--undefined-only", str(result.path)], capture_output=True,
                               text=True).stdout
    for symbol in ("hipModuleLoadData", "hipModuleGetFunction", "hipModuleLaunchKernel"):
        assert symbol in undefined, f"{symbol}: the launch path was compiled away"


@needs_clang
@needs_host_cxx
def test_the_wrapper_refuses_tensors_that_are_not_on_a_rocm_device(tmp_path):
    """The library loads without ROCm (HIP symbols bind lazily) and its argument checks run."""
    import torch
    import tvm_ffi

    source, _, _, _ = build("scale_add", "gfx942", tmp_path / "dev")
    result = compiler.build_shared_library(source, "gfx942", tmp_path, HipOptions())
    kernel = tvm_ffi.load_module(str(result.path))["main"]
    a = torch.zeros(1000, 777)
    with pytest.raises(ValueError, match="(?s)device_type.*expected rocm"):
        kernel(a, a, a)
