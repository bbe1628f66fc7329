"""Programmatic dependent launch, TileLang's ``T.pdl_trigger()`` / ``T.pdl_sync()``
(language/launch_dependency.py): scheduling only, so a program of two kernels computes the same
values with them as without, on cpu and every SIMT interpreter. On CUDA they compile to
griddepcontrol (sm_90 and up; nothing below), the waiting kernel loses ``__restrict__`` (its reads
must be coherent with the kernel still writing) and its launcher asks for programmatic stream
serialization; the kernel that only triggers keeps both. The H200 run is in
backends/cuda/tests/gpu/test_gpu_language_rules.py."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tilelang_core.language as T
from tilelang_core.errors import FrontendError
from tilelang_core.testing.oracle import PATHS, run

from fidelity_kernels import producer_consumer


def expected(a, work=4):
    pre = a.astype(np.float64)
    for _ in range(work):
        pre = pre * 0.5 + 1.0
    return a.astype(np.float64) + 1.0, (a.astype(np.float64) + 1.0) * 2.0, pre


def check(path, N, block, seed):
    a = np.random.default_rng(seed).standard_normal(N).astype(np.float32)
    b, c, pre = (np.full(N, np.nan, np.float32) for _ in range(3))
    run(path, producer_consumer(N, block), A=a, B=b, C=c, Pre=pre)
    for got, want in zip((b, c, pre), expected(a)):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("path", [p for p in PATHS if p.split(":")[0] in ("cpu", "cuda")])
@pytest.mark.parametrize("N,block", [(300, 128), (1, 32), (64, 64)])
def test_two_kernels_with_trigger_and_wait_compute_what_they_compute_without(path, N, block):
    check(path, N, block, seed=N)


def one_kernel(N, block):
    """A single kernel that waits first and triggers last (the middle kernel of a chain); the
    backends that build one T.Kernel per program run it."""
    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32)):
        with T.Kernel(T.ceildiv(N, block), threads=block) as (bx,):
            T.pdl_sync()
            for i in T.Parallel(block):
                if bx * block + i < N:
                    B[bx * block + i] = A[bx * block + i] * 3.0
            T.pdl_trigger()

    return main


@pytest.mark.parametrize("path", PATHS)
def test_one_kernel_that_waits_and_triggers_runs_everywhere(path):
    a = np.random.default_rng(1).standard_normal(200).astype(np.float32)
    b = np.full(200, np.nan, np.float32)
    run(path, one_kernel(200, 64), A=a, B=b)
    np.testing.assert_allclose(b, a.astype(np.float64) * 3.0, rtol=1e-6)


@settings(max_examples=15, deadline=None)
@given(N=st.integers(1, 700), block=st.sampled_from([32, 64, 128, 256]), seed=st.integers(0, 2**16))
def test_generated_sizes_on_cpu(N, block, seed):
    check("cpu", N, block, seed)


@pytest.mark.parametrize("name", ["pdl_trigger", "pdl_sync"])
def test_outside_a_kernel_is_refused_by_name(name):
    with pytest.raises(FrontendError, match=rf"T\.{name}"):
        @T.prim_func
        def main(A: T.Tensor((4,), T.float32)):
            getattr(T, name)()
            with T.Kernel(1, threads=4):
                A[T.get_thread_binding()] = 0.0


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_cuda_waiter_is_coherent_and_launched_for_overlap(arch, tmp_path):
    """Device code compiled by nvcc, the host launcher built (a library) for both archs."""
    pytest.importorskip("tilelang_cuda")
    from test_printer_limits import _cuda_source  # (skips without nvcc)
    from tilelang_cuda.codegen import split_source
    from tilelang_cuda.options import CudaOptions
    from tilelang_cuda.pipeline import CudaBackend

    _cuda_source(producer_consumer(8), arch, tmp_path / "device")
    backend, options = CudaBackend(type("Target", (), {"arch": arch})()), CudaOptions(device_compiler="nvcc")
    mod = backend.lower(producer_consumer(1000), options)
    source = backend.codegen(mod, options)
    backend.build(mod, source, options, tmp_path)
    parts = split_source(source)
    pieces = parts.device.split('extern "C" __global__')  # helpers, declarations, definitions
    helpers, first, second = pieces[0], pieces[-2], pieces[-1]
    assert "#if __CUDA_ARCH__ >= 900\n  cudaGridDependencySynchronize();\n#endif" in helpers
    assert "#if __CUDA_ARCH__ >= 900\n  cudaTriggerProgrammaticLaunchCompletion();\n#endif" in helpers
    assert "__restrict__" in first and "tl_pdl_trigger();" in first and "tl_pdl_sync" not in first
    assert "__restrict__" not in second and "tl_pdl_sync();" in second
    launch_0 = parts.host[parts.host.index("tl_launch_0("):parts.host.index("tl_launch_1(")]
    launch_1 = parts.host[parts.host.index("tl_launch_1("):]
    assert "ProgrammaticStreamSerialization" not in launch_0
    assert "ex_attrs[config->numAttrs + 0].id = cudaLaunchAttributeProgrammaticStreamSerialization;" in launch_1
