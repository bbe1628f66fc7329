"""cuda_bench.py's attention sections: FlashAttention forward and backward against torch's flash
and cuDNN, chunked linear attention against TileLang's example."""

import os

import torch

from bench_common import compile_timed, example, side_by_side


ATTENTION_TILES = {128: dict(block_M=128, block_N=128, num_stages=2, threads=256),
                   64: dict(block_M=192, block_N=128, num_stages=2, threads=384)}


def attention_inputs(B, H, S, D, causal):
    """Random (B, S, H, D) fp16 q, k, v on the GPU, and ``sdpa(backend)``: a call of torch's SDPA
    with that backend on the same tensors (their (B, H, S, D) views), returning its output."""
    from torch.nn.attention import sdpa_kernel

    q, k, v = (torch.randn(B, S, H, D, device="cuda", dtype=torch.float16) for _ in range(3))
    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))

    def sdpa(backend):
        def run():
            with sdpa_kernel(backend):
                return torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)
        return run

    return q, k, v, sdpa


def attention_rows(pass_configs):
    from torch.nn.attention import SDPBackend

    ex = example("attention/flash_attention.py")
    rows = []
    for B, H, S, D, causal in ((8, 16, 4096, 128, False), (8, 16, 4096, 128, True), (8, 16, 8192, 64, False)):
        kernel, secs = compile_timed(ex.flash_attention, B, H, S, D, causal, **ATTENTION_TILES[D],
                                     pass_configs=pass_configs)
        q, k, v, sdpa = attention_inputs(B, H, S, D, causal)
        o = kernel(q, k, v)
        ref = torch.nn.functional.scaled_dot_product_attention(*(x.transpose(1, 2).float() for x in (q, k, v)),
                                                                is_causal=causal).transpose(1, 2)
        err = (o.float() - ref).abs().max().item()
        flops = 4 * B * H * S * S * D / (2 if causal else 1)
        ms = side_by_side({"ours": lambda: kernel(q, k, v), "flash": sdpa(SDPBackend.FLASH_ATTENTION),
                           "cudnn": sdpa(SDPBackend.CUDNN_ATTENTION)}, per_round=2)
        ours = flops / ms["ours"] / 1e9
        theirs = {label: flops / ms[label] / 1e9 for label in ("flash", "cudnn")}
        rows.append([f"attn B{B} H{H} S{S} D{D}{' causal' if causal else ''}", f"{err:.1e}", f"{ours:.0f}",
                     f"{theirs['flash']:.0f}", f"{theirs['cudnn']:.0f}", f"{ours / theirs['cudnn']:.2f}x",
                     f"{secs:.2f}"])
        print(" | ".join(rows[-1]), flush=True)
    return ["case", "max err", "ours TFLOP/s", "SDPA flash", "SDPA cuDNN", "vs cuDNN", "compile s"], rows




def attention_lse(q, k, causal: bool):
    """(B, H, S) logsumexp of the scaled scores of BSHD ``q``, ``k`` per row, from float32 scores
    (a block of 1024 rows at a time keeps memory low): what the backward kernels read."""
    B, S, H, D = q.shape
    lse = torch.empty(B, H, S, device=q.device)
    for r in range(0, S, 1024):
        s = torch.einsum("bihd,bjhd->bhij", q[:, r:r + 1024].float(), k.float()) * D ** -0.5
        if causal:
            s.masked_fill_(torch.ones(s.shape[-2], S, dtype=torch.bool, device=q.device).triu(r + 1), float("-inf"))
        lse[:, :, r:r + 1024] = torch.logsumexp(s, -1)
    return lse


