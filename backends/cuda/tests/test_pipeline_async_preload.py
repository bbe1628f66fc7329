"""A copy global -> shared before a T.Pipelined loop (FlashAttention's Q) is issued as cp.async and
joins the prologue's first commit group (the kit's software_pipeline, ``_async_preloads``): the
first iteration's wait + barrier cover it, so no load, store and barrier of its own stand before
the first K/V tiles are even issued. Numerics run in the interpreter where async copies land only
at the wait that covers them (so a Q left out of the waited group reads stale shared memory)."""

import re

import numpy as np
import pytest
import torch
import tvm
import tvm_ffi
from tvm import tirx

import tilelang_core.language as T
from lowered import lower
from test_pipeline_mid_body_copy import (AMPERE_ON_HOPPER, assert_only_the_wait_catches, cuda_source, fa_func,
                                         rel_err, run_fa)
from tilelang_cuda.interpreter import run_kernel


def before_loop(source: str) -> list[str]:
    """The kernel's lines from its opening brace to the pipelined loop, stripped."""
    start = source.index("{", source.index("__global__ void"))
    end = re.search(r"for \(int k = 0;", source).start()
    return [line.strip() for line in source[start:end].splitlines()]


@pytest.mark.parametrize("arch,options", [("sm_80", {}), ("sm_90a", AMPERE_ON_HOPPER)])
def test_q_is_issued_with_the_first_tiles_and_waited_for_with_them(arch, options):
    lines = before_loop(cuda_source((8, 16, 4096, 128, True, 128, 64, 2, 128), arch, **options))
    q = [i for i, line in enumerate(lines) if "Q_ptr" in line and line.startswith("tl_")]
    k = [i for i, line in enumerate(lines) if "K_ptr" in line and line.startswith("tl_cp_async_16")]
    commit = lines.index("tl_cp_async_commit();")
    assert len(q) == 16 and all(lines[i].startswith("tl_cp_async_16") for i in q)
    assert max(q) < min(k) and max(k) < commit
    assert "__syncthreads();" not in lines  # the loop's first wait + barrier order Q for its readers


def test_disable_async_preload_keeps_the_copy_synchronous():
    """Its stores land before the loop's first barrier, which orders them for the readers as it
    does K's first tile: no barrier of its own either way (insert_barriers orders a pipeline
    region against earlier statements by its prologue only)."""
    lines = before_loop(cuda_source((8, 16, 4096, 128, True, 128, 64, 2, 128), "sm_80",
                                    disable_async_preload=True))
    q = [i for i, line in enumerate(lines) if "Q_ptr" in line and line.startswith("tl_")]
    assert len(q) == 16 and all(lines[i].startswith("tl_copy_16") for i in q)
    assert max(q) < lines.index("tl_cp_async_commit();") and "__syncthreads();" not in lines


@pytest.mark.parametrize("stages", [2, 3])
@pytest.mark.parametrize("is_causal", [False, True])
@pytest.mark.parametrize("S", [32, 100])  # one key tile; four, the last ragged (and a ragged Q block)
def test_attention_matches_torch_with_q_preloaded_async(S, is_causal, stages):
    D = 32
    func = fa_func(S, D, is_causal, stages)
    assert _q_copies_async(func)
    out, ref = run_fa(func, S, D, is_causal, cp_async_lands_at_wait=True)
    assert rel_err(out, ref) < 2e-3


def _reads(stmt, name: str) -> bool:
    found = []
    tvm_ffi.structural_walk(stmt, [(tvm.ir.TensorLoad, lambda load: found.append(str(load.source.name) == name))])
    return any(found)


def _q_copies_async(func) -> bool:
    calls = []

    def on_call(call):
        if call.op.name == "tirx.call_extern" and _reads(call, "Q"):
            calls.append(str(call.args[0].value))

    tvm_ffi.structural_walk(func.body, [(tvm.ir.Call, on_call)])
    return bool(calls) and all(c == "tl_cp_async_16" for c in calls)


def _issue_q_after_the_first_commit(func):
    """The bug the placement prevents: Q's cp.async issued after the prologue's commit joins the
    first iteration's group, which that iteration's wait does not cover."""
    done = []

    def on_seq(node):
        stmts = list(node.seq)
        q = next((i for i, s in enumerate(stmts) if isinstance(s, tirx.For) and _reads(s, "Q")), None)
        prologue = next((i for i, s in enumerate(stmts) if isinstance(s, tirx.For) and s.loop_var.name == "p"), None)
        if q is None or prologue is None or done:
            return node
        stmts.insert(prologue, stmts.pop(q))  # now right after the prologue (and its commit)
        done.append(True)
        return tirx.SeqStmt(stmts)

    broken = func.with_body(tvm_ffi.structural_map(func.body, [(tirx.SeqStmt, on_seq)]))
    assert done
    return broken


def test_a_q_outside_the_waited_group_is_caught():
    S, D = 100, 32
    func = fa_func(S, D, False, 2)
    assert_only_the_wait_catches(func, _issue_q_after_the_first_commit(func), S, D)


def preloaded_gemm(read_between: bool):
    """C = [A if read_between] + sum over n of A @ B[n]^T: A's tile is filled before a pipelined
    loop over B's tiles; with ``read_between`` a T.Parallel reads it before the loop."""
    @T.prim_func
    def main(A: T.Tensor((64, 32), T.float16), B: T.Tensor((80, 32), T.float16), C: T.Tensor((64, 32), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((64, 32), "float16")
            B_s = T.alloc_shared((32, 32), "float16")
            acc = T.alloc_fragment((64, 32), "float32")
            T.copy(A[bx * 64:(bx + 1) * 64, 0:32], A_s)
            if read_between:
                for i, j in T.Parallel(64, 32):
                    acc[i, j] = A_s[i, j]
            else:
                T.clear(acc)
            for n in T.Pipelined(T.ceildiv(80, 32), num_stages=2):
                T.copy(B[n * 32:(n + 1) * 32, 0:32], B_s)
                T.gemm(A_s, B_s, acc, transpose_B=True)
            T.copy(acc, C)

    return main


@pytest.mark.parametrize("read_between", [False, True])
def test_a_read_of_the_tile_before_the_loop_keeps_the_copy_synchronous(read_between):
    func = lower(preloaded_gemm(read_between))
    calls = []

    def on_call(call):
        if call.op.name == "tirx.call_extern" and _reads(call, "A"):
            calls.append(str(call.args[0].value))

    tvm_ffi.structural_walk(func.body, [(tvm.ir.Call, on_call)])
    assert calls and all(c == ("tl_copy_16" if read_between else "tl_cp_async_16") for c in calls)
    gen = torch.Generator().manual_seed(1)
    a, b = torch.randn(64, 32, generator=gen).half(), torch.randn(80, 32, generator=gen).half()
    c = np.full((64, 32), np.nan, np.float32)
    run_kernel(func, {"A": a.numpy(), "B": b.numpy(), "C": c}, cp_async_lands_at_wait=True)
    ref = sum(a.double() @ b[n * 32:(n + 1) * 32].double().T for n in range(2))
    ref = ref + a.double() @ torch.cat([b[64:], b.new_zeros(16, 32)]).double().T
    if read_between:
        ref = ref + a.double()
    assert np.abs(c - ref.numpy()).max() < 1e-3 * ref.abs().max().item()
