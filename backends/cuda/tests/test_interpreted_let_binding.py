"""Bound names (``x = expr`` in loop bodies) and T.Parallel atomics on the cuda backend: TileLang's
split-K example (eager style) and a causal mask with bound ``q_idx``/``k_idx``, run by the SIMT
interpreter for sm_80 and for sm_90a's mma.sync path, and compiled to cubins by nvcc.

The interpreter cannot run sm_90a's default schedule (wgmma from shared memory, TMA loads by a
producer warpgroup waiting on mbarriers), so there the lowering is checked structurally: the
split-K epilogue's atomics cover the tile once, register by register as the PTX ISA lays out a
wgmma accumulator (written out below apart from hopper/wgmma.py), and a statement the consumers
defer to the next iteration reads the binding of its own iteration."""

import re
import warnings

import numpy as np
import pytest
import torch
import tvm_ffi
from tvm import tirx

import tilelang_core as tilelang
import tilelang_core.language as T
from lowered import lower
from tilelang_cuda.interpreter import run_kernel

# sm_90a with wgmma and the TMA producer off: mma.sync and cp.async, which the interpreter runs
SM90_MMA = dict(disable_wgmma=True, disable_warp_specialized=True)


@tilelang.jit
def splitk_matmul(A, B, C, block_M, block_N, block_K, split_k, bound=False, stages=0):
    """TileLang's examples/gemm_splitk/example_tilelang_gemm_splitk.py, ported by changing the
    imports; ``bound``: its K offset bound in the pipelined body instead."""
    M, N, K = T.const("M, N, K")
    splitK = K // split_k

    A: T.Tensor((M, K), T.float16)
    B: T.Tensor((K, N), T.float16)
    C: T.Tensor((M, N), T.float32)

    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), split_k, threads=128) as (bx, by, bz):
        A_shared = T.alloc_shared((block_M, block_K), T.float16)
        B_shared = T.alloc_shared((block_K, block_N), T.float16)
        C_local = T.alloc_fragment((block_M, block_N), T.float32)
        T.clear(C_local)
        for ko in T.Pipelined(T.ceildiv(splitK, block_K), num_stages=stages):
            if bound:
                kk = bz * splitK + ko * block_K
                T.copy(A[by * block_M, kk], A_shared)
                T.copy(B[kk, bx * block_N], B_shared)
            else:
                T.copy(A[by * block_M, bz * splitK + ko * block_K], A_shared)
                T.copy(B[bz * splitK + ko * block_K, bx * block_N], B_shared)
            T.gemm(A_shared, B_shared, C_local)
        for i, j in T.Parallel(block_M, block_N):
            T.atomic_add(C[by * block_M + i, bx * block_N + j], C_local[i, j])


def splitk_func(M, N, K, split_k=2, bound=False, stages=0, tiles=(64, 64, 32)):
    a, b = torch.empty(M, K, dtype=torch.float16), torch.empty(K, N, dtype=torch.float16)
    c = torch.empty(M, N, dtype=torch.float32)
    program = splitk_matmul.program
    args, kwargs = program.tensors_from_consts((a, b, c, *tiles, split_k), {"bound": bound, "stages": stages})
    return program.specialize(args, kwargs).func


def counter_splitk(M, N, K, split_k, bM=64, bN=64, bK=32, stages=2):
    """The K tile comes from a counter the loop increments: a binding read from memory the
    kernel writes, which neither a pipeline stage ahead nor a producer warpgroup may evaluate."""
    k_tiles = (K + bK * split_k - 1) // (bK * split_k)

    @T.prim_func
    def counted(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), split_k, threads=128) as (bx, by, bz):
            A_s = T.alloc_shared((bM, bK), "float16")
            B_s = T.alloc_shared((bK, bN), "float16")
            C_l = T.alloc_fragment((bM, bN), "float32")
            t = T.alloc_var("int32", bz * k_tiles)
            T.clear(C_l)
            for ko in T.Pipelined(k_tiles, num_stages=stages):
                kk = t
                T.copy(A[by * bM, kk * bK], A_s)
                T.copy(B[kk * bK, bx * bN], B_s)
                T.gemm(A_s, B_s, C_l)
                t = t + 1
            T.atomic_add(C[by * bM, bx * bN], C_l)

    return counted


