"""What the device compiler and ptxas's optimization level do to each kind of kernel on the H200:
every case built three times (NVRTC, the default where libnvrtc is found; nvcc with ptxas -O3,
its default; nvcc with -O1), the outputs compared, then all timed in turns (``side_by_side``: CUDA
events, medians). About a minute.

    python bench/ptxas_level.py [--only attention|gemm|hopper|rowwise]

Why: the mma.sync attention loop sits at 255 registers under -O3, which spills and, depending on
code outside the loop, issues the softmax's 64 ex2 of an iteration back to back; -O1 schedules it
in 243 registers with no spill and the ex2 interleaved (bench/NOTES.md, s11).
"""

import argparse

import torch

from bench_common import AMPERE, compile_timed, example, side_by_side
from rows_attention import attention_inputs

NVCC = {"tl.device_compiler": "nvcc"}
LEVELS = {"nvrtc": {"tl.device_compiler": "nvrtc"}, "-O3": NVCC,
          "-O1": {**NVCC, "tl.extra_nvcc_flags": ["-Xptxas", "-O1"]}}


def cases(only):
    """(group, label, build(pass_configs) -> kernel, call(kernel), flops or bytes, unit)."""
    attention = example("attention/flash_attention.py")
    gemm = example("gemm/gemm.py")
    softmax = example("softmax/softmax.py")
    out = []
    for S, D, causal, tile, path in ((4096, 128, False, (128, 64, 2, 128), AMPERE),
                                     (4096, 128, True, (128, 64, 2, 128), AMPERE),
                                     (8192, 64, False, (128, 128, 2, 128), AMPERE),
                                     (4096, 128, False, (128, 128, 2, 256), {}),
                                     (4096, 128, True, (128, 128, 2, 256), {})):
        B, H = 8, 16
        q, k, v, _ = attention_inputs(B, H, S, D, causal)
        bm, bn, stages, threads = tile
        group = "attention" if path else "hopper"
        label = f"attn S{S} D{D}{' causal' if causal else ''} {'mma.sync' if path else 'wgmma'}"

        def build(configs, S=S, D=D, causal=causal, bm=bm, bn=bn, stages=stages, threads=threads, path=path):
            return compile_timed(attention.flash_attention, B, H, S, D, causal, block_M=bm, block_N=bn,
                                 num_stages=stages, threads=threads, pass_configs={**path, **configs})[0]

        flops = 4 * B * H * S * S * D / (2 if causal else 1)
        out.append((group, label, build, lambda kernel, q=q, k=k, v=v: kernel(q, k, v), flops, "TFLOP/s"))
    size = 8192
    a, b = (torch.randn(size, size, device="cuda", dtype=torch.float16) for _ in range(2))
    for path, tile in ((AMPERE, (128, 256, 64, 4, 256)), ({}, (128, 256, 64, 4, 256))):
        bm, bn, bk, stages, threads = tile

        def build(configs, path=path, bm=bm, bn=bn, bk=bk, stages=stages, threads=threads):
            return compile_timed(gemm.gemm, size, size, size, block_M=bm, block_N=bn, block_K=bk,
                                 num_stages=stages, threads=threads, pass_configs={**path, **configs})[0]

        group = "gemm" if path else "hopper"
        out.append((group, f"gemm fp16 {size}^3 {'mma.sync' if path else 'wgmma'}", build,
                    lambda kernel: kernel(a, b), 2 * size ** 3, "TFLOP/s"))
    x = torch.randn(16384, 1024, device="cuda")

    def build_softmax(configs):
        return compile_timed(softmax.softmax, 16384, 1024, dtype="float32", pass_configs=configs)[0]

    out.append(("rowwise", "softmax 16384x1024 f32", build_softmax, lambda kernel: kernel(x), 2 * x.numel() * 4, "GB/s"))
    return [c for c in out if only is None or c[0] == only]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("attention", "gemm", "hopper", "rowwise"))
    args = parser.parse_args()
    print("case | NVRTC | nvcc -O3 | nvcc -O1 | -O3/NVRTC | -O1/-O3 | max diff", flush=True)
    for _, label, build, call, work, unit in cases(args.only):
        kernels = {level: build(configs) for level, configs in LEVELS.items()}
        outs = {level: call(kernel).float() for level, kernel in kernels.items()}
        diff = max((outs["-O3"] - o).abs().max().item() for o in outs.values())
        ms = side_by_side({level: (lambda kernel=kernel: call(kernel)) for level, kernel in kernels.items()},
                          per_round=2)
        scale = 1e6 if unit == "GB/s" else 1e9  # ms -> per second, in GB or TFLOP
        rate = {level: work / ms[level] / scale for level in kernels}
        print(f"{label} | {rate['nvrtc']:.0f} | {rate['-O3']:.0f} | {rate['-O1']:.0f} {unit} | "
              f"{rate['-O3'] / rate['nvrtc']:.3f}x | {rate['-O1'] / rate['-O3']:.3f}x | {diff:.1e}", flush=True)


if __name__ == "__main__":
    main()
