"""MLA decode (DeepSeek's multi-head latent attention, one new token per sequence) over a paged
KV cache, split along the cache (flash-decoding) so that small batches still fill the GPU.

Every head attends to one latent KV head: the cache holds, per token, a ``dim``-wide latent row
(both key and value) and a ``pe_dim``-wide rotary key row::

    score[b, h, t] = (q[b, h] . kv[t] + q_pe[b, h] . k_pe[t]) * scale        t < seqlens[b]
    out[b, h]      = softmax_t(score[b, h, :]) @ kv[:, :dim]

Token ``t`` of sequence ``b`` lives in page ``block_table[b, t // page_size]``, row
``t % page_size``. ``mla_decode_split`` gives each of ``num_split`` blocks per (batch, head group)
one run of ``block_N``-token tiles and writes its partial output and log-sum-exp (base 2);
``mla_decode_combine`` merges the splits. A split past a sequence's end contributes nothing
(log-sum-exp -inf). Sequences may have any length >= 1. ``num_stages=2`` double-buffers the KV
tiles where shared memory allows it (sm_90a at D 512: 224 KB; sm_80 takes one stage).

    python examples/attention/mla_decode.py [--batch 3 --heads 32 --dim 64 --pe-dim 16 --max-len 300 --num-split 3]
"""

import torch

import tilelang_core as tilelang
import tilelang_core.language as T
from tilelang_core.testing.examples import example_main

LOG2E = 1.44269504


