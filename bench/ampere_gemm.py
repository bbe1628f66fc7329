"""The Ampere-class GEMM path on the H200 (issue 4): ldmatrix + mma.sync + cp.async pipeline, i.e.
the GEMM example on cuda:sm_90a with wgmma and warp specialization turned off, for a few tile
configurations, next to cuBLAS (torch.matmul) in the same run.   python bench/ampere_gemm.py
Then int8 (mma.sync m16n8k32, int32 out) against torch._int_mm and float32 on tf32 tensor cores
against torch.matmul with TF32 allowed, each timed in turns with its reference.

Each case is checked against torch in float64 (relative Frobenius error) before it is timed;
times are medians of CUDA-event timings after warm-up (cuda_bench.bench). About a minute.
"""

import torch

from cuda_bench import AMPERE, bench, compile_timed, example, side_by_side

#: (block_M, block_N, block_K, num_stages, threads): 64x64 warp tiles on 8 warps (128x256, 256x128)
#: or 4 warps (128x128); BK=64 halves the barriers per FLOP
CONFIGS = [(128, 256, 32, 3, 256), (128, 256, 64, 4, 256), (256, 128, 64, 3, 256), (128, 128, 32, 4, 128)]
SIZES = (4096, 8192)


def main():
    ex = example("gemm/gemm.py")
    header = ["size", "tile (MxNxK/stages/threads)", "rel err", "TFLOP/s", "cuBLAS", "ratio", "compile s"]
    rows = []
    print(" | ".join(header), flush=True)
    for size in SIZES:
        a = torch.randn(size, size, device="cuda", dtype=torch.float16)
        b = torch.randn(size, size, device="cuda", dtype=torch.float16)
        ref = a.double() @ b.double()
        flops = 2 * size ** 3
        cublas = flops / bench(lambda: torch.matmul(a, b)) / 1e9
        for bm, bn, bk, stages, threads in CONFIGS:
            kernel, secs = compile_timed(ex.gemm, size, size, size, block_M=bm, block_N=bn, block_K=bk,
                                         num_stages=stages, threads=threads, pass_configs=AMPERE)
            c = kernel(a, b)
            err = ((c.double() - ref).norm() / ref.norm()).item()
            ours = flops / bench(lambda: kernel(a, b)) / 1e9
            rows.append([f"{size}^3", f"{bm}x{bn}x{bk}/{stages}/{threads}", f"{err:.1e}", f"{ours:.0f}",
                         f"{cublas:.0f}", f"{ours / cublas:.2f}x", f"{secs:.1f}"])
            print(" | ".join(rows[-1]), flush=True)
    print()
    table(header, rows)
    print()
    table(*other_dtypes(ex))


def other_dtypes(ex):
    """int8 (B stored N x K, what ldmatrix feeds) and tf32 GEMMs at 8192^3 and 4096^3."""
    header = ["case", "rel err", "TFLOP/s (TOP/s)", "torch", "ratio", "compile s"]
    rows = []
    torch.backends.cuda.matmul.allow_tf32 = True
    for size in (4096, 8192):
        flops = 2 * size ** 3
        a8 = torch.randint(-128, 128, (size, size), device="cuda", dtype=torch.int8)
        b8 = torch.randint(-128, 128, (size, size), device="cuda", dtype=torch.int8)  # N x K
        a32, b32 = torch.randn(size, size, device="cuda"), torch.randn(size, size, device="cuda")
        cases = [("int8", a8, b8, True, dict(dtype="int8", accum_dtype="int32", out_dtype="int32", block_K=64),
                  lambda: torch._int_mm(a8, b8.t())),
                 ("tf32", a32, b32, False, dict(dtype="float32", accum_dtype="float32", block_K=32),
                  lambda: torch.matmul(a32, b32))]
        for name, a, b, trans_b, kw, reference in cases:
            try:
                kernel, secs = compile_timed(ex.gemm, size, size, size, False, trans_b, block_M=128, block_N=256,
                                             num_stages=3, threads=256, pass_configs=AMPERE, **kw)
                c = kernel(a, b)
                ref = a.double() @ (b.double().T if trans_b else b.double())
                err = ((c.double() - ref).norm() / ref.norm()).item()
                ms = side_by_side({"ours": lambda: kernel(a, b), "torch": reference})
                ours, theirs = flops / ms["ours"] / 1e9, flops / ms["torch"] / 1e9
                rows.append([f"{name} {size}^3", f"{err:.1e}", f"{ours:.0f}", f"{theirs:.0f}",
                             f"{ours / theirs:.2f}x", f"{secs:.1f}"])
            except Exception as exc:  # noqa: BLE001 - a missing torch path (e.g. _int_mm) is a row, not a crash
                rows.append([f"{name} {size}^3", "-", "-", "-", f"ERROR {type(exc).__name__}: {str(exc)[:80]}", "-"])
            print(" | ".join(rows[-1]), flush=True)
    return header, rows


def table(header, rows):
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    for r in [header] + rows:
        print("  ".join(str(x).ljust(w) for x, w in zip(r, widths)))


if __name__ == "__main__":
    main()