def attention_bwd_rows(pass_configs):
    """FlashAttention backward (examples/attention/flash_attention_bwd.py: delta kernel + per-key-block
    kernel, dQ by fp32 atomics) against torch SDPA's backward (flash and cuDNN), dQ/dK/dV from the
    same forward. Several tile choices are compiled and the fastest is reported with its tiles.
    FLOPs: five S x S x D matmuls, 10 B H S^2 D, halved for causal."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    ex = example("attention/flash_attention_bwd.py")
    tiles = [dict(block_M=64, block_N=64, num_stages=1, threads=128),
             dict(block_M=64, block_N=128, num_stages=1, threads=256),
             dict(block_M=64, block_N=128, num_stages=2, threads=256),
             dict(block_M=128, block_N=64, num_stages=1, threads=256)]
    # lse / delta read where used: warp-specialized on sm_90a (the example's stats="global")
    tiles += [dict(t, stats="global") for t in tiles[:3]]
    # FA3's D64 tile: all five gemms wgmma (at 64x128 D64's dQ gemm is mma.sync); 0.85x cuDNN at D64
    # on the H100 (stop 59) against 0.61x for 64x128
    tiles += [dict(block_M=128, block_N=128, num_stages=2, threads=256, stats="global")]
    # stats in shared memory by 1-D TMA boxes (stop 61; before, float32 kept those on cp.async)
    tiles += [dict(block_M=128, block_N=128, num_stages=2, threads=256)]
    if os.environ.get("ATTNBWD_TILES"):  # e.g. "2,6": a quick run of some of them (indices into tiles)
        tiles = [tiles[int(i)] for i in os.environ["ATTNBWD_TILES"].split(",")]
    rows = []
    # (the last two: GQA, `groups` query heads per K/V head)
    for B, H, S, D, causal, groups in ((8, 16, 4096, 128, False, 1), (8, 16, 4096, 128, True, 1),
                                       (8, 16, 4096, 64, False, 1), (8, 16, 4096, 128, False, 4),
                                       (8, 32, 4096, 128, True, 8)):
        q, do = (torch.randn(B, S, H, D, device="cuda", dtype=torch.float16) for _ in range(2))
        k, v = (torch.randn(B, S, H // groups, D, device="cuda", dtype=torch.float16) for _ in range(2))
        qt, kt, vt = (x.transpose(1, 2).detach().requires_grad_() for x in (q, k, v))
        gqa = dict(enable_gqa=True) if groups > 1 else {}
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            ot = torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=causal, **gqa)
        scores = attention_lse(q, k.repeat_interleave(groups, 2), causal)
        o = ot.detach().transpose(1, 2).contiguous()
        grads = torch.autograd.grad(ot, (qt, kt, vt), do.transpose(1, 2), retain_graph=True)
        ref = [g.transpose(1, 2).double() for g in grads]

        def sdpa_bwd(backend):
            with sdpa_kernel(backend):
                out = torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=causal, **gqa)
            return lambda: torch.autograd.grad(out, (qt, kt, vt), do.transpose(1, 2), retain_graph=True)

        best = None
        for t in tiles:
            try:
                got = ex.attention_backward(q, k, v, o, do, scores, causal, **t)
            except Exception as exc:  # a tile choice that does not compile is skipped, said so
                print(f"  tiles {t}: {type(exc).__name__}: {str(exc)[:120]}", flush=True)
                continue
            err = max(((g.double() - r).norm() / r.norm()).item() for g, r in zip(got, ref))
            ms = side_by_side({"ours": lambda t=t: ex.attention_backward(q, k, v, o, do, scores, causal, **t)},
                              rounds=5)["ours"]
            print(f"  tiles {t}: {ms:.3f} ms, rel err {err:.1e}", flush=True)
            if best is None or ms < best[0]:
                best = (ms, t, err)
        flops = 10 * B * H * S * S * D / (2 if causal else 1)
        ms = side_by_side({"flash": sdpa_bwd(SDPBackend.FLASH_ATTENTION), "cudnn": sdpa_bwd(SDPBackend.CUDNN_ATTENTION)},
                          rounds=5)
        name = f"attn bwd B{B} H{H} S{S} D{D}{' causal' if causal else ''}{f' groups {groups}' if groups > 1 else ''}"
        if best is None:
            rows.append([name, "-", "none compiled", "-", f"{flops / ms['flash'] / 1e9:.0f}",
                         f"{flops / ms['cudnn'] / 1e9:.0f}", "-"])
        else:
            ours = flops / best[0] / 1e9
            tile = f"{best[1]['block_M']}x{best[1]['block_N']} s{best[1]['num_stages']} t{best[1]['threads']}" + \
                (" global stats" if best[1].get("stats") == "global" else " shared stats")
            rows.append([name, f"{best[2]:.1e}", tile, f"{ours:.0f}", f"{flops / ms['flash'] / 1e9:.0f}",
                         f"{flops / ms['cudnn'] / 1e9:.0f}", f"{ours / (flops / ms['cudnn'] / 1e9):.2f}x"])
        print(" | ".join(rows[-1]), flush=True)
        del qt, kt, vt, ot, grads
    return ["case", "rel err", "tile", "ours TFLOP/s", "SDPA flash bwd", "SDPA cuDNN bwd", "vs cuDNN"], rows


#: (kind, batch, seq, heads, dim): TileLang's linear attention example's default shape and a long
#: one; its retention example's default (a fixed decay per head: our gated form) and a short one.
#: bench/linear_attention_tilelang.py times TileLang's own kernels on the same list.
LINATTN_SHAPES = (("linear", 1, 512, 16, 128), ("linear", 8, 4096, 16, 128),
                  ("retention", 8, 4096, 32, 128), ("retention", 1, 2048, 16, 128))
#: (block_V, threads, block_K): block_K None = dim_k whole; else split, partial outputs added into a
#: float32 O zeroed in the timed call (as TileLang's example is timed)
LINATTN_TILES = ((64, 128, None), (128, 128, None), (128, 256, None), (64, 256, None), (64, 128, 64),
                 (64, 256, 64), (128, 256, 64))


def _tilelang_times(kind: str) -> dict:
    """{(kind, batch, seq, heads, dim): ms} from the file TILELANG_LINATTN names (the probe's
    output), or {} where there is none."""
    import os

    path = os.environ.get("TILELANG_LINATTN")
    if not path or not os.path.exists(path):
        return {}
    out = {}
    for line in open(path):
        parts = line.split()
        if len(parts) == 7 and parts[0] == "TL" and parts[1] == kind:
            out[(kind, *map(int, parts[2:6]))] = float(parts[6])
    return out


def linear_attention_rows(pass_configs):
    """Chunked linear attention forward (examples/linear_attention/chunked_linear_attention.py),
    fp16, chunk 64, against TileLang 0.1.15's examples on the same shapes (linear_attn_fwd: no
    decay; retention_fwd: a fixed decay per head, here through the per-token log-decay input).
    Floors: FLOPs over 790 TFLOP/s; q, k, v, o once over 4.3 TB/s. Errors against the token
    recurrence in float64 on the first 256 tokens of batch 0."""
    la = example("linear_attention/chunked_linear_attention.py")
    rows = []
    for kind, B, S, H, D in LINATTN_SHAPES:
        q, k, v = (torch.randn(B, S, H, D, device="cuda", dtype=torch.float16) / D ** 0.25 for _ in range(3))
        g = torch.zeros(B, S, H, device="cuda")
        if kind == "retention":  # TileLang's example: log2 decay log2(1 - 2^(-5 - h)) per head
            g += torch.log1p(-torch.exp2(-5.0 - torch.arange(H, device="cuda", dtype=torch.float32)))
        ref_o, _ = la.reference(q[:1, :256].cpu(), k[:1, :256].cpu(), v[:1, :256].cpu(), g[:1, :256].cpu())
        fns, errs = {}, {}
        for block_V, threads, block_K in LINATTN_TILES:
            name = f"ours V{block_V} t{threads}" + (f" K{block_K}" if block_K else "")
            try:
                if block_K:
                    kernel, secs = compile_timed(la.chunked_linear_attention_split_k, B, S, H, D, D,
                                                 block_V=block_V, block_K=block_K, threads=threads,
                                                 pass_configs=pass_configs)
                else:
                    kernel, secs = compile_timed(la.chunked_linear_attention, B, S, H, D, D, block_V=block_V,
                                                 threads=threads, pass_configs=pass_configs)
            except Exception as exc:  # a tile that does not fit: say so, keep the others
                print(name, type(exc).__name__, str(exc)[:200], flush=True)
                continue
            if block_K:
                o = torch.zeros(B, S, H, D, device="cuda")

                def run(kernel=kernel, o=o):
                    o.zero_()  # the blocks add their partial outputs into O
                    kernel(q, k, v, g, o)
                run()
            else:
                o, _ = kernel(q, k, v, g)
                run = lambda kernel=kernel: kernel(q, k, v, g)  # noqa: E731
            errs[name] = ((o[:1, :256].cpu().double() - ref_o).norm() / ref_o.norm()).item()
            fns[name] = run
        ms = side_by_side(fns, per_round=5)
        best = min(fns, key=lambda n: ms[n])
        flops = B * H * -(-S // 64) * (2 * 64 * 64 * 2 * D + 4 * 64 * D * D)
        nbytes = 4 * B * S * H * D * 2
        tl_ms = _tilelang_times(kind).get((kind, B, S, H, D))
        rows.append([f"{kind} B{B} S{S} H{H} D{D}", f"{errs[best]:.1e}", best[5:], f"{ms[best] * 1e3:.1f}",
                     f"{tl_ms * 1e3:.1f}" if tl_ms else "-", f"{tl_ms / ms[best]:.2f}x" if tl_ms else "-",
                     f"{flops / ms[best] / 1e9:.0f}", f"{nbytes / ms[best] / 1e6:.0f}",
                     f"{max(flops / 790e12, nbytes / 4300e9) * 1e6:.1f}"])
        print(" | ".join(rows[-1]), {n: round(t * 1e3, 1) for n, t in ms.items()}, flush=True)
    return ["case", "rel err", "tile", "ours us", "TileLang us", "TileLang/ours", "TFLOP/s", "GB/s", "floor us"], rows
