"""Golden-structure checks of the generated Ascend C (it cannot be compiled here: no CANN), the
build step's missing-toolchain error, and the Backend stages that run without hardware."""

import re
from collections import Counter

import pytest

from ascend_harness import example, lower_program
from tilelang_ascend import compiler
from tilelang_ascend.codegen import emit_ascend_c
from tilelang_ascend.options import AscendOptions
from tilelang_ascend.pipeline import AscendBackend
from tilelang_core.errors import CompileError, ConfigError


def gemm_source():
    return emit_ascend_c(lower_program(example("gemm/gemm.py").gemm.get_tir(100, 72, 70)))


def attention_source():
    fa = example("attention/flash_attention.py")
    return emit_ascend_c(lower_program(fa.flash_attention.get_tir(1, 2, 100, 32, True,
                                                                  block_M=32, block_N=32)))


def section(src: str, macro: str) -> str:
    """The text of ``if <macro> { ... }`` (brace matched)."""
    start = src.index(f"if {macro} {{")
    depth, i = 0, src.index("{", start)
    for j in range(i, len(src)):
        depth += {"{": 1, "}": -1}.get(src[j], 0)
        if depth == 0:
            return src[i:j + 1]
    raise AssertionError("unbalanced braces")


def pairs(text: str, kind: str) -> Counter:
    return Counter(re.findall(kind + r"<HardEvent::(\w+)>\((EVENT_ID\d|\(event_t\)\(.*?\))\);", text))


@pytest.mark.parametrize("make", [gemm_source, attention_source])
def test_kernel_entry_and_core_sections(make):
    src = make()
    assert '#include "kernel_operator.h"' in src
    assert re.search(r'extern "C" __global__ __aicore__ void main_kernel\(GM_ADDR \w+, .*GM_ADDR workspace\)', src)
    assert "KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_1);" in src
    assert src.count("{") == src.count("}")
    assert "main_kernel<<<" in src and 'extern "C" void main_launch(void *stream' in src
    for macro in ("ASCEND_IS_AIC", "ASCEND_IS_AIV"):
        assert f"if {macro} {{" in src


@pytest.mark.parametrize("make", [gemm_source, attention_source])
def test_every_set_flag_has_its_wait_on_each_core(make):
    src = make()
    for macro in ("ASCEND_IS_AIC", "ASCEND_IS_AIV"):
        body = section(src, macro)
        assert pairs(body, "SetFlag") == pairs(body, "WaitFlag")
    sets = Counter(re.findall(r"CrossCoreSetFlag<0x2, PIPE_\w+>\((\d+)\)", src))
    waits = Counter(re.findall(r"CrossCoreWaitFlag\((\d+)\)", src))
    assert sets == waits


def test_gemm_source_moves_data_through_the_cube_pipeline():
    cube = section(gemm_source(), "ASCEND_IS_AIC")
    order = [cube.index(s) for s in ("Nd2NzParams", "LoadData(", "Mmad(", "Fixpipe<half, float")]
    assert order == sorted(order)
    assert "SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);" in cube
    assert "SetFlag<HardEvent::M_FIX>(EVENT_ID0);" in cube
    assert "TBuf<TPosition::A1> l1_buf;" in cube and "TPosition::CO1" in cube
    assert "for (int32_t ko = 0; ko < 0 + 3; ++ko) {  // 2 stages" in cube
    assert "(ko == 0)" in cube  # the cleared accumulator: cmatrixInitVal on the first K step
    # double buffering: a ping-pong event per stage, rotating with the K loop
    assert "WaitFlag<HardEvent::MTE1_MTE2>((event_t)((1 + (ko % 2))));" in cube
    assert "SetFlag<HardEvent::MTE1_MTE2>(EVENT_ID2);" in cube


def test_attention_vector_section_has_the_softmax():
    vec = section(attention_source(), "ASCEND_IS_AIV")
    for call in ("ReduceMax<float", "ReduceSum<float", "Exp(", "CreateVecIndex(", "Select(",
                 "Cast(", "DataCopyPad(", "Broadcast<float, 2, 1>"):
        assert call in vec, call
    assert "TPosition::VECCALC" in vec and "Mmad(" not in vec


def test_missing_cann_is_a_compile_error_that_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.delenv("ASCEND_HOME_PATH", raising=False)
    monkeypatch.delenv("ASCEND_TOOLKIT_HOME", raising=False)
    monkeypatch.setattr(compiler, "DEFAULT_PREFIX", tmp_path / "nowhere")
    monkeypatch.setenv("PATH", str(tmp_path))
    backend = AscendBackend(target=None)
    prog = backend.lower(example("gemm/gemm.py").gemm.get_tir(64, 64, 64), AscendOptions())
    with pytest.raises(CompileError, match=r"CANN was not found.*ASCEND_HOME_PATH=\(unset\).*"
                                           r"Ascend-cann-toolkit.*set_env.sh.*torch_npu"):
        backend.build(prog, backend.codegen(prog), AscendOptions(), tmp_path)


