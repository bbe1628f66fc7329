"""The pipelined mma.sync gemm loads the next stage's first fragments before its last k-step's
mma (tilelang_core/simt/transform/prefetch_fragments.py), so the per-stage barrier and the
ldmatrix latency hide behind tensor-core work: the order in the generated CUDA, and numerics in
an interpreter where async copies land only at the wait that covers them."""

import re

import numpy as np
import pytest
import tvm
import tvm_ffi
from tvm import tirx

import kernels
from lowered import lower
from tilelang_core.simt.interpreter_races import SharedMemoryRace
import tilelang_core.language as T
from tilelang_cuda.interpreter import run_kernel

RNG = np.random.default_rng(1)


def cuda_loop(func, arch="sm_80", **options):
    """The device source of ``func`` and the body of its pipelined main loop, one line each."""
    from tilelang_cuda.options import CudaOptions
    from tilelang_cuda.pipeline import CudaBackend

    class Target:
        pass

    Target.arch = arch
    backend = CudaBackend(Target())
    opts = CudaOptions(**options)
    source = backend.codegen(backend.lower(func, opts), opts)
    kernel = source[source.find('extern "C" __global__'):source.find("#include <tvm/ffi/c_api.h>")]
    start = kernel.index("for (int k = 0;")
    end = kernel.index("tl_cp_async_wait<0>", start)
    return kernel, [line.strip() for line in kernel[start:end].splitlines()[1:]]


def first(lines, pattern, start=0):
    return next(i for i in range(start, len(lines)) if re.search(pattern, lines[i]))


@pytest.mark.parametrize("bk,stages,steps", [(32, 3, 2), (64, 3, 4)])
@pytest.mark.parametrize("arch,options", [("sm_80", {}),
                                          ("sm_90a", {"disable_wgmma": True, "disable_warp_specialized": True})])
def test_next_stage_fragments_are_loaded_before_the_last_mma(bk, stages, steps, arch, options):
    func = kernels.make_gemm(1024, 1024, 1024, bm=128, bn=256, bk=bk, stages=stages, threads=256)
    kernel, body = cuda_loop(func, arch, **options)
    mma_per_step = 4 * 8  # 64x64 warp tiles: 4 x 8 m16n8k16 per k-step
    mmas = [i for i, line in enumerate(body) if line.startswith("tl_mma_")]
    assert len(mmas) == steps * mma_per_step
    # one wait + barrier per iteration, between the second-to-last and the last k-step's mma
    waits = [i for i, line in enumerate(body) if line.startswith(f"tl_cp_async_wait<{stages - 2}>")]
    barriers = [i for i, line in enumerate(body) if line == "__syncthreads();"]
    assert len(waits) == 1 and barriers == [waits[0] + 1]
    last_step = mmas[-mma_per_step:]
    assert mmas[-mma_per_step - 1] < waits[0] < last_step[0]
    # after the barrier: the next stage's first A and B fragments, then the last step's mma
    loads_after = [i for i in range(barriers[0], last_step[0]) if body[i].startswith("tl_ldmatrix")]
    assert len(loads_after) == 8 and all(f"((k + 1) % {stages})" in body[i] for i in loads_after)
    # each k-step's fragments are loaded before the previous step's mma
    for step in range(1, steps):
        loads = [i for i, line in enumerate(body)
                 if line.startswith("tl_ldmatrix") and f"A_frag_ptr[{step * 32}]" in line]
        assert loads and loads[0] < mmas[(step - 1) * mma_per_step]
    # the producer's copies come first in the iteration, before any fragment load of it
    assert first(body, "tl_cp_async_16") < first(body, "tl_ldmatrix")
    # and the first stage's step-0 fragments are loaded once before the loop, after its own wait
    before_loop = kernel[:kernel.index("for (int k = 0;")]
    assert before_loop.count("__syncthreads();") == 1 and before_loop.count("tl_ldmatrix") == 8


def test_attention_keeps_its_order():
    """Only a gemm that is the whole consumer side is rotated: attention's softmax sits between."""
    kernel, _ = cuda_loop(kernels.make_flash_attention(1, 2, 256, 64))
    lines = [line.strip() for line in kernel.splitlines()]
    top = first(lines, r"^for \(int k = 0; k < 4;")
    assert lines[top + 1] == "tl_cp_async_wait<0>();" and lines[top + 2] == "__syncthreads();"
    assert "tl_cp_async_wait<0>();" not in lines[:top]  # no wait + barrier hoisted before the loop


