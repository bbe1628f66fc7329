"""target="ascend" through the JIT driver: the plugin registers the backend; `ascend+sim` runs
every example end to end (lowering, checker, Ascend C, artifact, disk cache, JITKernel on CPU
tensors, simulator); plain `ascend` without CANN fails with what to install; the NPU runtime finds
its kernel the way the driver asks for it."""

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

import tilelang_core as tl
from tilelang_core import doctor
from tilelang_core.errors import CompileError, LaunchError, LoweringError
from tilelang_core.jit.compiler import clear_memory_cache
from tilelang_core.plugin.manager import get_plugin_manager
from tilelang_core.runtime import entry_function
from tilelang_core.target import Target

import ascend_kernels as K
from ascend_harness import example, lower_program, rel_err, simulate
from tilelang_ascend import compiler
from tilelang_ascend.codegen import emit_ascend_c
from tilelang_ascend.interpreter import SimulatedKernel
from tilelang_ascend.pipeline import AscendBackend
from tilelang_ascend.sim_artifact import dump_program, load_program


@pytest.fixture
def no_cann(monkeypatch, tmp_path):
    for var in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(compiler, "DEFAULT_PREFIX", tmp_path / "nowhere")
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)


@pytest.fixture
def fresh_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TILELANG_DISABLE_CACHE", raising=False)
    clear_memory_cache()
    yield tmp_path / "cache"
    clear_memory_cache()


def test_the_plugin_registers_the_ascend_backend_and_doctor_says_it_compiles():
    assert get_plugin_manager().backend_class("asc") is AscendBackend
    text = doctor.render(doctor.collect(toolchains=False))
    kinds = text.split("Target kinds:")[1]
    line = next(ln for ln in kinds.splitlines() if ln.strip().startswith("ascend "))
    assert "[compiles]" in line
    assert "sim" in get_plugin_manager().target_spec("ascend").features


# (example, check() arguments, tolerance): sizes that do not divide the tiles
EXAMPLES = [
    ("gemm/gemm.py", dict(M=130, N=72, K=100, trans_A=True), 1e-3),
    ("gemm/gemm.py", dict(M=67, N=33, K=45, trans_B=True, dtype=torch.bfloat16, block_M=32,
                          block_N=16, block_K=16), 8e-3),
    ("gemm/gemm_splitk.py", dict(M=100, N=70, K=300, split_k=3), 1e-5),
    ("softmax/softmax.py", dict(M=37, N=100, dtype=torch.bfloat16), 8e-3),
    ("norm/rms_norm.py", dict(M=19, N=72), 1e-3),
    ("norm/layer_norm.py", dict(M=19, N=72, dtype=torch.float32), 1e-6),
    ("attention/flash_attention.py", dict(batch=1, heads=2, seq_len=100, dim=32, is_causal=True,
                                          block_M=32, block_N=32), 2e-3),
    ("attention/flash_attention.py", dict(batch=2, heads=1, seq_len=77, dim=16, is_causal=False,
                                          block_M=16, block_N=32), 2e-3),
    ("elementwise/scale_add.py", dict(M=33, N=130, alpha=0.75, dtype=torch.float16), 1e-3),
]


@pytest.mark.parametrize("relpath, args, tol", EXAMPLES,
                         ids=[f"{p.split('/')[-1][:-3]}-{i}" for i, (p, _, _) in enumerate(EXAMPLES)])
def test_every_example_runs_through_jitkernel_on_the_simulator(relpath, args, tol):
    with Target("ascend+sim"):
        err = example(relpath).check(**args, device="cpu")
    assert err < tol


def test_eager_quickstart_runs_on_the_simulator_and_keeps_every_stage():
    quickstart = example("quickstart.py")
    a, b = torch.randn(70, 50, dtype=torch.float16), torch.randn(50, 40, dtype=torch.float16)
    with Target("ascend+sim"):
        c = quickstart.matmul_relu(a, b)
        kernel = quickstart.matmul_relu.compile(a, b)
    assert rel_err(c, quickstart.reference(a, b)) < 1e-3
    assert str(kernel.target) == "ascend:dav-3510+sim"
    assert "Mmad(" in kernel.asm["lowered"] and "KERNEL_TYPE_MIX_AIC_1_1" in kernel.asm["source"]


