"""FlashAttention backward (BSHD layout, causal or not): dQ, dK, dV from Q, K, V, O, dO and the
forward's log-sum-exp, recomputing the probabilities tile by tile (FlashAttention-2's scheme):

    delta[b, h, i] = sum_d O[b, i, h, d] * dO[b, i, h, d]                      (flash_bwd_delta)
    per key block (flash_bwd), over the query blocks that see it:
        P^T = exp(scale * K Q^T - lse)      dV += P^T dO
        dS^T = P^T * (V dO^T - delta)       dK += scale * dS^T Q      dQ += scale * dS K  (atomic, fp32,
                                                                              through shared memory)

Sequence lengths that do not divide the tiles are masked; causal blocks start at the diagonal.
Grouped-query attention (``groups`` query heads per K/V head, K and V with heads // groups heads):
each block of a K/V head walks the query blocks of every head of its group in one pipelined loop,
so dK and dV sum over the group in registers, with no atomics.
The default ``stats="shared"`` copies each query block's lse and delta (a run of float32 per
row) into shared memory with Q and dO: on sm_90a the TMA producer warpgroup loads them too (1-D
boxes, hopper/tma.py), and the consumers read them from shared memory where they are used.
``stats="global"`` reads them into registers instead (each thread its columns' values) before the
first gemm of the iteration; that kept the loop on the TMA producer while float32 tiles did not,
and is now slower (H100, B8 S4096, 64x128 tiles: D128 409 -> 438 TFLOP/s shared, causal 335 ->
410, causal GQA 8 253 -> 359, bench/NOTES.md stop 61). Either way the gemms whose results are read
later run under the work in between (hopper/consumer_schedule.py, lazy waits). The kernel asks for
``tl.enable_tma_reduce``: dQ's tile then goes from shared memory to global by TMA reduce-adds
issued by one thread (H200, B8 H16 S4096 with the loads before the gemm: D128 386 -> 419 TFLOP/s,
D64 278 -> 280, bench/NOTES.md stop 58).
``attention_backward(q, k, v, o, do, lse)`` runs both kernels; lse is the natural-log
log-sum-exp of the scaled scores per (batch, head, row), as torch's flash backward takes it.

    python examples/attention/flash_attention_bwd.py [--batch 2 --heads 3 --seq-len 100 --dim 32] [--is-causal]
"""

import torch

import tilelang_core as tilelang
import tilelang_core.language as T
from tilelang_core.testing.examples import example_main

LOG2E = 1.4426950408889634  # log2(e): exp(x) = exp2(x * LOG2E)


@tilelang.jit(out_idx=[-1])
def flash_bwd_delta(batch, heads, seq_len, dim, block=64, dtype="float16"):
    shape = (batch, seq_len, heads, dim)

    @T.prim_func
    def main(O: T.Tensor(shape, dtype), dO: T.Tensor(shape, dtype),
             Delta: T.Tensor((batch, heads, seq_len), "float32")):
        with T.Kernel(T.ceildiv(seq_len, block), heads, batch, threads=128) as (bx, by, bz):
            o = T.alloc_fragment((block, dim), dtype)
            do = T.alloc_fragment((block, dim), dtype)
            prod = T.alloc_fragment((block, dim), "float32")
            delta = T.alloc_fragment((block,), "float32")
            T.copy(O[bz, bx * block:(bx + 1) * block, by, :], o)
            T.copy(dO[bz, bx * block:(bx + 1) * block, by, :], do)
            for i, j in T.Parallel(block, dim):
                prod[i, j] = T.cast(o[i, j], "float32") * T.cast(do[i, j], "float32")
            T.reduce_sum(prod, delta, dim=1)
            T.copy(delta, Delta[bz, by, bx * block:(bx + 1) * block])

    return main


