"""A global -> shared copy in the middle of a T.Pipelined body (FlashAttention's V, after the
softmax) joins the cp.async producers (tilelang_core/simt/transform/software_pipeline.py): it is
issued s-1 iterations ahead in the same commit group as K, so the wait + barrier at the top of
the iteration covers it and no synchronous copy (or its second barrier) is left in the loop.
Numerics run in the interpreter where async copies land only at the wait that covers them."""

import importlib.util
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
import tvm
import tvm_ffi
from tvm import tirx

from lowered import lower
from tilelang_core.simt.interpreter_races import SharedMemoryRace
from tilelang_cuda.interpreter import run_kernel

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
AMPERE_ON_HOPPER = {"disable_wgmma": True, "disable_warp_specialized": True}


def example(relpath):
    spec = importlib.util.spec_from_file_location("cuda_mid_" + relpath.replace("/", "_")[:-3], EXAMPLES / relpath)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ATTENTION = example("attention/flash_attention.py")


def fa_func(S, D, is_causal, stages, block_M=64, block_N=32, threads=128, arch="sm_80", **options):
    func = ATTENTION.flash_attention.get_tir(1, 2, S, D, is_causal, block_M=block_M, block_N=block_N,
                                             num_stages=stages, threads=threads)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return lower(func, arch, **options)


def run_fa(func, S, D, is_causal, seed=0, **modes):
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(1, S, 2, D, generator=gen).half() for _ in range(3))
    o = np.full((1, S, 2, D), np.nan, np.float16)
    run_kernel(func, {"Q": q.numpy(), "K": k.numpy(), "V": v.numpy(), "O": o}, **modes)
    ref = ATTENTION.reference(q, k, v, is_causal).numpy()
    return o.astype(np.float64), ref


def rel_err(out, ref):
    return float(np.linalg.norm(out - ref) / np.linalg.norm(ref))


