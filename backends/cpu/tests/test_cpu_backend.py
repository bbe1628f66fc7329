"""CpuBackend stages, options and toolchain identity."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

import tilelang_core.language as T
from cpu_harness import compile_cpu, rand
from tilelang_core.errors import ConfigError
from tilelang_cpu.compiler import mcpu_from_cpuinfo
from tilelang_cpu.options import CpuOptions
from tilelang_cpu.pipeline import CpuBackend

V2 = "cx16 lahf_lm popcnt sse4_1 sse4_2 ssse3"
V3 = V2 + " avx avx2 bmi1 bmi2 f16c fma movbe xsave"
V4 = V3 + " avx512f avx512bw avx512cd avx512dq avx512vl"


def scale_kernel():
    @T.prim_func
    def scale(A: T.Tensor((300,), "float32"), B: T.Tensor((300,), "float32")):
        with T.Kernel(T.ceildiv(300, 128), threads=128) as bx:
            f = T.alloc_fragment((128,), "float32")
            T.copy(A[bx * 128], f)
            for i in T.Parallel(128):
                f[i] = f[i] * 2.0 + 1.0
            T.copy(f, B[bx * 128])

    return scale


@pytest.mark.parametrize("flags,level", [("fpu sse2", "x86-64"), (V2, "x86-64-v2"), (V3, "x86-64-v3"),
                                         (V4, "x86-64-v4"), ("avx512f " + V2, "x86-64-v2")])
def test_mcpu_is_the_highest_complete_x86_64_level(flags, level):
    assert mcpu_from_cpuinfo(f"processor : 0\nflags\t\t: {flags}\n") == level


def test_another_installed_backends_keys_are_accepted_without_effect():
    """A kernel carrying the cuda backend's sm_90a tuning (examples/attention/flash_attention_bwd.py
    asks for tl.enable_tma_reduce) still compiles for cpu; a key no backend knows is still refused."""
    pytest.importorskip("tilelang_cuda")
    assert CpuOptions.from_pass_configs({"tl.enable_tma_reduce": True, "tl.disable_stream_k": True}) == CpuOptions()
    with pytest.raises(ConfigError, match="unknown pass config 'tl.enable_tma_reduse'"):
        CpuOptions.from_pass_configs({"tl.enable_tma_reduse": True})


def test_options_validate_and_map_pass_configs():
    assert CpuOptions.from_pass_configs({"tl.num_threads": 1}).num_threads == 1
    assert CpuOptions.from_pass_configs({"vectorize": False}).vectorize is False
    with pytest.raises(ConfigError, match="unknown pass config"):
        CpuOptions.from_pass_configs({"tl.unroll_everything": True})
    for bad in ({"num_threads": -1}, {"num_threads": 8}, {"vectorize": "yes"}, {"mcpu": "native"}):
        with pytest.raises(ConfigError):
            CpuOptions(**bad)


def test_options_hash_is_stable_and_distinguishes_options():
    assert CpuOptions().stable_hash() == CpuOptions().stable_hash()
    assert CpuOptions().stable_hash() != CpuOptions(vectorize=False).stable_hash()
    with pytest.raises(dataclasses.FrozenInstanceError):
        CpuOptions().vectorize = False


def test_toolchain_version_names_tvm_llvm_and_cpu():
    version = CpuBackend(None).toolchain_version()
    assert "tvm-0.27" in version and "llvm-" in version and "mcpu-" in version


def test_stages_give_llvm_ir_and_a_loadable_shared_library(tmp_path: Path):
    backend, options = CpuBackend(None), CpuOptions()
    mod = backend.lower(scale_kernel(), options)
    source = backend.codegen(mod, options)
    assert "define" in source and "scale" in source  # LLVM IR of the kernel
    data = backend.build(mod, source, options, tmp_path / "work")
    assert data[:4] == b"\x7fELF"
    path = tmp_path / "scale.so"
    path.write_bytes(data)
    fn = backend.load(path)["scale"]
    a, b = rand((300,), torch.float32, 1), torch.zeros(300)
    fn(a, b)
    torch.testing.assert_close(b, a * 2 + 1)


def test_serial_and_parallel_blocks_agree():
    a = rand((300,), torch.float32, 2)
    outs = []
    for num_threads in (0, 1):
        b = torch.zeros(300)
        compile_cpu(scale_kernel(), num_threads=num_threads)(a, b)
        outs.append(b)
    assert torch.equal(outs[0], outs[1])


def test_wrong_argument_is_rejected_before_running():
    kernel = compile_cpu(scale_kernel())
    with pytest.raises(Exception, match="float32|dtype|shape|300"):
        kernel(torch.zeros(300, dtype=torch.float64), torch.zeros(300))
