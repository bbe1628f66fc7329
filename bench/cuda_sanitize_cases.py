"""Small launches of the kernels compute-sanitizer should see clean, for the H200:

    compute-sanitizer --tool memcheck  python bench/cuda_sanitize_cases.py
    compute-sanitizer --tool racecheck python bench/cuda_sanitize_cases.py
    compute-sanitizer --tool synccheck python bench/cuda_sanitize_cases.py

Builds first (no GPU work), then launches each kernel once on ragged shapes, checks the result.
"""

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "backends" / "cuda" / "tests"))

import torch  # noqa: E402

import kernels  # noqa: E402
from bench_common import example  # noqa: E402
from tilelang_cuda.options import CudaOptions  # noqa: E402
from tilelang_cuda.pipeline import CudaBackend  # noqa: E402


class Target:
    arch = "sm_90a"


def build(func, **options):
    backend = CudaBackend(Target())
    options = CudaOptions(lineinfo=True, **options)
    workdir = Path(tempfile.mkdtemp(prefix="tl_sanitize_"))
    mod = backend.lower(func, options)
    backend.build(mod, backend.codegen(mod, options), options, workdir)
    return backend.load(workdir / "kernel.so")


def attention_reference(q, k, v, causal=False):
    """softmax(q k^T / sqrt(d)) v with matmuls: torch's own attention kernels report races of
    their own under racecheck, which would hide ours."""
    q, k, v = (x.transpose(1, 2).float() for x in (q, k, v))
    scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
    if causal:
        rows = torch.arange(scores.shape[-2], device=scores.device)
        scores = scores.masked_fill(rows[None, :] > rows[:, None], float("-inf"))
    return (torch.softmax(scores, dim=-1) @ v).transpose(1, 2)


def check_attention(kernel, shape, label, failures, causal=False, name="flash_attn"):
    """Run a (B, S, H, D) attention kernel (entry function ``name``) once on random inputs; its
    label joins ``failures`` when the output is off the reference."""
    q, k, v = (torch.randn(*shape, device="cuda", dtype=torch.float16) for _ in range(3))
    o = torch.empty_like(q)
    kernel[name](q, k, v, o)
    if not torch.allclose(o.float(), attention_reference(q, k, v, causal), rtol=1e-2, atol=2e-3):
        failures.append(label)


def check_gemm(kernel, shape, label, failures, trans_b=False):
    M, N, K = shape
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(*((N, K) if trans_b else (K, N)), device="cuda", dtype=torch.float16)
    c = torch.empty(M, N, device="cuda", dtype=torch.float16)
    kernel["gemm"](a, b, c)
    if not torch.allclose(c.float(), a.float() @ (b.float().T if trans_b else b.float()), rtol=2e-2, atol=0.5):
        failures.append(label)


