"""TileLang's hand-written warp-specialized GEMMs (its examples/warp_specialize, as ws_kernels.py
writes them) lowered for sm_80 and run by the SIMT interpreter against numpy in float64, with
async copies landing as late as the contract allows (a tile read before its phase completed
reads NaN); compiled by nvcc for sm_90a and sm_80 with the instructions checked in the SASS.

The interpreter runs a block in program order (interpreter_mbarrier.py): a kernel whose
consumer region is written before its producer's, or whose barriers count more arrivals than
come, raises there instead of hanging; the H200 runs both orders
(gpu/test_gpu_warp_specialize.py)."""

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import tvm_ffi
from hypothesis import given, settings, strategies as st
from tvm import tirx

from lowered import lower
from tilelang_cuda.interpreter import run_kernel
from ws_kernels import ws_gemm, ws_gemm_stages, ws_register_a_gemm, ws_scale_rows, ws_split_gemm

NVCC = shutil.which("nvcc") is not None or Path("/usr/local/cuda/bin/nvcc").exists()
needs_nvcc = pytest.mark.skipif(not NVCC, reason="nvcc (CUDA toolkit) is not installed")


def gemm(func, M, N, K, seed, out=np.float16):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.full((M, N), np.nan, out)
    run_kernel(lower(func), {"A": a, "B": b, "C": c}, cp_async_lands_at_wait=True)
    return c, a.astype(np.float64) @ b.astype(np.float64)


@settings(max_examples=8, deadline=None)
@given(M=st.integers(1, 140), N=st.sampled_from([8, 64, 72, 136]), K=st.sampled_from([8, 32, 40, 96]),
       producer=st.sampled_from([0, 1]))
def test_ws_gemm(M, N, K, producer):
    """copy_0_gemm_1 / copy_1_gemm_0, shapes that do not divide the 64x64x32 tiles (K in whole
    4-byte units: T.tma_copy's rows are aligned)."""
    c, ref = gemm(ws_gemm(M, N, K, producer=producer), M, N, K, M * N + K)
    np.testing.assert_allclose(c, ref, rtol=2e-3, atol=2e-2 * np.sqrt(K / 32))


def test_ws_gemm_with_register_hints():
    c, ref = gemm(ws_gemm(64, 64, 64, nreg=True), 64, 64, 64, 1)
    np.testing.assert_allclose(c, ref, rtol=2e-3, atol=2e-2)


@pytest.mark.parametrize("M,N,K,stages", [(100, 64, 160, 2), (64, 72, 96, 3), (1, 8, 8, 2)])
def test_ws_gemm_stages(M, N, K, stages):
    """barrierpipe_stage2: stage ``ko % stages`` of the buffers and barriers, parity ``ko // stages``."""
    c, ref = gemm(ws_gemm_stages(M, N, K, stages=stages), M, N, K, 2, out=np.float32)
    np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("M,N,K", [(64, 130, 64), (65, 128, 40)])
def test_ws_split_gemm(M, N, K):
    """copy_gemm_0_1: no mbarriers; each warpgroup's load and gemm are ordered by a barrier among
    its own 128 threads (the interpreter checks that exactly those threads reach it)."""
    c, ref = gemm(ws_split_gemm(M, N, K), M, N, K, 3, out=np.float32)
    np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-3)


def strip_tracking(func):
    def on_eval(ev):
        call = ev.value
        if isinstance(call, tirx.Call) and call.op.name == "tirx.call_extern" \
                and str(call.args[0].value) == "tl_mbarrier_track":
            return tirx.Evaluate(tirx.const(0, "int32"))
        return ev

    return func.with_body(tvm_ffi.structural_map(func.body, [(tirx.Evaluate, on_eval)]))


@pytest.mark.parametrize("M,N", [(70, 24), (32, 8)])
def test_one_arrival_publishes_the_whole_copy(M, N):
    """Only the producer's first thread arrives (count 1): the copy's bytes hold the phase, as
    TMA's do. Without the tracking the tiles never land: the test sees it."""
    x = np.random.default_rng(M).standard_normal((M, N)).astype(np.float32)
    y = np.full_like(x, np.nan)
    func = lower(ws_scale_rows(M, N))
    run_kernel(func, {"X": x, "Y": y}, cp_async_lands_at_wait=True)
    np.testing.assert_array_equal(y, 2 * x)
    y[:] = np.nan
    run_kernel(strip_tracking(func), {"X": x, "Y": y}, cp_async_lands_at_wait=True)
    assert np.isnan(y).all()


