"""Grouped GEMM for mixture-of-experts layers, in DeepGEMM's two layouts (bf16/fp16, fp32 accumulate).

Each expert g has a weight B[g] of shape (N, K) (nn.Linear's layout) and multiplies the tokens routed
to it:

- contiguous: the tokens of all experts are stacked in one A (M, K), each expert's rows padded to a
  multiple of block_M (``pad_groups`` builds it from group sizes); ``tile_group[t]`` names the expert
  of row tile t, -1 for a tile of padding only. C (M, N): C[rows of g] = A[rows of g] @ B[g].T, and
  padding rows are left as they were (C is zero-initialised by the launcher).
- masked: A (G, M_max, K) holds up to M_max tokens per expert, ``masked_m[g]`` of them valid. C[g, :m]
  = A[g, :m] @ B[g].T; rows at or past masked_m[g] in a tile that has valid rows hold A's padding
  rows times B[g], tiles with no valid row are skipped. Read only the valid rows.

    python examples/moe/grouped_gemm.py [--groups 5 --n 320 --k 200 --tokens 700] [--masked]
"""

import torch

import tilelang_core as tilelang
import tilelang_core.language as T
from tilelang_core.testing.examples import example_main


@tilelang.jit(out_idx=[-1])
def grouped_gemm_contiguous(M, N, K, G, block_M=128, block_N=128, block_K=64, num_stages=4, threads=256,
                            dtype="bfloat16", accum_dtype="float32"):
    assert M % block_M == 0, f"M ({M}) must be a multiple of block_M ({block_M}): pad each group (pad_groups)"

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((G, N, K), dtype),
             tile_group: T.Tensor((M // block_M,), "int32"), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), M // block_M, threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_N, block_K), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            g = tile_group[by]
            if g >= 0:
                T.clear(C_local)
                for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                    T.copy(A[by * block_M, ko * block_K], A_shared)
                    T.copy(B[g, bx * block_N, ko * block_K], B_shared)
                    T.gemm(A_shared, B_shared, C_local, transpose_B=True)
                T.copy(C_local, C[by * block_M, bx * block_N])

    return main


@tilelang.jit(out_idx=[-1])
def grouped_gemm_masked(G, M_max, N, K, block_M=128, block_N=128, block_K=64, num_stages=4, threads=256,
                        dtype="bfloat16", accum_dtype="float32"):
    @T.prim_func
    def main(A: T.Tensor((G, M_max, K), dtype), B: T.Tensor((G, N, K), dtype),
             masked_m: T.Tensor((G,), "int32"), C: T.Tensor((G, M_max, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M_max, block_M), G, threads=threads) as (bx, by, bz):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_N, block_K), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            if by * block_M < masked_m[bz]:
                T.clear(C_local)
                for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                    T.copy(A[bz, by * block_M, ko * block_K], A_shared)
                    T.copy(B[bz, bx * block_N, ko * block_K], B_shared)
                    T.gemm(A_shared, B_shared, C_local, transpose_B=True)
                T.copy(C_local, C[bz, by * block_M, bx * block_N])

    return main


def pad_groups(sizes, block_M):
    """(padded row count, row offset of each group in the padded A, tile_group) for groups of
    ``sizes`` tokens, each padded to a multiple of block_M (DeepGEMM's contiguous layout)."""
    starts, tiles, row = [], [], 0
    for g, size in enumerate(sizes):
        starts.append(row)
        n_tiles = -(-size // block_M)
        tiles += [g] * n_tiles
        row += n_tiles * block_M
    if not tiles:  # no tokens at all: one tile of padding keeps the launch non-empty
        tiles, row = [-1], block_M
    return row, starts, torch.tensor(tiles, dtype=torch.int32)


def check(groups, N, K, tokens, masked=False, dtype=torch.bfloat16, device="cpu", **tiles) -> float:
    """Relative error against torch in float64 over the valid rows, ``tokens`` routed at random to
    the experts but the first (a group of none, when there are several)."""
    gen = torch.Generator().manual_seed(tokens * 31 + groups)
    expert = torch.randint(1 if groups > 1 else 0, groups, (tokens,), generator=gen)  # expert 0 gets none
    sizes = expert.bincount(minlength=groups).tolist()
    name = str(dtype).split(".")[-1]
    b = torch.randn(groups, N, K, dtype=dtype, device=device)
    block_M = tiles.get("block_M", 128)
    if masked:
        M_max = max(max(sizes), 1)
        a = torch.randn(groups, M_max, K, dtype=dtype, device=device)
        m = torch.tensor(sizes, dtype=torch.int32, device=device)
        c = grouped_gemm_masked(groups, M_max, N, K, dtype=name, **tiles)(a, b, m)
        got = [c[g, :size] for g, size in enumerate(sizes)]
        want = [a[g, :size].double() @ b[g].double().T for g, size in enumerate(sizes)]
    else:
        M, starts, tile_group = pad_groups(sizes, block_M)
        a = torch.randn(M, K, dtype=dtype, device=device)
        c = grouped_gemm_contiguous(M, N, K, groups, dtype=name, **tiles)(a, b, tile_group.to(device))
        got = [c[s:s + size] for s, size in zip(starts, sizes)]
        want = [a[s:s + size].double() @ b[g].double().T for g, (s, size) in enumerate(zip(starts, sizes))]
    got, want = torch.cat(got).cpu().double(), torch.cat(want).cpu()
    return ((got - want).norm() / want.norm()).item() if want.numel() else 0.0  # no token: nothing to get wrong


if __name__ == "__main__":
    example_main(check, sizes={"groups": 5, "N": 320, "K": 200, "tokens": 700}, flags=("masked",),
                 tolerance=1e-2, label="grouped_gemm")
