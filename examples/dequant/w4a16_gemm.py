"""Weight-only int4 GEMM for decoding (w4a16): fp16/bf16 activations times int4 weights with one
scale per group of K, the layout GPTQ/AWQ-style checkpoints reduce to:

    W[n, k] = (Wq[n, k] - 8) * S[n, k // group]        Wq: 4-bit codes 0..15, two per byte
    C[m, n] = sum_k A[m, k] * W[n, k]                   A: (M, K), C: (M, N), M small (tokens)

Packing (``pack_int4``): byte Wp[n, j] holds code 2j in its low nibble and 2j + 1 in its high one.

The kernel computes C's transpose, a (block_N x tokens) tile per block: the dequantized weights are
the gemm's A operand, straight from registers (each thread decodes the elements it holds), and
the few tokens its B operand from shared memory, so the weights cross no shared-memory write. A
code becomes a half-precision number without an int -> float conversion (a quarter-rate
instruction): ``0x6400 | code`` is the float16 1024 + code, and (1024 + code) - 1032 = code - 8
exactly (float16 holds the integers to 2048), times s (bfloat16: 0x4300 | code = 128 + code).

    python examples/dequant/w4a16_gemm.py [--m 5 --n 320 --k 512]
"""

import torch

import tilelang_core as tilelang
import tilelang_core.language as T
from tilelang_core.testing.examples import example_main


@tilelang.jit(out_idx=[-1])
def w4a16_gemm(M, N, K, group=128, block_N=64, block_K=128, num_stages=4, threads=128, dtype="float16"):
    assert K % group == 0, f"the group ({group}) must divide K ({K})"
    assert K % block_K == 0, f"K ({K}) must be a multiple of block_K ({block_K})"
    tokens = max(16, 8 * -(-M // 8))  # the gemm's N: a multiple of 8, at least 16
    # the bits of the 16-bit float 1024 (float16) or 128 (bfloat16): its mantissa takes the code
    magic, bias = {"float16": (0x6400, 1032.0), "bfloat16": (0x4300, 136.0)}[dtype]

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), Wp: T.Tensor((N, K // 2), "uint8"), S: T.Tensor((N, K // group), dtype),
             C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), threads=threads) as bx:
            A_s = T.alloc_shared((tokens, block_K), dtype)
            W_s = T.alloc_shared((block_N, block_K // 2), "uint8")
            W_f = T.alloc_fragment((block_N, block_K), dtype)
            Ct = T.alloc_fragment((block_N, tokens), "float32")
            T.clear(Ct)
            for ko in T.Pipelined(K // block_K, num_stages=num_stages):
                T.copy(A[0, ko * block_K], A_s)
                T.copy(Wp[bx * block_N, ko * (block_K // 2)], W_s)
                for i, j in T.Parallel(block_N, block_K):
                    code = T.cast(T.shift_right(W_s[i, j // 2], (j % 2) * 4) & 15, "uint16")
                    s = S[T.min(bx * block_N + i, N - 1), (ko * block_K + j) // group]  # (L1 hits)
                    # in the 16-bit type itself (a Python float would make it float32 arithmetic)
                    W_f[i, j] = (T.reinterpret(code | magic, dtype) - T.cast(bias, dtype)) * s
                T.gemm(W_f, A_s, Ct, transpose_B=True)
            for i, j in T.Parallel(block_N, tokens):
                if j < M and bx * block_N + i < N:
                    C[j, bx * block_N + i] = Ct[i, j]

    return main


def pack_int4(codes: torch.Tensor) -> torch.Tensor:
    """(N, K) codes in 0..15 -> (N, K / 2) uint8, code 2j in the low nibble of byte j."""
    c = codes.to(torch.uint8)
    return c[:, 0::2] | (c[:, 1::2] << 4)


def quantize(w: torch.Tensor, group: int = 128):
    """Symmetric int4 quantization of (N, K) weights: (codes, scales) with w ~ (codes - 8) * s."""
    N, K = w.shape
    g = w.double().view(N, K // group, group)
    s = (g.abs().amax(-1) / 7).clamp(min=1e-8)
    codes = (g / s[..., None]).round().clamp(-8, 7) + 8
    return codes.view(N, K).to(torch.uint8), s


def check(M, N, K, group=128, dtype=torch.float16, device="cpu", **tiles) -> float:
    """Relative error against torch in float64 on the dequantized weights (scales rounded to the
    activation dtype first, as the kernel reads them)."""
    w = torch.randn(N, K)
    codes, s = quantize(w, group)
    s = s.to(dtype)
    a = torch.randn(M, K, dtype=dtype)
    kernel = w4a16_gemm(M, N, K, group=group, dtype=str(dtype).split(".")[-1], **tiles)
    c = kernel(a.to(device), pack_int4(codes).to(device), s.to(device))
    wd = (codes.double() - 8).view(N, K // group, group) * s.double()[..., None]
    ref = a.double() @ wd.view(N, K).T
    return ((c.cpu().double() - ref).norm() / ref.norm()).item()


if __name__ == "__main__":
    example_main(check, sizes={"M": 5, "N": 320, "K": 512}, tolerance=2e-3, label="w4a16_gemm")
