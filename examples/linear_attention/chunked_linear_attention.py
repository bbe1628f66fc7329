"""Chunked linear attention forward, with an optional per-token, per-head decay (gated linear
attention with a scalar gate: RetNet / Lightning attention / Mamba-2's SSD form).

The recurrence it computes, for each batch ``b`` and head ``h`` (state ``S`` is ``dk x dv``)::

    S_t = exp(g[t]) * S_{t-1} + k[t]^T v[t]        S_{-1} = 0 (or the given initial state)
    o[t] = scale * q[t] S_t

``g`` is the log of the decay (<= 0; all zeros: plain linear attention). The kernel walks the
sequence in chunks of ``chunk`` tokens, the state held in registers: with ``G`` the running sum of
``g`` inside a chunk, the chunk's outputs are an intra-chunk part and the carried state's part::

    o[r] = scale * (sum_{c <= r} (q[r] . k[c]) exp(G[r] - G[c]) v[c]  +  exp(G[r]) q[r] S_prev)
    S    = exp(G[-1]) S_prev + sum_c exp(G[-1] - G[c]) k[c]^T v[c]

so every step is a gemm on tensor cores. A block owns one ``block_V``-wide slice of ``v``, ``o`` and
the state for one (batch, head): the slices are independent, so no block ever adds into another's
output. Where batch x heads is small that leaves most SMs idle, and each block walks its chunks in
sequence: ``block_K`` below ``dk`` (``chunked_linear_attention_split_k``) splits ``dk`` as well, as
TileLang's example does: every term above is linear in the ``dk`` slices of q and k (the state's
rows are the slices), so each block adds its slice's share of ``o`` atomically into a float32 ``o``
the caller zeroes. Any sequence length works (a ragged last chunk reads zeros past the end); the
final state is returned in fp32.

    python examples/linear_attention/chunked_linear_attention.py [--batch 2 --seq-len 200 --heads 3 --dim-k 64 --dim-v 64 --gated]
"""

import torch

import tilelang_core as tilelang
import tilelang_core.language as T
from tilelang_core.testing.examples import example_main