def cuda_source(func_tir_args, arch="sm_80", **options):
    from tilelang_cuda.options import CudaOptions
    from tilelang_cuda.pipeline import CudaBackend

    class Target:
        pass

    Target.arch = arch
    backend, opts = CudaBackend(Target()), CudaOptions(**options)
    func = ATTENTION.flash_attention.get_tir(*func_tir_args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return backend.codegen(backend.lower(func, opts), opts)


def loop_body(source: str) -> list[str]:
    """The lines of the pipelined main loop (``for (int k = 0; ...) { ... }``), stripped."""
    start = re.search(r"for \(int k = 0;", source).start()
    depth, at = 0, source.index("{", start)
    for end in range(at, len(source)):
        depth += {"{": 1, "}": -1}.get(source[end], 0)
        if depth == 0:
            break
    return [line.strip() for line in source[start:end].splitlines()[1:]]


@pytest.mark.parametrize("stages", [1, 2, 3])
@pytest.mark.parametrize("is_causal", [False, True])
@pytest.mark.parametrize("S", [32, 100])  # one iteration (one key tile); four, the last ragged
def test_attention_matches_torch_when_async_copies_land_only_at_their_wait(S, is_causal, stages):
    D = 32
    out, ref = run_fa(fa_func(S, D, is_causal, stages), S, D, is_causal, cp_async_lands_at_wait=True)
    assert rel_err(out, ref) < 2e-3


def test_attention_on_hopper_without_wgmma_matches_torch():
    S, D = 100, 64
    func = fa_func(S, D, True, 2, arch="sm_90a", **AMPERE_ON_HOPPER)
    out, ref = run_fa(func, S, D, True, cp_async_lands_at_wait=True)
    assert rel_err(out, ref) < 2e-3


@pytest.mark.parametrize("arch,options", [("sm_80", {}), ("sm_90a", AMPERE_ON_HOPPER)])
@pytest.mark.parametrize("is_causal", [False, True])
def test_v_is_produced_by_cp_async_ahead_of_its_use(arch, options, is_causal):
    """In the loop: K's and V's cp.async for iteration k + 1 before the one commit, both before
    any fragment load; V read (ldmatrix .trans) from slot k % 2 only after that wait + barrier;
    no synchronous copy of V and one barrier per iteration (it was two)."""
    body = loop_body(cuda_source((8, 16, 4096, 128, is_causal, 128, 128, 2, 256), arch, **options))
    assert body[0] == "tl_cp_async_wait<0>();" and body[1] == "__syncthreads();"
    assert sum(line == "__syncthreads();" for line in body) == 1
    assert not any(line.startswith("tl_copy_") for line in body)
    commit = body.index("tl_cp_async_commit();")
    k_copies = [i for i, line in enumerate(body) if line.startswith("tl_cp_async_16") and "K_ptr" in line]
    v_copies = [i for i, line in enumerate(body) if line.startswith("tl_cp_async_16") and "V_ptr" in line]
    assert len(k_copies) == len(v_copies) == 8  # 128 x 128 fp16 over 256 threads, 16 bytes each
    assert max(k_copies) < min(v_copies) < max(v_copies) < commit
    assert all("((k + 1) & 1)" in body[i] for i in v_copies)  # the next iteration's slot
    v_reads = [i for i, line in enumerate(body) if line.startswith("tl_ldmatrix_x4_trans")]
    assert v_reads and min(v_reads) > commit and all("(k & 1)" in body[i] for i in v_reads)


def test_shared_memory_limit_keeps_v_synchronous():
    """Where V's second slot would not fit (sm_80, D128, three stages: 224 KB), V stays a
    synchronous copy in the body and the kernel still lowers."""
    body = loop_body(cuda_source((1, 1, 512, 128, False, 128, 128, 3, 256), "sm_80"))
    assert any(line.startswith("tl_copy_16") and "V_ptr" in line for line in body)
    assert not any(line.startswith("tl_cp_async_16") and "V_ptr" in line for line in body)
    hopper = loop_body(cuda_source((1, 1, 512, 128, False, 128, 128, 3, 256), "sm_90a", **AMPERE_ON_HOPPER))
    assert any(line.startswith("tl_cp_async_16") and "V_ptr" in line for line in hopper)


def _split_v_out_of_the_waited_group(func):
    """The bug the commit accounting prevents: V's copies of the steady loop issued after the
    commit, so they join the next iteration's group, which the wait before V's use does not
    cover."""
    def is_commit(stmt):
        return isinstance(stmt, tirx.Evaluate) and isinstance(stmt.value, tvm.ir.Call) \
            and stmt.value.op.name == "tirx.call_extern" and str(stmt.value.args[0].value) == "tl_cp_async_commit"

    done = []

    def on_for(loop):
        if loop.annotations is None or "tl.pipelined" not in loop.annotations or done:
            return loop
        stmts = list(loop.body.seq)
        at = next(i for i, s in enumerate(stmts) if is_commit(s))
        produce = stmts[at - 1]
        copies = list(produce.then_case.seq)
        assert len(copies) == 2, "expected the lowered K copy, then V's"
        stmts[at - 1] = tirx.IfThenElse(produce.condition, copies[0], None)
        stmts.insert(at + 1, tirx.IfThenElse(produce.condition, copies[1], None))
        done.append(True)
        return tirx.For(loop.loop_var, loop.min, loop.extent, loop.kind, tirx.SeqStmt(stmts),
                        loop.thread_binding, loop.annotations)

    broken = func.with_body(tvm_ffi.structural_map(func.body, [(tirx.For, on_for)]))
    assert done
    return broken


def test_a_missing_wait_for_v_is_caught():
    """V of iteration k must be in a group the top-of-loop wait covers: issuing it outside that
    group gives wrong numbers when async copies land only at their wait (and right ones when
    they land at once, so the interpreter mode is what catches it)."""
    S, D = 100, 32
    func = fa_func(S, D, False, 2)
    assert_only_the_wait_catches(func, _split_v_out_of_the_waited_group(func), S, D)


def assert_only_the_wait_catches(func, broken, S, D):
    """``func`` is right either way; ``broken`` (a copy moved out of the group its first reader's
    wait covers) is right when async copies land at once and wrong when they land at their wait,
    where the race check also names it: the copy lands over bytes other warps have read."""
    for fn, lands_at_wait, ok in ((func, True, True), (broken, False, True), (broken, True, False)):
        out, ref = run_fa(fn, S, D, False, cp_async_lands_at_wait=lands_at_wait, check_races=False)
        assert (np.isfinite(out).all() and rel_err(out, ref) < 2e-3) == ok
    run_fa(func, S, D, False, cp_async_lands_at_wait=True)
    with pytest.raises(SharedMemoryRace, match="async-copy wait or a barrier is missing"):
        run_fa(broken, S, D, False, cp_async_lands_at_wait=True)