def test_an_example_script_runs_unmodified_on_the_simulator_target():
    script = Path(__file__).resolve().parents[3] / "examples" / "norm" / "rms_norm.py"
    out = subprocess.run([sys.executable, str(script), "--m", "9", "--n", "40", "--target",
                          "ascend+sim"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "on ascend:dav-3510+sim" in out.stdout and "OK" in out.stdout


def test_the_arch_of_the_target_reaches_the_simulated_program():
    rms = example("norm/rms_norm.py")
    kernel = tl.compile(rms.rms_norm.get_tir(19, 72), out_idx=[-1], target="ascend:dav-c220+sim")
    assert isinstance(kernel.function, SimulatedKernel)
    assert kernel.function.program.arch == "dav-c220" and kernel.device_type == "cpu"
    assert "Mmad(" not in kernel.asm["lowered"] and "ASCEND_IS_AIV" in kernel.get_kernel_source()
    x, w = torch.randn(19, 72, dtype=torch.float16), torch.rand(72, dtype=torch.float16) + 0.5
    assert rel_err(kernel(x, w), rms.reference(x, w)) < 1e-3


def test_a_simulated_kernel_takes_numpy_arrays_like_a_cpu_kernel():
    scale_add = example("elementwise/scale_add.py")
    kernel = tl.compile(scale_add.scale_add.get_tir(33, 130, 0.75), out_idx=[-1],
                        target="ascend+sim")
    a, b = np.random.randn(33, 130).astype("float32"), np.random.randn(33, 130).astype("float32")
    c = kernel(a, b)
    assert isinstance(c, np.ndarray) and np.allclose(c, 0.75 * a + b, atol=1e-6)


def test_the_disk_cache_serves_a_simulated_kernel_rebuilt_from_its_bytes(fresh_cache):
    gemm = example("gemm/gemm.py")
    func = gemm.gemm.get_tir(67, 33, 45)
    first = tl.compile(func, out_idx=[-1], target="ascend+sim")
    clear_memory_cache()  # what a new process sees: only the bytes on disk
    second = tl.compile(func, out_idx=[-1], target="ascend+sim")
    assert not first.from_cache and second.from_cache
    assert second.function is not first.function
    assert second.function.program.script() == first.function.program.script()
    a, b = torch.randn(67, 45, dtype=torch.float16), torch.randn(45, 33, dtype=torch.float16)
    assert rel_err(second(a, b), gemm.reference(a, b, False, False)) < 1e-3


def test_the_artifact_keeps_the_program_exactly():
    fa = example("attention/flash_attention.py")
    prog = lower_program(fa.flash_attention.get_tir(1, 2, 100, 32, True, block_M=32, block_N=32))
    back = load_program(dump_program(prog))
    assert back.script() == prog.script() and emit_ascend_c(back) == emit_ascend_c(prog)
    # running it needs every use of a loop or block variable to be that variable again
    q, k, v = (torch.randn(1, 100, 2, 32, dtype=torch.float16) for _ in range(3))
    o = simulate(None, q, k, v, out_idx=[3], program=back)
    assert rel_err(o, fa.reference(q, k, v, True)) < 2e-3
    with pytest.raises(CompileError, match="cannot read the Ascend simulator artifact"):
        load_program(dump_program(prog)[:-40])


def test_without_cann_target_ascend_says_what_to_install(no_cann):
    rms = example("norm/rms_norm.py")
    kernel = tl.compile(rms.rms_norm.get_tir(20, 72), out_idx=[-1], target="ascend")  # the source, no binary
    assert kernel.get_kernel_source() and kernel.artifact_path is None
    with pytest.raises(CompileError) as info:  # NoToolchainError, at the first call
        kernel(None)
    text = str(info.value)
    assert "kernel 'main'" in text and "CANN Toolkit" in text and "set_env.sh" in text
    assert "torch_npu" in text and 'target="ascend+sim"' in text


def test_with_cann_found_bisheng_runs_and_its_failure_carries_the_log(monkeypatch, tmp_path):
    home = tmp_path / "cann"
    bisheng = home / "compiler" / "ccec_compiler" / "bin" / "bisheng"
    bisheng.parent.mkdir(parents=True)
    bisheng.write_text("#!/bin/sh\necho \"bisheng was called with $*\" >&2\nexit 3\n")
    bisheng.chmod(0o755)
    monkeypatch.setenv("ASCEND_HOME_PATH", str(home))
    softmax = example("softmax/softmax.py")
    with pytest.raises(CompileError) as info:
        tl.compile(softmax.softmax.get_tir(37, 100), out_idx=[-1], target="ascend:dav-c220")
    assert "bisheng failed to compile kernel 'main' for dav-c220" in str(info.value)
    assert "--cce-aicore-arch=dav-c220" in info.value.log


_HOST_LIB = """
#include <stdint.h>
void main_launch(void *stream, void *x, void *y, void *ws) {}
uint32_t main_num_blocks(void) { return 10; }
uint32_t main_workspace_bytes(void) { return 256; }
"""


def test_the_npu_runtime_gives_the_driver_its_entry_function(tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang-19")
    if cc is None:
        pytest.skip("no host C compiler to build a stand-in kernel library")
    src, lib = tmp_path / "k.c", tmp_path / "k.so"
    src.write_text(textwrap.dedent(_HOST_LIB))
    subprocess.run([cc, "-shared", "-fPIC", str(src), "-o", str(lib)], check=True)
    module = AscendBackend(Target("ascend")).load(lib)
    launch = entry_function(module, "main", kernel="main")
    assert launch.workspace_bytes == 256
    with pytest.raises(AttributeError, match="no Ascend kernel 'nope'"):
        module.get_function("nope")
    with pytest.raises(LaunchError, match="torch_npu|must be an npu tensor"):
        launch(torch.zeros(4), torch.zeros(4))


@pytest.mark.parametrize("dynamic_grid", [True, False])
def test_dynamic_size_is_a_compile_error_naming_the_kernel_the_dimension_and_the_fix(dynamic_grid):
    with pytest.raises(LoweringError, match=r"kernel 'scale'.*dim 0 of 'X' \[M, 64\] is the dynamic "
                                            r"size M.*compile it once per size"):
        tl.compile(K.dynamic_rows(dynamic_grid=dynamic_grid), out_idx=[-1], target="ascend+sim")