def gemm_args():
    return {"A": np.zeros((64, 64), np.float16), "B": np.zeros((64, 64), np.float16),
            "C": np.zeros((64, 64), np.float16)}


def rows_args():
    return {"X": np.zeros((64, 8), np.float32), "Y": np.zeros((64, 8), np.float32)}


@pytest.mark.parametrize("kernel,args,message", [
    (lambda: ws_gemm(64, 64, 64, arrivals=256), gemm_args, r"\(128 of 256 arrivals\)"),
    (lambda: ws_scale_rows(64, 8, arrivals=128), rows_args, r"\(1 of 128 arrivals\)"),
    (lambda: ws_gemm(64, 64, 64, consumer_first=True), gemm_args, r"\(0 of 128 arrivals\)"),
])
def test_a_wait_that_cannot_complete_in_program_order_raises(kernel, args, message):
    with pytest.raises(RuntimeError, match="would block forever.*" + message):
        run_kernel(lower(kernel()), args())


CUOBJDUMP = [str(p) for p in Path(__file__).resolve().parents[3].glob(
    ".venv/lib/python3.*/site-packages/nvidia/cu13/bin/cuobjdump")] or [shutil.which("cuobjdump") or "cuobjdump"]


def sass(func, arch, tmp_path) -> str:
    from tilelang_cuda import codegen, compiler
    from tilelang_cuda.options import CudaOptions
    from tilelang_cuda.pipeline import CudaBackend

    class Target:
        pass

    Target.arch = arch
    backend, options = CudaBackend(Target()), CudaOptions(device_compiler="nvcc")
    source = backend.codegen(backend.lower(func, options), options)
    cubin, _, _ = compiler.compile_device(codegen.split_source(source).device, arch, tmp_path, options)
    if shutil.which(CUOBJDUMP[0]) is None and not Path(CUOBJDUMP[0]).exists():
        pytest.skip("cuobjdump is not installed")
    return subprocess.run([CUOBJDUMP[0], "-sass", str(cubin)], capture_output=True, text=True, check=True).stdout


@needs_nvcc
@pytest.mark.parametrize("arch,mma", [("sm_90a", "HGMMA"), ("sm_80", "HMMA")])
def test_ws_gemm_compiles_to_the_matrix_instructions_and_mbarriers(arch, mma, tmp_path):
    code = sass(ws_gemm(1000, 520, 320, bM=128, bN=128, bK=64, nreg=True), arch, tmp_path)
    assert len(re.findall(mma, code)) >= 8
    assert "LDGSTS" in code  # the copies are cp.async, tracked on the barrier
    if arch == "sm_90a":
        assert "SYNCS.ARRIVE" in code and "USETMAXREG" in code
    else:
        assert "USETMAXREG" not in code


def test_register_a_gemm_in_a_warpgroup_is_planned_for_the_group():
    """The sm_90a planner gives a wgmma gemm's shared operands the swizzled layout wgmma reads; it
    must plan with the threads the gemm's rule has (the group's 128), not the block's 256, for
    which this gemm does not fit wgmma: B_s kept the default layout while the rule issued wgmma
    on it (found in TileLang's minference example)."""
    from tilelang_cuda.options import CudaOptions
    from tilelang_cuda.pipeline import CudaBackend

    class Target:
        arch = "sm_90a"

    backend, options = CudaBackend(Target()), CudaOptions()
    source = backend.codegen(backend.lower(ws_register_a_gemm(), options), options)
    assert "gemm(a, B_s -> c): wgmma m64n64k16, 1x1 warpgroups" in source
    assert "tl_wgmma_rs_f16_n64" in source
    c, ref = None, None
    rng = np.random.default_rng(5)
    a = rng.standard_normal((64, 64)).astype(np.float16)
    b = rng.standard_normal((64, 64)).astype(np.float16)
    c = np.full((64, 64), np.nan, np.float32)
    run_kernel(lower(ws_register_a_gemm()), {"A": a, "B": b, "C": c}, cp_async_lands_at_wait=True)
    np.testing.assert_allclose(c, np.maximum(a, 0).astype(np.float64) @ b.astype(np.float64), rtol=1e-3, atol=1e-2)