def test_cann_home_comes_from_ascend_home_path_then_toolkit_home(monkeypatch, tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    monkeypatch.setenv("ASCEND_TOOLKIT_HOME", str(tmp_path / "b"))
    monkeypatch.delenv("ASCEND_HOME_PATH", raising=False)
    assert compiler.cann_home() == tmp_path / "b"
    monkeypatch.setenv("ASCEND_HOME_PATH", str(tmp_path / "a"))
    assert compiler.cann_home() == tmp_path / "a"
    cmd = compiler.bisheng_command(tmp_path / "bisheng", tmp_path / "a", "dav-c220",
                                   tmp_path / "k.cpp", tmp_path / "k.so")
    assert "--cce-aicore-arch=dav-c220" in cmd and "-x" in cmd and "cce" in cmd


def test_backend_lowers_and_emits_for_the_target_arch():
    backend = AscendBackend(target=None)
    opts = backend.make_options({"arch": "dav-c220"})
    prog = backend.lower(example("softmax/softmax.py").softmax.get_tir(37, 100), opts)
    assert prog.arch == "dav-c220" and "core vec:" in prog.script()
    assert "// Generated by tilelang-ascend for dav-c220" in backend.codegen(prog, opts)
    with pytest.raises(ConfigError, match="unknown Ascend arch"):
        backend.make_options({"arch": "dav-9999"})


@pytest.mark.parametrize("trans_A, trans_B", [(False, False), (True, True)])
def test_emitted_load_data_parameters_reproduce_the_simulated_format_conversion(trans_A, trans_B):
    """Replay the LoadData2D parameters the codegen emits (documented semantics: ``repeat``
    fractals from ``startIndex`` stepping ``srcStride``, each transposed if ``ifTranspose``) on
    an L1 matrix in NZ; the result must equal what the simulator's LoadL1ToL0 writes."""
    import numpy as np

    from tilelang_ascend import isa
    from tilelang_ascend.codegen import load2d_params
    from tilelang_ascend.sim_memory import to_fractal

    prog = lower_program(example("gemm/gemm.py").gemm.get_tir(96, 48, 64, trans_A, trans_B,
                                                              block_M=48, block_N=32, block_K=64))
    loads = [i for i in isa.instructions(prog.cube) if isinstance(i, isa.LoadL1ToL0)]
    assert len(loads) == 2
    for s in loads:
        src = s.src.buf
        logical = np.random.rand(src.rows, src.cols).astype(np.float16)
        l1 = to_fractal(logical, "NZ", "L1", src.dtype).reshape(-1, 16, 16)
        p = load2d_params(s)
        out = []
        for i in range(p.dst_rows):
            for t in range(p.dst_cols):
                frac = l1[p.start + i * p.start_step + t * p.src_stride]
                out.append(frac.T if p.transpose else frac)
        block = logical[s.row0:s.row0 + s.rows, s.col0:s.col0 + s.cols]
        expected = to_fractal(block.T if s.transpose else block, s.dst.buf.fmt, s.dst.buf.mem,
                              src.dtype)
        np.testing.assert_array_equal(np.concatenate(out).reshape(-1), expected)


def _example_funcs():
    import torch

    quick = example("quickstart.py")
    a, b = torch.randn(70, 50, dtype=torch.float16), torch.randn(50, 40, dtype=torch.float16)
    return {
        "quickstart": quick.matmul_relu.program.specialize((a, b), {}).func,
        "gemm_splitk": example("gemm/gemm_splitk.py").gemm_splitk.get_tir(100, 70, 300, split_k=3),
        "softmax": example("softmax/softmax.py").softmax.get_tir(37, 100),
        "rms_norm": example("norm/rms_norm.py").rms_norm.get_tir(19, 72),
        "layer_norm": example("norm/layer_norm.py").layer_norm.get_tir(19, 72),
        "scale_add": example("elementwise/scale_add.py").scale_add.get_tir(33, 130, 0.75),
    }


@pytest.mark.parametrize("name", ["quickstart", "gemm_splitk", "softmax", "rms_norm", "layer_norm",
                                  "scale_add"])
def test_every_other_example_emits_structurally_sound_ascend_c(name):
    src = emit_ascend_c(lower_program(_example_funcs()[name]))
    assert src.count("{") == src.count("}") and "__global__ __aicore__ void" in src
    for macro in ("ASCEND_IS_AIC", "ASCEND_IS_AIV"):
        body = section(src, macro)
        assert pairs(body, "SetFlag") == pairs(body, "WaitFlag")
    assert Counter(re.findall(r"CrossCoreSetFlag<0x2, PIPE_\w+>\((\d+)\)", src)) == \
        Counter(re.findall(r"CrossCoreWaitFlag\((\d+)\)", src))


def test_compiling_without_cann_gives_the_source_and_the_first_call_says_what_to_install(monkeypatch, tmp_path):
    """Cross-compiling (issue 24): `compile --target ascend --emit source` failed for want of CANN."""
    import tilelang_core as tl
    from tilelang_core.errors import CacheError, NoToolchainError

    monkeypatch.delenv("ASCEND_HOME_PATH", raising=False)
    monkeypatch.delenv("ASCEND_TOOLKIT_HOME", raising=False)
    monkeypatch.setattr(compiler, "DEFAULT_PREFIX", tmp_path / "nowhere")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path / "cache"))
    kernel = tl.compile(example("gemm/gemm.py").gemm.get_tir(64, 64, 64), target="ascend")
    assert "kernel_operator.h" in kernel.get_kernel_source() and kernel.artifact_path is None
    with pytest.raises(NoToolchainError, match="kernel 'main' compiled for ascend.*CANN was not found"):
        kernel(None, None, None)
    with pytest.raises(CacheError, match="no binary to export"):
        kernel.export_library(tmp_path / "k.so")
    assert not list((tmp_path / "cache" / "v1" / "kernels").iterdir())  # nothing half-built is cached