def causal_attention(seq, dim, block_M=64, block_N=64, stages=2, deferred_binding=False):
    """TileLang's flash attention forward (example_mha_fwd_bhsd.py, causal) for one head, with
    ``q_idx``/``k_idx`` bound in the mask; ``deferred_binding``: ``kv0`` bound after the K copy
    and read by the rescale of O, which the sm_90a consumers run one iteration late."""
    scale = (1.0 / dim) ** 0.5 * 1.44269504

    @T.prim_func
    def attention(Q: T.Tensor((seq, dim), "float16"), K: T.Tensor((seq, dim), "float16"),
                  V: T.Tensor((seq, dim), "float16"), O: T.Tensor((seq, dim), "float16")):
        with T.Kernel(T.ceildiv(seq, block_M), threads=128) as bx:
            Q_s = T.alloc_shared((block_M, dim), "float16")
            K_s = T.alloc_shared((block_N, dim), "float16")
            V_s = T.alloc_shared((block_N, dim), "float16")
            acc_s = T.alloc_fragment((block_M, block_N), "float32")
            acc_s_cast = T.alloc_fragment((block_M, block_N), "float16")
            acc_o = T.alloc_fragment((block_M, dim), "float32")
            m = T.alloc_fragment((block_M,), "float32")
            m_prev = T.alloc_fragment((block_M,), "float32")
            rescale = T.alloc_fragment((block_M,), "float32")
            row_sum = T.alloc_fragment((block_M,), "float32")
            logsum = T.alloc_fragment((block_M,), "float32")
            T.copy(Q[bx * block_M, 0], Q_s)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(m, -T.infinity("float32"))
            for k in T.Pipelined(T.min(T.ceildiv(seq, block_N), T.ceildiv((bx + 1) * block_M, block_N)),
                                 num_stages=stages):
                T.copy(K[k * block_N, 0], K_s)
                kv0 = k * block_N
                for i, j in T.Parallel(block_M, block_N):
                    q_idx = bx * block_M + i
                    k_idx = kv0 + j
                    acc_s[i, j] = T.if_then_else(q_idx >= k_idx, 0, -T.infinity("float32"))
                T.gemm(Q_s, K_s, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(m, m_prev)
                T.fill(m, -T.infinity("float32"))
                T.reduce_max(acc_s, m, dim=1, clear=False)
                for i in T.Parallel(block_M):
                    m[i] = T.max(m[i], m_prev[i])
                for i in T.Parallel(block_M):
                    rescale[i] = T.exp2(m_prev[i] * scale - m[i] * scale)
                for i, j in T.Parallel(block_M, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - m[i] * scale)
                T.reduce_sum(acc_s, row_sum, dim=1)
                for i in T.Parallel(block_M):
                    logsum[i] = logsum[i] * rescale[i] + row_sum[i]
                T.copy(acc_s, acc_s_cast)
                for i, j in T.Parallel(block_M, dim):
                    if deferred_binding:
                        acc_o[i, j] *= T.if_then_else(kv0 >= 0, rescale[i], 0.0)
                    else:
                        acc_o[i, j] *= rescale[i]
                T.copy(V[k * block_N, 0], V_s)
                T.gemm(acc_s_cast, V_s, acc_o, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, O[bx * block_M, 0])

    return attention


def attention_reference(q, k, v):
    scores = (q.double() @ k.double().T) / q.shape[-1] ** 0.5
    n = q.shape[0]
    scores = scores.masked_fill(torch.ones(n, n).tril() == 0, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v.double()


def rel_err(out, ref) -> float:
    out = torch.from_numpy(np.asarray(out)).double()
    return float((out - ref).norm() / ref.norm())


def interpret(func, arch, options, **arrays):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lowered = lower(func, arch, **options)
    run_kernel(lowered, arrays)
    return lowered


ARCHS = [("sm_80", {}), ("sm_90a", SM90_MMA)]


@pytest.mark.parametrize("arch,options", ARCHS, ids=["sm_80", "sm_90a_mma"])
@pytest.mark.parametrize("M,N,K,split_k,bound,stages", [
    (64, 64, 128, 2, False, 0),     # the example as written (num_stages=0)
    (64, 64, 128, 2, True, 2),      # the K offset bound in the body, pipelined
    (70, 40, 192, 3, True, 3),      # ragged M and N
])
def test_tilelang_split_k_example(arch, options, M, N, K, split_k, bound, stages):
    a, b = torch.randn(M, K).half(), torch.randn(K, N).half()
    c = np.zeros((M, N), np.float32)
    interpret(splitk_func(M, N, K, split_k, bound, stages), arch, options, A=a.numpy(), B=b.numpy(), C=c)
    assert rel_err(c, a.double() @ b.double()) < 1e-6  # was ~1.0: one thread of each block added


@pytest.mark.parametrize("arch,options", ARCHS, ids=["sm_80", "sm_90a_mma"])
def test_a_binding_read_from_written_memory_is_evaluated_in_place(arch, options):
    """The pipeline once issued the copies of tiles k+1.. with the counter's value at tile k."""
    a, b = torch.randn(64, 256).half(), torch.randn(256, 64).half()
    c = np.zeros((64, 64), np.float32)
    interpret(counter_splitk(64, 64, 256, 2), arch, options, A=a.numpy(), B=b.numpy(), C=c)
    assert rel_err(c, a.double() @ b.double()) < 1e-6


def test_a_binding_read_from_written_memory_keeps_the_producer_warpgroup_out():
    """The TMA producer is another thread: it cannot read the consumers' counter."""
    notes = str(lower(counter_splitk(64, 64, 256, 2), "sm_90a").attrs["tl.schedule_notes"])
    assert "no TMA producer warpgroup" in notes and "read from memory the kernel writes" in notes


@pytest.mark.parametrize("arch,options", ARCHS, ids=["sm_80", "sm_90a_mma"])
@pytest.mark.parametrize("deferred", [False, True])
def test_causal_attention_with_bound_indices(arch, options, deferred):
    seq, dim = 128, 64
    q, k, v = (torch.randn(seq, dim).half() for _ in range(3))
    o = np.full((seq, dim), np.nan, np.float16)
    interpret(causal_attention(seq, dim, deferred_binding=deferred), arch, options,
              Q=q.numpy(), K=k.numpy(), V=v.numpy(), O=o)
    assert rel_err(o, attention_reference(q, k, v)) < 2e-3


# -- sm_90a's default schedule, structurally -----------------------------------------------------

def _evaluate(expr, env):
    """An index expression over numpy arrays (variables by name in ``env``)."""
    if isinstance(expr, tirx.IntImm):
        return np.int64(expr.value)
    if isinstance(expr, tirx.Var):
        return env[str(expr.name)]
    ops = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "FloorDiv": np.floor_divide,
           "FloorMod": np.mod}
    kind = type(expr).__name__
    if kind not in ops:
        raise AssertionError(f"unexpected {kind} in an index: {expr}")
    return ops[kind](_evaluate(expr.a, env), _evaluate(expr.b, env))


def _wgmma_d_fragment(tx, reg):
    """(row, col) of accumulator register ``reg`` of thread ``tx`` of a warpgroup for
    wgmma.m64nNk16 with f32 accumulators (PTX ISA, "Register fragment for matrix D"): warp w holds
    rows 16w..16w+15; per 8 columns each thread holds 2 values of row lane/4 and 2 of row
    lane/4 + 8."""
    warp, lane = tx // 32, tx % 32
    row = 16 * warp + lane // 4 + 8 * ((reg % 4) // 2)
    col = 8 * (reg // 4) + 2 * (lane % 4) + reg % 2
    return row, col


@pytest.mark.parametrize("bound", [False, True])
@pytest.mark.parametrize("vector", [False, True])
def test_sm90a_split_k_atomics_follow_the_wgmma_accumulator(bound, vector):
    """Each accumulator register's atomic lands on its (row, col) of wgmma's D fragment; with
    vector atomics (the default) a pair of registers (2 lo, 2 lo + 1: adjacent columns) goes out
    as one AtomicAddx2 addressed at the first."""
    lowered = lower(splitk_func(128, 128, 128, 2, bound, stages=2 if bound else 0), "sm_90a",
                    disable_vector_atomics=not vector)
    assert "tl_wgmma" in lowered.script()
    helper, loop_var, lanes = ("AtomicAddx2", "lo", 2) if vector else ("tl_atomic_add", "l", 1)
    atomics = []

    def on_eval(ev):
        call = ev.value
        if getattr(call, "op", None) is not None and getattr(call.op, "name", "") == "tirx.call_extern" \
                and str(call.args[0].value) == helper:
            atomics.append(call)

    def on_for(loop):
        if str(loop.loop_var.name) == loop_var:
            loops.append(loop)

    loops = []
    tvm_ffi.structural_walk(lowered.body, [(tirx.Evaluate, on_eval), (tirx.For, on_for)])
    assert len(atomics) == 1, f"one {helper} per accumulator register run, in one unrolled loop"
    address, values = atomics[0].args[1], atomics[0].args[2:2 + lanes]
    row_expr, col_expr = address.args[0].indices
    assert all(str(v.source.name) == "C_local" for v in values)
    extent = next(int(f.extent) for f in loops if any(c.same_as(atomics[0]) for c in _calls_in(f)))
    tx, run = np.meshgrid(np.arange(128), np.arange(extent), indexing="ij")
    env = {"tx": tx, loop_var: run, "bx": 0, "by": 0, "bz": 0}
    rows, cols = _evaluate(row_expr, env), _evaluate(col_expr, env)
    for k, value in enumerate(values):
        assert np.array_equal(_evaluate(value.indices[0], env), run * lanes + k)
    want_rows, want_cols = _wgmma_d_fragment(tx, run * lanes)
    np.testing.assert_array_equal(rows, want_rows)
    np.testing.assert_array_equal(cols, want_cols)
    if vector:  # the pair's second register is the next column of the same row
        np.testing.assert_array_equal(_wgmma_d_fragment(tx, run * 2 + 1), (want_rows, want_cols + 1))
    assert len(set(zip(rows.ravel(), cols.ravel()))) * lanes == 64 * 64 == rows.size * lanes  # each element once
    # ... by every consumer thread: no condition on the thread around it (it was `if tx < 1`)
    def on_if(node):
        if any(c.same_as(atomics[0]) for c in _calls_in(node.then_case)):
            guards.append(node.condition)

    guards = []
    tvm_ffi.structural_walk(lowered.body, [(tirx.IfThenElse, on_if)])
    assert not [g for g in guards if "tx" in g.script()], [g.script() for g in guards]


def _calls_in(stmt):
    found = []
    tvm_ffi.structural_walk(stmt, [(tirx.Evaluate, lambda ev: found.append(ev.value))])
    return found


def test_sm90a_deferred_statement_reads_its_own_iterations_binding():
    """The consumers run O's rescale of iteration k-1 after the mask of iteration k; ``kv0`` is
    bound between them (after the K copy), so the deferred rescale must see (k - 1) * 64."""
    lowered = lower(causal_attention(256, 64, deferred_binding=True), "sm_90a")
    notes = str(lowered.attrs["tl.schedule_notes"])
    assert "overlaps the last gemm of j-1" in notes
    steady = []
    tvm_ffi.structural_walk(lowered.body, [(tirx.For, lambda f: steady.append(f) if str(f.loop_var.name) == "k"
                                            and isinstance(f.min, tirx.IntImm) and int(f.min) == 1 else None)])
    (loop,) = steady
    text = loop.body.script()
    # the rescale's guard: `kv0 >= 0` of the previous iteration, inlined
    assert re.search(r"\(k - 1\) \* 64 >= 0", text), text
    assert not re.search(r"kv0(_\d+)? >= 0", text), text


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("make", [lambda: causal_attention(256, 64), lambda: splitk_func(200, 136, 256, 2, True, 2)],
                         ids=["causal_attention", "split_k"])
def test_bound_names_compile_to_cubins(tmp_path, arch, make):
    from tilelang_cuda import codegen, compiler
    from tilelang_cuda.options import CudaOptions
    from tilelang_cuda.pipeline import CudaBackend

    class Target:
        pass

    Target.arch = arch
    backend, options = CudaBackend(Target()), CudaOptions()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        source = backend.codegen(backend.lower(make(), options), options)
    cubin, _, _ = compiler.compile_device(codegen.split_source(source).device, arch, tmp_path, options)
    assert cubin.stat().st_size > 0
