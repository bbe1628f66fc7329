"""FP8 GEMM with DeepSeek-V3's block scales (DeepGEMM's format): e4m3 operands, one float32 scale
per 1 x 128 strip of A (per token and 128 columns of K) and per 128 x 128 block of B:

    C[m, n] = sum_k A[m, k] * B[n, k] * SA[m, k // 128] * SB[n // 128, k // 128]

Each 128-deep slab of K is multiplied on the tensor cores into a fresh float32 tile, which is then
scaled and added to the running sum (promotion: the scales differ per slab, so they cannot be
applied once at the end). B is stored N x K (nn.Linear's layout), C is bfloat16.

``slabs=2`` takes two slabs per pipelined iteration into two tiles and promotes each while the
other's gemm runs (issue slab 0; promote the last iteration's slab 1; issue slab 1; promote slab 0):
on sm_90a the gemms are awaited where their tiles are first read (hopper/consumer_schedule.py,
lazy waits), so the tensor cores are not idle during a promotion. It needs an even number of slabs.
It is the default where K / 128 is even and at most 3 stages are asked for (2 if none: four slabs in
flight; 4 stages of two slabs exceed sm_90a's shared memory at 128 x 128): on an H100 it ran
1.07-1.09x the one-slab kernel's best (4 stages) at 4096^3, 8192^3 and 4096x7168x2048 (bench/NOTES.md).

    python examples/fp8/blockscaled_gemm.py [--m 300 --n 256 --k 512]
"""

import torch

import tilelang_core as tilelang
import tilelang_core.language as T
from tilelang_core.testing.examples import example_main

GROUP = 128
FP8_MAX = 448.0


