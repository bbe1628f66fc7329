"""SwiGLU fused with FP8 quantization (DeepSeek's activation format: e4m3 values, one float32
scale per token and group of 128 columns; ``group=N`` gives one scale per token):

    y = silu(X[:, :N]) * X[:, N:]                              X: (M, 2N) bfloat16
    a[m, g] = max(max |y[m, g*group : (g+1)*group]|, 1e-4)
    S[m, g] = a[m, g] / 448                                    (448 is e4m3's largest value)
    Q[m, n] = e4m3(y[m, n] * (448 / a[m, n // group]))         (DeepGEMM's per-token cast)

One block per (group, block_M rows): both halves of X are read once, y stays in registers, and
Q and S are written once, so the kernel moves 4N + N + 4N/group bytes per row, the floor.

    python examples/quant/swiglu_fp8_quant.py [--m 1000 --n 384] [--scales-mn-major]
"""

import torch

import tilelang_core as tilelang
import tilelang_core.language as T
from tilelang_core.testing.examples import example_main

FP8_MAX = 448.0
LOG2E = 1.4426950408889634  # silu's exp(-g) as exp2(-g log2 e): one ex2.approx on the GPU
MIN_AMAX = 1e-4  # a group of zeros gets the scale of this amax (as DeepGEMM's per_token_cast_to_fp8)


@tilelang.jit(out_idx=[-2, -1])
def swiglu_fp8_quant(M, N, group=128, block_M=8, dtype="bfloat16", threads=128, scales_mn_major=False):
    """``scales_mn_major``: S stored transposed, (N // group, M), as DeepGEMM's FP8 GEMMs read their
    scales (``S.T`` is the (M, N // group) view); a block's scales are then one contiguous run."""
    assert N % group == 0, f"N ({N}) must be a multiple of the group ({group})"
    S_shape = (N // group, M) if scales_mn_major else (M, N // group)

    @T.prim_func
    def main(X: T.Tensor((M, 2 * N), dtype), Q: T.Tensor((M, N), "float8_e4m3fn"),
             S: T.Tensor(S_shape, "float32")):
        with T.Kernel(N // group, T.ceildiv(M, block_M), threads=threads) as (bg, bm):
            gate = T.alloc_fragment((block_M, group), dtype)
            up = T.alloc_fragment((block_M, group), dtype)
            y = T.alloc_fragment((block_M, group), "float32")
            scale = T.alloc_fragment((block_M,), "float32")
            inv = T.alloc_fragment((block_M,), "float32")
            q = T.alloc_fragment((block_M, group), "float8_e4m3fn")
            T.copy(X[bm * block_M, bg * group], gate)
            T.copy(X[bm * block_M, N + bg * group], up)
            for i, j in T.Parallel(block_M, group):
                g = T.cast(gate[i, j], "float32")
                y[i, j] = g / (1.0 + T.exp2(g * -LOG2E)) * T.cast(up[i, j], "float32")
            T.reduce_absmax(y, scale, dim=1)
            for i in T.Parallel(block_M):
                amax = T.max(scale[i], MIN_AMAX)
                scale[i] = amax / FP8_MAX
                inv[i] = FP8_MAX / amax  # one division a row: y * (448 / amax), as DeepGEMM's cast
            for i, j in T.Parallel(block_M, group):
                q[i, j] = T.cast(T.clamp(y[i, j] * inv[i], -FP8_MAX, FP8_MAX), "float8_e4m3fn")
            T.copy(q, Q[bm * block_M, bg * group])
            for i in T.Parallel(block_M):
                if bm * block_M + i < M:
                    if scales_mn_major:
                        S[bg, bm * block_M + i] = scale[i]
                    else:
                        S[bm * block_M + i, bg] = scale[i]

    return main


def reference(x: torch.Tensor, group: int = 128):
    """(y in float64, scales, Q's values in float64) computed by torch from ``x``."""
    M, N = x.shape[0], x.shape[1] // 2
    xd = x.double().cpu()
    y = torch.nn.functional.silu(xd[:, :N]) * xd[:, N:]
    amax = y.view(M, N // group, group).abs().amax(-1).clamp(min=MIN_AMAX)
    scale = amax / FP8_MAX
    q = (y.view(M, N // group, group) * (FP8_MAX / amax)[..., None]).clamp(-FP8_MAX, FP8_MAX)
    return y, scale, q.to(torch.float8_e4m3fn).double().view(M, N)


def check(M, N, group=128, dtype=torch.bfloat16, device="cpu", **kw) -> float:
    """Relative error of the dequantized output Q * S against y in float64 (e4m3 keeps 3 mantissa
    bits: about 2**-4 per element at worst, less in the norm), after checking the scales."""
    x = (torch.randn(M, 2 * N, device=device) * 3).to(dtype)
    q, s = swiglu_fp8_quant(M, N, group=group, dtype=str(dtype).split(".")[-1], **kw)(x)
    if kw.get("scales_mn_major"):
        s = s.T
    y, scale, _ = reference(x, group)
    torch.testing.assert_close(s.cpu().double(), scale, rtol=1e-5, atol=1e-9)
    deq = q.cpu().double().view(M, N // group, group) * s.cpu().double()[..., None]
    return ((deq.view(M, N) - y).norm() / y.norm()).item()


if __name__ == "__main__":
    example_main(check, sizes={"M": 1000, "N": 384}, flags=("scales_mn_major",), tolerance=0.05,
                 label="swiglu_fp8_quant")