def run_gemm(M, N, K, modes, **kw):
    func = lower(kernels.make_gemm(M, N, K, **kw))
    a = RNG.standard_normal((M, K)).astype(np.float16)
    b = RNG.standard_normal((N, K) if kw.get("trans_b") else (K, N)).astype(np.float16)
    c = np.full((M, N), np.nan, np.float16)
    run_kernel(func, {"A": a, "B": b, "C": c}, **modes)
    ref = a.astype(np.float64) @ (b.astype(np.float64).T if kw.get("trans_b") else b.astype(np.float64))
    return c.astype(np.float64), ref


@pytest.mark.parametrize("shape,kw", [
    ((128, 128, 128), {"stages": 2}),
    ((128, 128, 160), {"stages": 3}),                       # 5 k-tiles
    ((200, 136, 96), {}),                                   # ragged in every dimension
    ((64, 64, 256), {"bm": 64, "bn": 64, "bk": 64, "stages": 4, "trans_b": True}),
])
def test_gemm_numerics_when_async_copies_land_only_at_their_wait(shape, kw):
    c, ref = run_gemm(*shape, {"cp_async_lands_at_wait": True}, **kw)
    np.testing.assert_allclose(c, ref, atol=0.05, rtol=1e-2)


def test_a_wait_that_does_not_cover_the_next_stage_is_caught():
    """The late-landing interpreter has teeth: waiting for one group too few leaves the next
    stage's fragments stale."""
    func = lower(kernels.make_gemm(128, 128, 160, stages=3))

    def loosen(stmt):
        call = stmt.value
        if isinstance(call, tvm.ir.Call) and call.op.name == "tirx.call_extern" \
                and str(call.args[0].value) == "tl_cp_async_wait<1>":
            return tirx.Evaluate(tirx.call_extern("void", "tl_cp_async_wait<2>"))
        return stmt

    broken = func.with_body(tvm_ffi.structural_map(func.body, [(tirx.Evaluate, loosen)]))
    M, N, K = 128, 128, 160
    a = RNG.standard_normal((M, K)).astype(np.float16)
    b = RNG.standard_normal((K, N)).astype(np.float16)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    for fn, lands_at_wait, ok in ((broken, False, True), (broken, True, False), (func, True, True)):
        c = np.full((M, N), np.nan, np.float16)
        run_kernel(fn, {"A": a, "B": b, "C": c}, cp_async_lands_at_wait=lands_at_wait, check_races=False)
        assert np.allclose(c.astype(np.float64), ref, atol=0.05, rtol=1e-2) == ok
    with pytest.raises(SharedMemoryRace):  # and the race check names it: the stage lands over read bytes
        run_kernel(broken, {"A": a, "B": b, "C": np.zeros((M, N), np.float16)}, cp_async_lands_at_wait=True)


def test_single_k_step_gemm_is_left_in_order():
    """block_K = 16 is one k-step: its registers cannot be double-buffered across stages."""
    _, body = cuda_loop(kernels.make_gemm(256, 256, 256, bk=16, stages=3))
    assert body[0].startswith("tl_cp_async_wait<1>") and body[1] == "__syncthreads();"
    c, ref = run_gemm(128, 128, 64, {"cp_async_lands_at_wait": True}, bk=16, stages=3)
    np.testing.assert_allclose(c, ref, atol=0.05, rtol=1e-2)


def test_float32_gemm_rounds_each_steps_own_registers():
    """tf32: the per-step rounding must touch the step's own fragment registers."""
    M = N = K = 64
    func = lower(kernels.make_gemm(M, N, K, bm=64, bn=64, bk=32, dtype=T.float32, out_dtype=T.float32,
                                   trans_b=True))
    a = RNG.standard_normal((M, K)).astype(np.float32)
    b = RNG.standard_normal((N, K)).astype(np.float32)
    c = np.zeros((M, N), np.float32)
    run_kernel(func, {"A": a, "B": b, "C": c}, cp_async_lands_at_wait=True)
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    np.testing.assert_allclose(c, ref, atol=2e-2, rtol=5e-3)
