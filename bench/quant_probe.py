"""Where the SwiGLU + FP8 quant kernel's time goes (bench/NOTES.md s39): the kernel as shipped,
the same without the scale column store, a copy with the same reads and writes and no math,
and torch's copy of the same bytes, one run, medians of CUDA events, GB/s of the shipped
kernel's byte count (so a variant that moves less shows how much the rest costs).

    python bench/quant_probe.py [--quick]      # --quick: without the block-shape variants
    ncu --clock-control none --nvtx --nvtx-include "prof/" --metrics <...> python bench/quant_probe.py --ncu
        (each variant once inside an NVTX range, after warm-up: bench/ncu_profile.py's convention)
"""

import sys

import torch

import tilelang_core as tilelang
import tilelang_core.language as T
from bench_common import example, side_by_side

M, N, G, BM = 8192, 4096, 128, 16


@tilelang.jit(out_idx=[-2, -1], target="cuda:sm_90a")
def variant(kind: str):
    @T.prim_func
    def main(X: T.Tensor((M, 2 * N), "bfloat16"), Q: T.Tensor((M, N), "float8_e4m3fn"),
             S: T.Tensor((M, N // G), "float32")):
        with T.Kernel(N // G, M // BM, threads=128) as (bg, bm):
            gate = T.alloc_fragment((BM, G), "bfloat16")
            up = T.alloc_fragment((BM, G), "bfloat16")
            y = T.alloc_fragment((BM, G), "float32")
            scale = T.alloc_fragment((BM,), "float32")
            q = T.alloc_fragment((BM, G), "float8_e4m3fn")
            T.copy(X[bm * BM, bg * G], gate)
            T.copy(X[bm * BM, N + bg * G], up)
            for i, j in T.Parallel(BM, G):
                y[i, j] = T.cast(gate[i, j], "float32") * T.cast(up[i, j], "float32")
            if kind == "copy":
                for i, j in T.Parallel(BM, G):
                    q[i, j] = T.cast(y[i, j], "float8_e4m3fn")
            else:
                T.reduce_absmax(y, scale, dim=1)
                for i, j in T.Parallel(BM, G):
                    q[i, j] = T.cast(y[i, j] / scale[i], "float8_e4m3fn")
            T.copy(q, Q[bm * BM, bg * G])
            if kind == "full":
                for i in T.Parallel(BM):
                    S[bm * BM + i, bg] = scale[i]

    return main


@tilelang.jit(out_idx=[-2, -1], target="cuda:sm_90a")
def grouped(gpb: int, bm_rows: int, threads: int):
    """Several groups per block: a row's scales for the block's groups are contiguous in S."""
    @T.prim_func
    def main(X: T.Tensor((M, 2 * N), "bfloat16"), Q: T.Tensor((M, N), "float8_e4m3fn"),
             S: T.Tensor((M, N // G), "float32")):
        with T.Kernel(N // (G * gpb), M // bm_rows, threads=threads) as (bg, bm):
            gate = T.alloc_fragment((bm_rows, gpb, G), "bfloat16")
            up = T.alloc_fragment((bm_rows, gpb, G), "bfloat16")
            y = T.alloc_fragment((bm_rows, gpb, G), "float32")
            scale = T.alloc_fragment((bm_rows, gpb), "float32")
            q = T.alloc_fragment((bm_rows, gpb, G), "float8_e4m3fn")
            for i, g, j in T.Parallel(bm_rows, gpb, G):
                gate[i, g, j] = X[bm * bm_rows + i, (bg * gpb + g) * G + j]
                up[i, g, j] = X[bm * bm_rows + i, N + (bg * gpb + g) * G + j]
            for i, g, j in T.Parallel(bm_rows, gpb, G):
                v = T.cast(gate[i, g, j], "float32")
                y[i, g, j] = v / (1.0 + T.exp(-v)) * T.cast(up[i, g, j], "float32")
            T.reduce_absmax(y, scale, dim=2)
            for i, g in T.Parallel(bm_rows, gpb):
                scale[i, g] = T.max(scale[i, g], 1e-4) / 448.0
            for i, g, j in T.Parallel(bm_rows, gpb, G):
                q[i, g, j] = T.cast(T.clamp(y[i, g, j] / scale[i, g], -448.0, 448.0), "float8_e4m3fn")
            for i, g, j in T.Parallel(bm_rows, gpb, G):
                Q[bm * bm_rows + i, (bg * gpb + g) * G + j] = q[i, g, j]
            for i, g in T.Parallel(bm_rows, gpb):
                S[bm * bm_rows + i, bg * gpb + g] = scale[i, g]

    return main


@tilelang.jit(out_idx=[-2, -1], target="cuda:sm_90a")
def previous(bm_rows: int = BM, threads: int = 128, s_via_shared: bool = False):
    """The shipped kernel before stop 51 (silu by expf, Q by an IEEE division y / S per element);
    ``s_via_shared``: its scales stored through shared memory by a T.copy (one thread per scale)
    instead of by every thread holding a replica of it."""
    @T.prim_func
    def main(X: T.Tensor((M, 2 * N), "bfloat16"), Q: T.Tensor((M, N), "float8_e4m3fn"),
             S: T.Tensor((M, N // G), "float32")):
        with T.Kernel(N // G, M // bm_rows, threads=threads) as (bg, bm):
            gate = T.alloc_fragment((bm_rows, G), "bfloat16")
            up = T.alloc_fragment((bm_rows, G), "bfloat16")
            y = T.alloc_fragment((bm_rows, G), "float32")
            scale = T.alloc_fragment((bm_rows,), "float32")
            scale_s = T.alloc_shared((bm_rows, 1), "float32")
            q = T.alloc_fragment((bm_rows, G), "float8_e4m3fn")
            T.copy(X[bm * bm_rows, bg * G], gate)
            T.copy(X[bm * bm_rows, N + bg * G], up)
            for i, j in T.Parallel(bm_rows, G):
                v = T.cast(gate[i, j], "float32")
                y[i, j] = v / (1.0 + T.exp(-v)) * T.cast(up[i, j], "float32")
            T.reduce_absmax(y, scale, dim=1)
            for i in T.Parallel(bm_rows):
                scale[i] = T.max(scale[i], 1e-4) / 448.0
            for i, j in T.Parallel(bm_rows, G):
                q[i, j] = T.cast(T.clamp(y[i, j] / scale[i], -448.0, 448.0), "float8_e4m3fn")
            T.copy(q, Q[bm * bm_rows, bg * G])
            if s_via_shared:
                for i in T.Parallel(bm_rows):
                    scale_s[i, 0] = scale[i]
                T.copy(scale_s, S[bm * bm_rows, bg])
            else:
                for i in T.Parallel(bm_rows):
                    S[bm * bm_rows + i, bg] = scale[i]

    return main


def main():
    quant = example("quant/swiglu_fp8_quant.py")
    x = torch.randn(M, 2 * N, device="cuda").to(torch.bfloat16)
    shipped = quant.swiglu_fp8_quant(M, N, block_M=BM, threads=128)
    src = torch.empty(M * (4 * N + N + 4 * N // G) // 2, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    fns = {"shipped": lambda: shipped(x), "previous (expf, y / S)": lambda k=previous(): k(x),
           "S store, no silu": lambda k=variant("full"): k(x), "no S store": lambda k=variant("noscale"): k(x),
           "mul + cast only": lambda k=variant("copy"): k(x), "torch copy (same bytes)": lambda: dst.copy_(src)}
    q0, s0 = previous()(x)  # every block-shape variant must give the previous kernel's bytes (same math)
    quick = "--quick" in sys.argv or "--ncu" in sys.argv  # the kernels of the first table only
    variants = [] if quick else [(f"{gpb} groups x {rows} rows, {threads} thr", grouped, (gpb, rows, threads))
                for gpb, rows, threads in ((2, 8, 128), (4, 4, 128), (4, 8, 256), (8, 4, 256), (32, 1, 256))]
    variants += [] if quick else [(f"S via shared {rows}r {threads}t", previous, (rows, threads, True))
                                  for rows, threads in ((16, 128), (32, 256))]
    for name, build, args in variants:
        try:
            k = build(*args)
            qq, ss = k(x)
            assert torch.equal(ss, s0) and torch.equal(qq.view(torch.uint8), q0.view(torch.uint8))
            fns[name] = lambda k=k: k(x)
        except Exception as exc:  # noqa: BLE001 - the probe reports what does not build
            print(f"{name}: {type(exc).__name__}: {str(exc)[:300]}")
    if "--ncu" in sys.argv:
        from ncu_profile import profiled

        for name, fn in fns.items():
            profiled(name, fn)
        return
    ms = side_by_side(fns, per_round=10)
    moved = M * (4 * N + N + 4 * N // G)
    for name, t in ms.items():
        print(f"{name:26s} {t * 1e3:8.1f} us {moved / t / 1e6:7.0f} GB/s ({100 * moved / t / 1e6 / 4300:.0f}% of 4.3 TB/s)")


if __name__ == "__main__":
    main()
