"""``T.device_assert(cond, msg)`` (TileLang's check in kernel code): a kernel whose checks hold
runs as without them; one that fails stops with the message (cpu: the call fails; the SIMT
interpreters raise; CUDA and HIP print and trap, compiled here by nvcc and clang); Metal refuses
it by name; a condition known at compile time is checked then."""

import shutil

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core.errors import FrontendError, LaunchError, LoweringError
from tilelang_core.testing.oracle import PATHS, run


def doubled():
    @T.prim_func
    def kernel(A: T.Tensor((64,), T.int32), B: T.Tensor((64,), T.int32)):
        with T.Kernel(2, threads=32) as bx:
            tx = T.get_thread_binding()
            for i in range(0, 10, 2):
                T.device_assert(0 <= i < 10 and i % 2 == 0, "i out of range")
            T.device_assert(A[bx * 32 + tx] >= 0, "negative input")
            B[bx * 32 + tx] = A[bx * 32 + tx] * 2

    return kernel


@pytest.mark.parametrize("path", PATHS)
def test_checks_that_hold_change_nothing_and_one_that_fails_stops_the_kernel(path):
    a = np.arange(64, dtype=np.int32)
    b = np.zeros(64, np.int32)
    if path.startswith("metal"):
        with pytest.raises(LoweringError, match="T.device_assert.*Metal has no trap"):
            run(path, doubled(), A=a, B=b)
        return
    run(path, doubled(), A=a, B=b)
    np.testing.assert_array_equal(b, 2 * a)
    a[37] = -1
    with pytest.raises((LaunchError, RuntimeError), match="T.device_assert failed.*negative input"):
        run(path, doubled(), A=a, B=b)


def test_a_condition_known_at_compile_time_is_checked_then():
    with pytest.raises(FrontendError, match="always false: too big"):
        @T.prim_func
        def kernel(A: T.Tensor((64,), T.int32)):
            with T.Kernel(1, threads=64):
                T.device_assert(64 > 128, "too big")
                A[T.get_thread_binding()] = 0


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_cuda_source_traps_and_compiles(arch, tmp_path):
    from test_printer_limits import _cuda_source

    kernel = _cuda_source(doubled(), arch, tmp_path)
    assert 'tl_device_assert(' in kernel and '"negative input"' in kernel


@pytest.mark.skipif(shutil.which("clang-19") is None, reason="clang-19 missing: bash tools/dev.sh setup installs it")
def test_hip_code_object_builds(tmp_path):
    import warnings

    pytest.importorskip("tilelang_hip")
    from tilelang_hip import codegen, compiler
    from tilelang_hip.options import HipOptions
    from tilelang_hip.pipeline import HipBackend

    backend, options = HipBackend(type("Target", (), {"arch": "gfx942"})()), HipOptions()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        source = backend.codegen(backend.lower(doubled(), options), options)
    assert "__builtin_trap" in source
    compiler.compile_device(codegen.split(source).device, "gfx942", tmp_path, options)