@tilelang.jit(out_idx=[-2, -1], pass_configs={"tl.enable_tma_reduce": True})
def flash_bwd(batch, heads, seq_len, dim, is_causal=False, block_M=64, block_N=64, num_stages=1, threads=128,
              dtype="float16", stats="shared", groups=1):
    assert stats in ("shared", "global"), f"stats={stats!r}: 'shared' or 'global'"
    assert groups >= 1 and heads % groups == 0, f"heads={heads} is not a multiple of groups={groups}"
    staged = stats == "shared"
    scale = (1.0 / dim) ** 0.5
    shape = (batch, seq_len, heads, dim)
    kv_shape = (batch, seq_len, heads // groups, dim)
    accum = "float32"

    @T.prim_func
    def main(Q: T.Tensor(shape, dtype), K: T.Tensor(kv_shape, dtype), V: T.Tensor(kv_shape, dtype),
             dO: T.Tensor(shape, dtype), LSE: T.Tensor((batch, heads, seq_len), accum),
             Delta: T.Tensor((batch, heads, seq_len), accum), dQ: T.Tensor(shape, accum),
             dK: T.Tensor(kv_shape, dtype), dV: T.Tensor(kv_shape, dtype)):
        with T.Kernel(T.ceildiv(seq_len, block_N), heads // groups, batch, threads=threads) as (bx, by, bz):
            K_s = T.alloc_shared((block_N, dim), dtype)
            V_s = T.alloc_shared((block_N, dim), dtype)
            Q_s = T.alloc_shared((block_M, dim), dtype)
            dO_s = T.alloc_shared((block_M, dim), dtype)
            lse_s = T.alloc_shared((block_M,), accum)
            delta_s = T.alloc_shared((block_M,), accum)
            # P^T and dS^T go through shared memory: each feeds two gemms that want it in different
            # register layouts (and an operand from registers must have the gemm's own)
            pT_s = T.alloc_shared((block_N, block_M), dtype)
            dsT_s = T.alloc_shared((block_N, block_M), dtype)
            dq_s = T.alloc_shared((block_M, dim), accum)
            pT = T.alloc_fragment((block_N, block_M), accum)
            dpT = T.alloc_fragment((block_N, block_M), accum)
            pT_cast = T.alloc_fragment((block_N, block_M), dtype)
            dsT_cast = T.alloc_fragment((block_N, block_M), dtype)
            dq = T.alloc_fragment((block_M, dim), accum)
            dk = T.alloc_fragment((block_N, dim), accum)
            dv = T.alloc_fragment((block_N, dim), accum)
            lse_r = T.alloc_fragment((block_M,), accum)  # stats="global": this iteration's columns
            delta_r = T.alloc_fragment((block_M,), accum)

            T.copy(K[bz, bx * block_N:(bx + 1) * block_N, by, :], K_s)
            T.copy(V[bz, bx * block_N:(bx + 1) * block_N, by, :], V_s)
            T.clear(dk)
            T.clear(dv)
            # causal: query blocks before the one holding this key block's first row see none of it
            first = (bx * block_N) // block_M if is_causal else 0
            blocks = T.ceildiv(seq_len, block_M) - first  # query blocks per head
            for q in T.Pipelined(blocks * groups, num_stages=num_stages):
                # the group's heads one after the other (one head: h is the K/V head's own)
                h = by * groups + q // blocks if groups > 1 else by
                qb = first + (q % blocks if groups > 1 else q)
                T.copy(Q[bz, qb * block_M:(qb + 1) * block_M, h, :], Q_s)
                T.copy(dO[bz, qb * block_M:(qb + 1) * block_M, h, :], dO_s)
                if staged:
                    T.copy(LSE[bz, h, qb * block_M:(qb + 1) * block_M], lse_s)
                    T.copy(Delta[bz, h, qb * block_M:(qb + 1) * block_M], delta_s)
                else:  # loads issued before the gemm run under it (causal H200: +19%)
                    for j in T.Parallel(block_M):
                        lse_r[j] = LSE[bz, h, T.min(qb * block_M + j, seq_len - 1)] * LOG2E
                    for j in T.Parallel(block_M):
                        delta_r[j] = Delta[bz, h, T.min(qb * block_M + j, seq_len - 1)]
                T.gemm(K_s, Q_s, pT, transpose_B=True, clear_accum=True)
                for i, j in T.Parallel(block_N, block_M):
                    key, query = bx * block_N + i, qb * block_M + j
                    visible = (key < seq_len) & (query < seq_len)
                    if is_causal:
                        visible = visible & (key <= query)
                    # exp(x) as exp2(x * log2(e)): one FFMA and MUFU.EX2, where expf's range
                    # reduction costs more (H100, B8 H16 S4096: +4-9%, bench/NOTES.md stop 57)
                    pT[i, j] = T.if_then_else(visible, T.exp2(pT[i, j] * (scale * LOG2E) - (
                        lse_s[j] * LOG2E if staged else lse_r[j])), 0.0)
                T.gemm(V_s, dO_s, dpT, transpose_B=True, clear_accum=True)
                T.copy(pT, pT_cast)
                T.copy(pT_cast, pT_s)
                T.gemm(pT_s, dO_s, dv)
                for i, j in T.Parallel(block_N, block_M):
                    dsT_cast[i, j] = pT[i, j] * (dpT[i, j] - (
                        delta_s[j] if staged else delta_r[j])) * scale
                T.copy(dsT_cast, dsT_s)
                T.gemm(dsT_s, Q_s, dk)
                T.gemm(dsT_s, K_s, dq, transpose_A=True, clear_accum=True)
                # dQ through shared memory: the tile atomic adds 4 floats per instruction (sm_90's
                # vector reductions) along whole rows, instead of 2 per thread at scattered rows
                T.copy(dq, dq_s)
                T.atomic_add(dQ[bz, qb * block_M:(qb + 1) * block_M, h, :], dq_s)
            T.copy(dk, dK[bz, bx * block_N:(bx + 1) * block_N, by, :])
            T.copy(dv, dV[bz, bx * block_N:(bx + 1) * block_N, by, :])

    return main


def attention_backward(q, k, v, o, do, lse, is_causal=False, **tiles):
    """(dq, dk, dv) for BSHD tensors (k and v may have fewer heads: grouped-query attention); dq is
    float32 (accumulated atomically), dk and dv q's dtype."""
    B, S, H, D = q.shape
    assert H % k.shape[2] == 0, f"{H} query heads do not split into groups of the {k.shape[2]} K/V heads"
    name = str(q.dtype).split(".")[-1]
    delta = flash_bwd_delta(B, H, S, D, dtype=name)(o, do)
    dq = torch.zeros(B, S, H, D, dtype=torch.float32, device=q.device)
    dk, dv = flash_bwd(B, H, S, D, is_causal, dtype=name, groups=H // k.shape[2], **tiles)(q, k, v, do, lse, delta, dq)
    return dq, dk, dv


def reference(q, k, v, do, is_causal):
    """(o, lse, dq, dk, dv) by torch autograd in float64 (BSHD; K/V heads shared by groups of
    query heads when k has fewer)."""
    qd, kd, vd = (x.detach().double().cpu().requires_grad_() for x in (q, k, v))
    groups = q.shape[2] // k.shape[2]
    ke, ve = (x.repeat_interleave(groups, dim=2) for x in (kd, vd))
    scale = q.shape[-1] ** -0.5
    s = torch.einsum("bihd,bjhd->bhij", qd, ke) * scale
    if is_causal:
        S = q.shape[1]
        s = s.masked_fill(torch.ones(S, S, dtype=torch.bool).triu(1), float("-inf"))
    lse = torch.logsumexp(s, -1)
    o = torch.einsum("bhij,bjhd->bihd", torch.softmax(s, -1), ve)
    o.backward(do.double().cpu())
    return o.detach().contiguous(), lse.detach(), qd.grad, kd.grad, vd.grad


def check(batch, heads, seq_len, dim, is_causal=False, dtype=torch.float16, device="cpu", groups=1, **tiles) -> float:
    """The largest relative error of dQ, dK, dV against torch autograd in float64 (relative to a
    norm of at least 1: with one key, dQ and dK are exactly zero); ``groups`` query heads per K/V head."""
    q, do = (torch.randn(batch, seq_len, heads, dim, dtype=dtype, device=device) for _ in range(2))
    k, v = (torch.randn(batch, seq_len, heads // groups, dim, dtype=dtype, device=device) for _ in range(2))
    o, lse, dq_ref, dk_ref, dv_ref = reference(q, k, v, do, is_causal)
    dq, dk, dv = attention_backward(q, k, v, o.to(dtype).to(device), do, lse.float().to(device), is_causal, **tiles)
    return max(((got.cpu().double() - ref).norm() / max(ref.norm(), 1.0)).item()
               for got, ref in ((dq, dq_ref), (dk, dk_ref), (dv, dv_ref)))


if __name__ == "__main__":
    example_main(check, sizes={"batch": 2, "heads": 3, "seq_len": 100, "dim": 32, "groups": 1}, flags=("is_causal",),
                 tolerance=1e-2, label="flash_attention_bwd")
