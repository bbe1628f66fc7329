"""FlashAttention forward (BSHD layout), causal or not, with an online softmax in float32.

    O[b, i, h, :] = softmax_j(Q[b, i, h, :] . K[b, j, h, :] * scale  [j <= i if causal]) @ V[b, :, h, :]

Sequence lengths that do not divide the tiles are handled: keys past `seq_len` are masked to
-inf, rows past `seq_len` are never stored.

    python examples/attention/flash_attention.py [--batch 2 --heads 4 --seq-len 200 --dim 64] [--is-causal] [--target auto]
"""

import math

import torch

import tilelang_core as tilelang
import tilelang_core.language as T
from tilelang_core.testing.examples import example_main


@tilelang.jit(out_idx=[3])
def flash_attention(batch, heads, seq_len, dim, is_causal=False, block_M=64, block_N=64, num_stages=2,
                    threads=128, dtype="float16"):
    scale = (1.0 / dim) ** 0.5 * 1.44269504  # log2(e): exp(x) = exp2(x * log2(e))
    shape = (batch, seq_len, heads, dim)
    accum = "float32"

    @T.prim_func
    def main(Q: T.Tensor(shape, dtype), K: T.Tensor(shape, dtype), V: T.Tensor(shape, dtype),
             O: T.Tensor(shape, dtype)):
        with T.Kernel(T.ceildiv(seq_len, block_M), heads, batch, threads=threads) as (bx, by, bz):
            Q_shared = T.alloc_shared((block_M, dim), dtype)
            K_shared = T.alloc_shared((block_N, dim), dtype)
            V_shared = T.alloc_shared((block_N, dim), dtype)
            acc_s = T.alloc_fragment((block_M, block_N), accum)
            acc_s_cast = T.alloc_fragment((block_M, block_N), dtype)
            acc_o = T.alloc_fragment((block_M, dim), accum)
            scores_max = T.alloc_fragment((block_M,), accum)
            scores_max_prev = T.alloc_fragment((block_M,), accum)
            scores_scale = T.alloc_fragment((block_M,), accum)
            scores_sum = T.alloc_fragment((block_M,), accum)
            logsum = T.alloc_fragment((block_M,), accum)

            T.copy(Q[bz, bx * block_M:(bx + 1) * block_M, by, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum))

            if is_causal:
                loop_range = T.min(T.ceildiv(seq_len, block_N), T.ceildiv((bx + 1) * block_M, block_N))
            else:
                loop_range = T.ceildiv(seq_len, block_N)

            for k in T.Pipelined(loop_range, num_stages=num_stages):
                T.copy(K[bz, k * block_N:(k + 1) * block_N, by, :], K_shared)
                if is_causal:
                    for i, j in T.Parallel(block_M, block_N):
                        acc_s[i, j] = T.if_then_else(
                            (bx * block_M + i >= k * block_N + j) & (k * block_N + j < seq_len),
                            0, -T.infinity(accum))
                else:
                    for i, j in T.Parallel(block_M, block_N):
                        acc_s[i, j] = T.if_then_else(k * block_N + j < seq_len, 0, -T.infinity(accum))
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)

                T.copy(scores_max, scores_max_prev)
                T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                for i in T.Parallel(block_M):
                    scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                for i, j in T.Parallel(block_M, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                T.reduce_sum(acc_s, scores_sum, dim=1)
                for i in T.Parallel(block_M):
                    logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                T.copy(acc_s, acc_s_cast)
                for i, j in T.Parallel(block_M, dim):
                    acc_o[i, j] *= scores_scale[i]
                T.copy(V[bz, k * block_N:(k + 1) * block_N, by, :], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)

            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, O[bz, bx * block_M:(bx + 1) * block_M, by, :])

    return main


def reference(q, k, v, is_causal):
    q, k, v = (t.double().transpose(1, 2) for t in (q, k, v))  # BHSD
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if is_causal:
        n = scores.shape[-1]
        scores = scores.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
    return (torch.softmax(scores, dim=-1) @ v).transpose(1, 2)


def check(batch, heads, seq_len, dim, is_causal=False, device="cpu", **tiles) -> float:
    q, k, v = (torch.randn(batch, seq_len, heads, dim, dtype=torch.float16, device=device) for _ in range(3))
    o = flash_attention(batch, heads, seq_len, dim, is_causal, **tiles)(q, k, v)
    ref = reference(q.cpu(), k.cpu(), v.cpu(), is_causal)
    return ((o.cpu().double() - ref).norm() / ref.norm()).item()


if __name__ == "__main__":
    example_main(check, sizes={"batch": 2, "heads": 4, "seq_len": 200, "dim": 64}, flags=("is_causal",),
                 tolerance=2e-3, label="flash attention")