@tilelang.jit(out_idx=[-2, -1])
def mla_decode_split(batch, heads, dim, pe_dim, num_pages, page_size, max_pages, num_split, block_H=64,
                     block_N=64, num_stages=1, threads=256, dtype="float16"):
    assert heads % block_H == 0, f"heads ({heads}) must be a multiple of block_H ({block_H})"
    assert page_size % block_N == 0, f"page_size ({page_size}) must be a multiple of block_N ({block_N})"
    scale = (dim + pe_dim) ** -0.5 * LOG2E  # exp(x) = exp2(x * log2(e))
    accum = "float32"
    tiles_per_page = page_size // block_N

    @T.prim_func
    def main(Q: T.Tensor((batch, heads, dim), dtype), Q_pe: T.Tensor((batch, heads, pe_dim), dtype),
             KV: T.Tensor((num_pages, page_size, dim), dtype), K_pe: T.Tensor((num_pages, page_size, pe_dim), dtype),
             block_table: T.Tensor((batch, max_pages), T.int32), seqlens: T.Tensor((batch,), T.int32),
             O_partial: T.Tensor((batch, heads, num_split, dim), accum),
             LSE_partial: T.Tensor((batch, heads, num_split), accum)):
        with T.Kernel(heads // block_H, batch, num_split, threads=threads) as (hg, b, split):
            q_s = T.alloc_shared((block_H, dim), dtype)
            q_pe_s = T.alloc_shared((block_H, pe_dim), dtype)
            kv_s = T.alloc_shared((block_N, dim), dtype)
            k_pe_s = T.alloc_shared((block_N, pe_dim), dtype)
            p_s = T.alloc_shared((block_H, block_N), dtype)
            acc_s = T.alloc_fragment((block_H, block_N), accum)
            acc_o = T.alloc_fragment((block_H, dim), accum)
            row_max = T.alloc_fragment((block_H,), accum)
            row_max_prev = T.alloc_fragment((block_H,), accum)
            rescale = T.alloc_fragment((block_H,), accum)
            row_sum = T.alloc_fragment((block_H,), accum)
            logsum = T.alloc_fragment((block_H,), accum)

            T.copy(Q[b, hg * block_H:(hg + 1) * block_H, :], q_s)
            T.copy(Q_pe[b, hg * block_H:(hg + 1) * block_H, :], q_pe_s)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(row_max, -T.infinity(accum))

            # this split's tiles: an equal share of the sequence's tiles, in order
            seqlen = seqlens[b]
            tiles = T.ceildiv(seqlen, block_N)
            per_split = T.ceildiv(tiles, num_split)
            first = split * per_split
            count = T.max(T.min(per_split, tiles - first), 0)
            for k in T.Pipelined(count, num_stages=num_stages):
                tile = first + k
                page = block_table[b, tile // tiles_per_page]
                row = (tile % tiles_per_page) * block_N
                T.copy(KV[page, row:row + block_N, :], kv_s)
                T.copy(K_pe[page, row:row + block_N, :], k_pe_s)
                T.gemm(q_s, kv_s, acc_s, transpose_B=True, clear_accum=True, policy=T.GemmWarpPolicy.FullCol)
                T.gemm(q_pe_s, k_pe_s, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullCol)
                for i, j in T.Parallel(block_H, block_N):  # the last tile's rows past the sequence
                    acc_s[i, j] = T.if_then_else(tile * block_N + j < seqlen, acc_s[i, j], -T.infinity(accum))
                T.copy(row_max, row_max_prev)
                T.reduce_max(acc_s, row_max, dim=1, clear=False)
                for i in T.Parallel(block_H):
                    rescale[i] = T.exp2((row_max_prev[i] - row_max[i]) * scale)
                for i, j in T.Parallel(block_H, block_N):
                    acc_s[i, j] = T.exp2((acc_s[i, j] - row_max[i]) * scale)
                T.reduce_sum(acc_s, row_sum, dim=1)
                for i in T.Parallel(block_H):
                    logsum[i] = logsum[i] * rescale[i] + row_sum[i]
                T.copy(acc_s, p_s)
                for i, j in T.Parallel(block_H, dim):
                    acc_o[i, j] *= rescale[i]
                T.gemm(p_s, kv_s, acc_o, policy=T.GemmWarpPolicy.FullCol)

            # an empty split (past the sequence's end) has logsum 0: output 0, log-sum-exp -inf
            for i, j in T.Parallel(block_H, dim):
                O_partial[b, hg * block_H + i, split, j] = T.if_then_else(
                    logsum[i] > 0, acc_o[i, j] / logsum[i], 0.0)
            for i in T.Parallel(block_H):
                LSE_partial[b, hg * block_H + i, split] = T.if_then_else(
                    logsum[i] > 0, T.log2(logsum[i]) + row_max[i] * scale, -T.infinity(accum))

    return main


@tilelang.jit(out_idx=[-1])
def mla_decode_combine(batch, heads, dim, num_split, threads=128, dtype="float16"):
    accum = "float32"

    @T.prim_func
    def main(O_partial: T.Tensor((batch, heads, num_split, dim), accum),
             LSE_partial: T.Tensor((batch, heads, num_split), accum), Out: T.Tensor((batch, heads, dim), dtype)):
        with T.Kernel(heads, batch, threads=threads) as (h, b):
            o = T.alloc_fragment((dim,), accum)
            lse_max = T.alloc_var(accum)
            total = T.alloc_var(accum)
            lse_max = -T.infinity(accum)
            for s in T.serial(num_split):
                lse_max = T.max(lse_max, LSE_partial[b, h, s])
            total = 0
            for s in T.serial(num_split):
                total += T.exp2(LSE_partial[b, h, s] - lse_max)
            T.clear(o)
            for s in T.serial(num_split):
                for d in T.Parallel(dim):
                    o[d] += T.exp2(LSE_partial[b, h, s] - lse_max) / total * O_partial[b, h, s, d]
            T.copy(o, Out[b, h, :])

    return main


def mla_decode(q, q_pe, kv_cache, k_pe_cache, block_table, seqlens, num_split=1, **tiles):
    """Attention output (batch, heads, dim) for the paged cache (module docstring)."""
    batch, heads, dim = q.shape
    num_pages, page_size, pe_dim = k_pe_cache.shape
    dtype = str(q.dtype).split(".")[-1]
    tiles.setdefault("block_H", min(64, heads))
    split = mla_decode_split(batch, heads, dim, pe_dim, num_pages, page_size, block_table.shape[1], num_split,
                             dtype=dtype, **tiles)
    o_partial, lse_partial = split(q, q_pe, kv_cache, k_pe_cache, block_table, seqlens)
    return mla_decode_combine(batch, heads, dim, num_split, dtype=dtype)(o_partial, lse_partial)


def reference(q, q_pe, kv_cache, k_pe_cache, block_table, seqlens):
    """The same attention in float64, gathering each sequence's tokens from its pages."""
    batch, heads, dim = q.shape
    page_size = kv_cache.shape[1]
    out = torch.empty(batch, heads, dim, dtype=torch.float64)
    for b in range(batch):
        n = int(seqlens[b])
        t = torch.arange(n)
        pages = block_table[b].cpu().long()[t // page_size]
        kv = kv_cache.cpu().double()[pages, t % page_size]
        kpe = k_pe_cache.cpu().double()[pages, t % page_size]
        s = (q[b].cpu().double() @ kv.T + q_pe[b].cpu().double() @ kpe.T) * (dim + kpe.shape[-1]) ** -0.5
        out[b] = torch.softmax(s, dim=-1) @ kv
    return out


def make_inputs(batch, heads, dim, pe_dim, max_len, page_size, dtype=torch.float16, device="cpu", seed=0):
    """Random queries and a paged cache whose pages are handed out in a shuffled order; sequence
    lengths between 1 and ``max_len`` (the first is ``max_len``)."""
    g = torch.Generator().manual_seed(seed)
    seqlens = torch.randint(1, max_len + 1, (batch,), generator=g, dtype=torch.int32)
    seqlens[0] = max_len
    max_pages = -(-max_len // page_size)
    num_pages = batch * max_pages
    block_table = torch.randperm(num_pages, generator=g).to(torch.int32).reshape(batch, max_pages)
    q = torch.randn(batch, heads, dim, generator=g).to(dtype)
    q_pe = torch.randn(batch, heads, pe_dim, generator=g).to(dtype)
    kv = torch.randn(num_pages, page_size, dim, generator=g).to(dtype)
    k_pe = torch.randn(num_pages, page_size, pe_dim, generator=g).to(dtype)
    return tuple(x.to(device) for x in (q, q_pe, kv, k_pe, block_table, seqlens))


def check(batch, heads, dim, pe_dim, max_len, num_split, page_size=64, device="cpu", **tiles) -> float:
    inputs = make_inputs(batch, heads, dim, pe_dim, max_len, page_size, device=device)
    out = mla_decode(*inputs, num_split=num_split, **tiles)
    ref = reference(*inputs)
    return ((out.cpu().double() - ref).norm() / ref.norm()).item()


if __name__ == "__main__":
    example_main(check, sizes={"batch": 3, "heads": 32, "dim": 64, "pe_dim": 16, "max_len": 300, "num_split": 3},
                 tolerance=3e-3, label="MLA decode (paged, split-KV)")