@tilelang.jit(out_idx=[-1])
def blockscaled_gemm(M, N, K, block_M=128, block_N=128, num_stages=None, threads=256, out_dtype="bfloat16",
                     slabs=None):
    assert K % GROUP == 0, f"K ({K}) must be a multiple of {GROUP}"
    assert GROUP % block_N == 0, f"block_N ({block_N}) must divide {GROUP}: a tile takes one scale of B per slab"
    k_tiles = K // GROUP
    if slabs is None:  # two slabs hold twice the shared memory a stage: 4 stages of them do not fit
        slabs = 2 if k_tiles % 2 == 0 and (num_stages or 2) <= 3 else 1
    if num_stages is None:
        num_stages = 2 if slabs == 2 else 4
    assert slabs in (1, 2) and k_tiles % slabs == 0, f"slabs={slabs}: 1, or 2 where K / {GROUP} is even"
    if slabs == 2:
        return _two_slabs(M, N, K, block_M, block_N, num_stages, threads, out_dtype)

    @T.prim_func
    def main(A: T.Tensor((M, K), "float8_e4m3fn"), B: T.Tensor((N, K), "float8_e4m3fn"),
             SA: T.Tensor((M, k_tiles), "float32"), SB: T.Tensor((T.ceildiv(N, GROUP), k_tiles), "float32"),
             C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_s = T.alloc_shared((block_M, GROUP), "float8_e4m3fn")
            B_s = T.alloc_shared((block_N, GROUP), "float8_e4m3fn")
            scale = T.alloc_fragment((block_M,), "float32")
            slab = T.alloc_fragment((block_M, block_N), "float32")
            acc = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(acc)
            for k in T.Pipelined(k_tiles, num_stages=num_stages):
                T.copy(A[by * block_M, k * GROUP], A_s)
                T.copy(B[bx * block_N, k * GROUP], B_s)
                # the slab's scales, read before its gemm so that the loads overlap the tensor cores
                # (rows past M read the last row's scale: their sums are not stored)
                for i in T.Parallel(block_M):
                    scale[i] = SA[T.min(by * block_M + i, M - 1), k] * SB[bx * block_N // GROUP, k]
                T.gemm(A_s, B_s, slab, transpose_B=True, clear_accum=True)
                for i, j in T.Parallel(block_M, block_N):
                    acc[i, j] += slab[i, j] * scale[i]
            T.copy(acc, C[by * block_M, bx * block_N])

    return main


def _two_slabs(M, N, K, block_M, block_N, num_stages, threads, out_dtype):
    k_tiles = K // GROUP

    @T.prim_func
    def main(A: T.Tensor((M, K), "float8_e4m3fn"), B: T.Tensor((N, K), "float8_e4m3fn"),
             SA: T.Tensor((M, k_tiles), "float32"), SB: T.Tensor((T.ceildiv(N, GROUP), k_tiles), "float32"),
             C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A0 = T.alloc_shared((block_M, GROUP), "float8_e4m3fn")
            B0 = T.alloc_shared((block_N, GROUP), "float8_e4m3fn")
            A1 = T.alloc_shared((block_M, GROUP), "float8_e4m3fn")
            B1 = T.alloc_shared((block_N, GROUP), "float8_e4m3fn")
            scale0 = T.alloc_fragment((block_M,), "float32")
            scale1 = T.alloc_fragment((block_M,), "float32")
            slab0 = T.alloc_fragment((block_M, block_N), "float32")
            slab1 = T.alloc_fragment((block_M, block_N), "float32")
            acc = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(acc)
            T.clear(slab1)  # the first iteration promotes "the last one's" slab 1: nothing
            T.clear(scale1)
            row = bx * block_N // GROUP
            for k in T.Pipelined(k_tiles // 2, num_stages=num_stages):
                T.copy(A[by * block_M, 2 * k * GROUP], A0)
                T.copy(B[bx * block_N, 2 * k * GROUP], B0)
                T.copy(A[by * block_M, (2 * k + 1) * GROUP], A1)
                T.copy(B[bx * block_N, (2 * k + 1) * GROUP], B1)
                T.gemm(A0, B0, slab0, transpose_B=True, clear_accum=True)
                for i, j in T.Parallel(block_M, block_N):  # under slab 0's gemm
                    acc[i, j] += slab1[i, j] * scale1[i]
                for i in T.Parallel(block_M):
                    scale1[i] = SA[T.min(by * block_M + i, M - 1), 2 * k + 1] * SB[row, 2 * k + 1]
                T.gemm(A1, B1, slab1, transpose_B=True, clear_accum=True)
                for i in T.Parallel(block_M):  # (rows past M read the last row's scale: not stored)
                    scale0[i] = SA[T.min(by * block_M + i, M - 1), 2 * k] * SB[row, 2 * k]
                for i, j in T.Parallel(block_M, block_N):  # under slab 1's gemm
                    acc[i, j] += slab0[i, j] * scale0[i]
            for i, j in T.Parallel(block_M, block_N):
                acc[i, j] += slab1[i, j] * scale1[i]
            T.copy(acc, C[by * block_M, bx * block_N])

    return main


def quantize_1x128(x: torch.Tensor):
    """(M, K) -> (e4m3 values, (M, K / 128) float32 scales): per token and 128 columns."""
    M, K = x.shape
    g = x.float().view(M, K // GROUP, GROUP)
    s = g.abs().amax(-1).clamp(min=1e-4) / FP8_MAX
    return (g / s[..., None]).to(torch.float8_e4m3fn).view(M, K), s


def quantize_128x128(w: torch.Tensor):
    """(N, K) -> (e4m3 values, (ceil(N / 128), K / 128) float32 scales): per 128 x 128 block."""
    N, K = w.shape
    n_pad = -(-N // GROUP) * GROUP
    wp = torch.zeros(n_pad, K, dtype=torch.float32, device=w.device)
    wp[:N] = w.float()
    blocks = wp.view(n_pad // GROUP, GROUP, K // GROUP, GROUP)
    s = blocks.abs().amax(dim=(1, 3)).clamp(min=1e-4) / FP8_MAX
    q = (blocks / s[:, None, :, None]).to(torch.float8_e4m3fn).view(n_pad, K)[:N]
    return q.contiguous(), s


def reference(a, b, sa, sb):
    """C in float64 from the quantized operands and their scales."""
    M, K = a.shape
    N = b.shape[0]
    ad = (a.double().view(M, K // GROUP, GROUP) * sa.double()[..., None]).view(M, K)
    sbd = sb.double().repeat_interleave(GROUP, 0)[:N]
    bd = (b.double().view(N, K // GROUP, GROUP) * sbd[..., None]).view(N, K)
    return ad.cpu() @ bd.cpu().T


def check(M, N, K, device="cpu", **tiles) -> float:
    """Relative error against torch in float64 on the dequantized operands (the output is
    bfloat16: about 2**-9 per element)."""
    a, sa = quantize_1x128(torch.randn(M, K, device=device))
    b, sb = quantize_128x128(torch.randn(N, K, device=device))
    c = blockscaled_gemm(M, N, K, **tiles)(a, b, sa, sb)
    ref = reference(a, b, sa, sb)
    return ((c.cpu().double() - ref).norm() / ref.norm()).item()


if __name__ == "__main__":
    example_main(check, sizes={"M": 300, "N": 256, "K": 512}, tolerance=5e-3, label="blockscaled_gemm")