def main():
    gemm = build(kernels.make_gemm(1000, 1000, 1000))
    gemm_nt = build(kernels.make_gemm(520, 264, 200, bm=64, bn=64, bk=32, stages=4, trans_b=True))
    softmax = build(kernels.make_softmax(100, 512, 4, 128))
    rowmax = build(kernels.make_gemm_rowmax(200, 64, 96))
    attn = build(kernels.make_flash_attention(1, 2, 200, 64, 64, 64, 128))
    # sm_90a: wgmma fed by a TMA producer warpgroup (two consumer warpgroups, ragged edges)
    gemm_ws = build(kernels.make_gemm(1000, 520, 264, bm=128, bn=256, bk=64, threads=256, stages=3))
    attn_ws = build(kernels.make_flash_attention(1, 2, 300, 128, 128, 128, 256), disable_persistent=True)
    # one consumer warpgroup: two resident blocks per SM (hopper/occupancy.py), the bench's GEMM tile
    gemm_two = build(kernels.make_gemm(1000, 520, 264, bm=128, bn=128, bk=64, threads=128, stages=2))
    # persistent (the default for attention): 48 heads x 3 row blocks = 144 tiles on at most 132
    # CTAs, so some CTAs walk two and load the second tile's Q under the first one's epilogue
    attn_persistent = build(kernels.make_flash_attention(1, 48, 300, 128, 128, 128, 256))
    # causal attention's default, the dynamic tile scheduler: 48 x 3 tiles of 1-3 key blocks
    # handed out by the counter
    causal = example("attention/flash_attention.py").flash_attention
    causal_dynamic = build(causal.get_tir(1, 48, 300, 128, True, block_M=128, block_N=128, threads=256))
    # stream-K: 17 x 8 = 136 tiles on 132 SMs, all shared along K (partial sums through the workspace)
    gemm_sk = build(kernels.make_gemm(2176, 2048, 1000, bm=128, bn=256, bk=64, threads=256, stages=4),
                    enable_stream_k=True)
    # stream-K attention: 48 heads x 3 row blocks = 144 tiles all shared along the keys (384 keys:
    # no mask, which stream-K needs), partial softmax states (O, row sum, row max) combined by the
    # finisher
    attn_sk = build(kernels.make_flash_attention(1, 48, 384, 128, 128, 128, 256), enable_stream_k=True)
    # the mma.sync path: O leaves through Q's shared tile after the loop (transform/stage_epilogue.py;
    # a causal loop only when asked, which is what this case checks)
    causal_mma = build(causal.get_tir(1, 2, 200, 64, True, block_M=64, block_N=64, threads=128),
                       disable_wgmma=True, disable_warp_specialized=True, enable_staged_epilogue=True)
    failures = []

    check_attention(causal_mma, (1, 200, 2, 64), "causal flash attention 1x2x200x64 (mma.sync, staged O)",
                    failures, causal=True, name="main")

    check_attention(attn_sk, (1, 384, 48, 128), "flash attention 1x48x384x128 (stream-K)", failures)
    check_gemm(gemm_sk, (2176, 2048, 1000), "gemm 2176x2048x1000 (stream-K)", failures)
    check_gemm(gemm_ws, (1000, 520, 264), "gemm 1000x520x264 (TMA + wgmma)", failures)
    check_gemm(gemm_two, (1000, 520, 264), "gemm 1000x520x264 (two blocks per SM)", failures)
    check_attention(attn_ws, (1, 300, 2, 128), "flash attention 1x2x300x128 (TMA + wgmma, a CTA per tile)",
                    failures)
    check_gemm(gemm, (1000, 1000, 1000), "gemm 1000^3", failures)
    check_gemm(gemm_nt, (520, 264, 200), "gemm NT 520x264x200, 4 stages", failures, trans_b=True)

    x = torch.randn(100, 512, device="cuda")
    y = torch.empty_like(x)
    softmax["softmax"](x, y)
    if not torch.allclose(y, torch.softmax(x, 1), rtol=1e-4, atol=1e-6):
        failures.append("softmax 100x512")

    a = torch.randn(200, 96, device="cuda", dtype=torch.float16)
    b = torch.randn(64, 96, device="cuda", dtype=torch.float16)
    r = torch.empty(200, device="cuda")
    rowmax["gemm_rowmax"](a, b, r)
    if not torch.allclose(r, (0.5 * (a.float() @ b.float().T)).amax(1), rtol=1e-3, atol=1e-3):
        failures.append("gemm row max 200x64x96")

    check_attention(attn, (1, 200, 2, 64), "flash attention 1x2x200x64", failures)

    # several tiles per CTA: the producer's Q of the next tile under the epilogue
    check_attention(attn_persistent, (1, 300, 48, 128), "persistent flash attention 1x48x300x128", failures)
    check_attention(causal_dynamic, (1, 300, 48, 128), "causal flash attention 1x48x300x128 (dynamic tiles)",
                    failures, causal=True, name="main")

    # issue 26's kernels: attention backward (dQ by atomics, causal and not) and MLA decode over a
    # paged cache (ragged sequence lengths, split KV plus the combine kernel); each example's own
    # check against torch float64
    bwd = example("attention/flash_attention_bwd.py")
    # (stats in shared memory by 1-D TMA boxes, the default, and read where used; the bench tile)
    bench_tile = dict(block_M=64, block_N=128, num_stages=2, threads=256)
    for causal, tiles in ((False, {}), (True, {}), (True, dict(stats="global")), (True, bench_tile),
                          (False, dict(bench_tile, groups=2))):
        error = bwd.check(1, 4, 200, 64, is_causal=causal, device="cuda", **tiles)
        if not error < 1e-2:
            failures.append(f"flash attention backward 1x4x200x64 causal={causal} {tiles} (error {error:.2e})")
    mla = example("attention/mla_decode.py")
    error = mla.check(2, 64, 512, 64, 300, 2, device="cuda")
    if not error < 3e-3:
        failures.append(f"MLA decode 2x64 heads, 512+64, 300 keys, 2 splits (error {error:.2e})")

    torch.cuda.synchronize()
    print("FAILED: " + ", ".join(failures) if failures else "all results correct")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
