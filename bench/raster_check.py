"""Rasterization check (H200): the GEMM example without T.use_swizzle (the planner's panels) next
to panel_size=1 (launch order) and cuBLAS, same run.   python bench/raster_check.py"""
import torch

from bench_common import bench, compile_timed, example

ex = example("gemm/gemm.py")
for size in (4096, 8192):
    a = torch.randn(size, size, device="cuda", dtype=torch.float16)
    b = torch.randn(size, size, device="cuda", dtype=torch.float16)
    flops = 2 * size ** 3
    ref = a.double() @ b.double()
    cublas = flops / bench(lambda: torch.matmul(a, b)) / 1e9
    row = [f"gemm f16 {size}^3 cuBLAS {cublas:.0f}"]
    for label, panel in (("auto", 0), ("launch order", 1)):
        kernel, _ = compile_timed(ex.gemm, size, size, size, block_M=128, block_N=256, block_K=64, num_stages=4,
                                  threads=256, panel_size=panel)
        err = ((kernel(a, b).double() - ref).norm() / ref.norm()).item()
        tf = flops / bench(lambda: kernel(a, b)) / 1e9
        row.append(f"{label} {tf:.0f} ({tf / cublas:.2f}x, err {err:.1e})")
    print(" | ".join(row), flush=True)