def _kernel(batch, seq_len, heads, dim_k, dim_v, scale, chunk, block_V, block_K, num_stages, threads, dtype):
    """The kernel over a grid of (V slice, K slice, batch x head); with one K slice it stores O in
    ``dtype``, with several each block adds its partial output into a float32 O (module docstring)."""
    assert dim_v % block_V == 0, f"dim_v ({dim_v}) must be a multiple of block_V ({block_V})"
    assert dim_k % block_K == 0, f"dim_k ({dim_k}) must be a multiple of block_K ({block_K})"
    scale = dim_k ** -0.5 if scale is None else scale
    accum = "float32"
    num_chunks = T.ceildiv(seq_len, chunk)
    split = block_K < dim_k
    out_dtype = accum if split else dtype

    @T.prim_func
    def main(Q: T.Tensor((batch, seq_len, heads, dim_k), dtype), K: T.Tensor((batch, seq_len, heads, dim_k), dtype),
             V: T.Tensor((batch, seq_len, heads, dim_v), dtype), G: T.Tensor((batch, seq_len, heads), accum),
             O: T.Tensor((batch, seq_len, heads, dim_v), out_dtype),
             final_state: T.Tensor((batch, heads, dim_k, dim_v), accum)):
        with T.Kernel(dim_v // block_V, dim_k // block_K, batch * heads, threads=threads) as (bv, bk, bh):
            b = bh // heads
            h = bh % heads
            q_s = T.alloc_shared((chunk, block_K), dtype)
            k_s = T.alloc_shared((chunk, block_K), dtype)
            qg_s = T.alloc_shared((chunk, block_K), dtype)  # q * scale * exp(G[r])
            kg_s = T.alloc_shared((chunk, block_K), dtype)  # k * exp(G[-1] - G[c])
            v_s = T.alloc_shared((chunk, block_V), dtype)
            p_s = T.alloc_shared((chunk, chunk), dtype)
            state_s = T.alloc_shared((block_K, block_V), dtype)
            g_s = T.alloc_shared((chunk,), accum)
            scores = T.alloc_fragment((chunk, chunk), accum)
            out = T.alloc_fragment((chunk, block_V), accum)
            state = T.alloc_fragment((block_K, block_V), accum)

            T.clear(state)
            for n in T.Pipelined(num_chunks, num_stages=num_stages):
                T.copy(Q[b, n * chunk:(n + 1) * chunk, h, bk * block_K:(bk + 1) * block_K], q_s)
                T.copy(K[b, n * chunk:(n + 1) * chunk, h, bk * block_K:(bk + 1) * block_K], k_s)
                T.copy(V[b, n * chunk:(n + 1) * chunk, h, bv * block_V:(bv + 1) * block_V], v_s)
                T.copy(G[b, n * chunk:(n + 1) * chunk, h], g_s)  # zeros past the end: no decay there
                T.cumsum(g_s, dim=0)
                for r, c in T.Parallel(chunk, block_K):
                    qg_s[r, c] = q_s[r, c] * T.exp(g_s[r]) * scale
                    kg_s[r, c] = k_s[r, c] * T.exp(g_s[chunk - 1] - g_s[r])
                T.gemm(q_s, k_s, scores, transpose_B=True, clear_accum=True)
                for r, c in T.Parallel(chunk, chunk):
                    p_s[r, c] = T.if_then_else(r >= c, scores[r, c] * T.exp(g_s[r] - g_s[c]) * scale, 0)
                T.copy(state, state_s)  # the state before this chunk, as a gemm operand
                T.gemm(p_s, v_s, out, clear_accum=True)
                T.gemm(qg_s, state_s, out)
                for i, j in T.Parallel(block_K, block_V):
                    state[i, j] = state[i, j] * T.exp(g_s[chunk - 1])
                T.gemm(kg_s, v_s, state, transpose_A=True)
                if split:  # this K slice's share of the chunk's output
                    T.atomic_add(O[b, n * chunk:(n + 1) * chunk, h, bv * block_V:(bv + 1) * block_V], out)
                else:
                    T.copy(out, O[b, n * chunk:(n + 1) * chunk, h, bv * block_V:(bv + 1) * block_V])
            T.copy(state, final_state[b, h, bk * block_K:(bk + 1) * block_K, bv * block_V:(bv + 1) * block_V])

    return main


@tilelang.jit(out_idx=[-2, -1])
def chunked_linear_attention(batch, seq_len, heads, dim_k, dim_v, scale=None, chunk=64, block_V=64,
                             num_stages=2, threads=128, dtype="float16"):
    """O in ``dtype`` and the final state, one block per (V slice, batch x head)."""
    return _kernel(batch, seq_len, heads, dim_k, dim_v, scale, chunk, block_V, dim_k, num_stages, threads, dtype)


@tilelang.jit(out_idx=[-1])
def chunked_linear_attention_split_k(batch, seq_len, heads, dim_k, dim_v, scale=None, chunk=64, block_V=64,
                                     block_K=64, num_stages=2, threads=128, dtype="float16"):
    """dim_k split in ``block_K`` slices as well (more blocks where batch x heads is small): each adds
    its partial output into O, float32, which the caller zeroes; returns the final state."""
    return _kernel(batch, seq_len, heads, dim_k, dim_v, scale, chunk, block_V, block_K, num_stages, threads, dtype)


def linear_attention(q, k, v, g=None, block_K=None, **tiles):
    """(o, final state) for q, k: (batch, seq, heads, dim_k), v: (batch, seq, heads, dim_v), g: the
    log decay (batch, seq, heads) in float32, or None for none. ``block_K`` below dim_k splits dim_k
    too (o is then float32, the blocks' partial outputs added into it)."""
    batch, seq_len, heads, dim_k = q.shape
    if g is None:
        g = torch.zeros(batch, seq_len, heads, dtype=torch.float32, device=q.device)
    dtype = str(q.dtype).split(".")[-1]
    if block_K is None or block_K == dim_k:
        return chunked_linear_attention(batch, seq_len, heads, dim_k, v.shape[-1], dtype=dtype, **tiles)(q, k, v, g)
    o = torch.zeros(*v.shape, dtype=torch.float32, device=q.device)
    kernel = chunked_linear_attention_split_k(batch, seq_len, heads, dim_k, v.shape[-1], block_K=block_K,
                                              dtype=dtype, **tiles)
    return o, kernel(q, k, v, g, o)


def reference(q, k, v, g, scale=None):
    """The recurrence itself, token by token, in float64."""
    q, k, v, g = q.double(), k.double(), v.double(), g.double()
    batch, seq_len, heads, dim_k = q.shape
    scale = dim_k ** -0.5 if scale is None else scale
    state = torch.zeros(batch, heads, dim_k, v.shape[-1], dtype=torch.float64)
    out = torch.empty(batch, seq_len, heads, v.shape[-1], dtype=torch.float64)
    for t in range(seq_len):
        state = state * g[:, t].exp()[..., None, None] + k[:, t, :, :, None] * v[:, t, :, None, :]
        out[:, t] = torch.einsum("bhk,bhkv->bhv", q[:, t], state) * scale
    return out, state


def make_inputs(batch, seq_len, heads, dim_k, dim_v, gated, dtype=torch.float16, device="cpu", seed=0):
    gen = torch.Generator().manual_seed(seed)
    # unit-norm q and k rows (linear attention normalizes them): outputs stay O(1) at any length
    q = torch.nn.functional.normalize(torch.randn(batch, seq_len, heads, dim_k, generator=gen), dim=-1)
    k = torch.nn.functional.normalize(torch.randn(batch, seq_len, heads, dim_k, generator=gen), dim=-1)
    v = torch.randn(batch, seq_len, heads, dim_v, generator=gen)
    g = torch.nn.functional.logsigmoid(torch.randn(batch, seq_len, heads, generator=gen) + 3) if gated \
        else torch.zeros(batch, seq_len, heads)
    return q.to(dtype).to(device), k.to(dtype).to(device), v.to(dtype).to(device), g.to(device)


def check(batch, seq_len, heads, dim_k, dim_v, gated=False, dtype=torch.float16, device="cpu", seed=0,
          **tiles) -> float:
    q, k, v, g = make_inputs(batch, seq_len, heads, dim_k, dim_v, gated, dtype, device, seed)
    out, state = linear_attention(q, k, v, g, **tiles)
    ref_out, ref_state = reference(q.cpu(), k.cpu(), v.cpu(), g.cpu())
    err_out = ((out.cpu().double() - ref_out).norm() / ref_out.norm()).item()
    err_state = ((state.cpu().double() - ref_state).norm() / ref_state.norm()).item()
    return max(err_out, err_state)


if __name__ == "__main__":
    example_main(check, sizes={"batch": 2, "seq_len": 200, "heads": 3, "dim_k": 64, "dim_v": 64},
                 flags=("gated",), tolerance=3e-3, label="chunked_linear_attention")
