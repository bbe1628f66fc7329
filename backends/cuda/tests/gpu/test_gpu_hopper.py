"""On an sm_90 GPU: the Hopper schedules (wgmma; TMA + warp specialization) agree with torch in
float64, and so do the fallbacks the pass configs select (skipped elsewhere)."""

import importlib.util
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] != 9,
                                reason="needs an sm_90 (Hopper) GPU")

import kernels  # noqa: E402
import tilelang_core.language as T  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[4] / "examples"

#: default = wgmma + TMA producer warpgroup; then wgmma with the cp.async pipeline; then mma.sync
SCHEDULES = {"ws_tma_wgmma": {}, "ws_persistent": {"enable_persistent": True},
             "ws_no_overlap": {"disable_wgmma_overlap": True}, "ws_no_pingpong": {"disable_pingpong": True},
             "ws_thread_store": {"disable_tma_store": True}, "ws_stream_k": {"enable_stream_k": True},
             "ws_overlap_block": {"enable_overlap_block": True},  # opt-in: correct, not faster
             "ws_every_mask": {"disable_conditional_mask": True},
             "ws_one_block": {"disable_two_blocks_per_sm": True},
             "cp_async_wgmma": {"disable_warp_specialized": True},
             "ws_tma_mma_sync": {"disable_wgmma": True},
             "mma_sync": {"disable_wgmma": True, "disable_warp_specialized": True}}
#: attention also with its row blocks launched longest first (opt-in; GEMM grids do not change)
#: and with one CTA per tile (attention is persistent by default; GEMM is not, so this is its default)
ATTN_SCHEDULES = {**SCHEDULES, "ws_longest_first": {"enable_longest_first": True},
                  "ws_one_cta_per_tile": {"disable_persistent": True},
                  "mma_sync_longest_first": {**SCHEDULES["mma_sync"], "enable_longest_first": True}}


class Target:
    arch = "sm_90a"


def build(func, tmp_path, **options):
    from tilelang_cuda.options import CudaOptions
    from tilelang_cuda.pipeline import CudaBackend

    tmp_path.mkdir(parents=True, exist_ok=True)
    backend = CudaBackend(Target())
    opts = CudaOptions(**options)
    mod = backend.lower(func, opts)
    source = backend.codegen(mod, opts)
    backend.build(mod, source, opts, tmp_path)
    return backend.load(tmp_path / "kernel.so"), source


def example(relpath):
    spec = importlib.util.spec_from_file_location("hopper_" + Path(relpath).stem, EXAMPLES / relpath)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check_gemm(kernel, M, N, K, trans_b, tdt):
    a = torch.randn(M, K, device="cuda", dtype=tdt)
    b = torch.randn(N, K, device="cuda", dtype=tdt) if trans_b else torch.randn(K, N, device="cuda", dtype=tdt)
    c = torch.full((M, N), float("nan"), device="cuda", dtype=tdt)
    kernel["gemm"](a, b, c)
    torch.cuda.synchronize()
    ref = a.double() @ (b.double().T if trans_b else b.double())
    err = ((c.double() - ref).norm() / ref.norm()).item()
    assert err < 5e-3, f"relative error {err}"


@pytest.mark.parametrize("schedule", sorted(SCHEDULES))
@pytest.mark.parametrize("shape,tiles,trans_b,dtype", [
    ((1024, 1024, 1024), dict(bm=128, bn=256, bk=64, threads=256, stages=3), False, "float16"),
    ((1000, 520, 264), dict(bm=128, bn=256, bk=64, threads=256, stages=3), False, "float16"),  # ragged
    ((512, 384, 320), dict(bm=128, bn=128, bk=64, threads=256, stages=4), True, "float16"),
    ((384, 256, 512), dict(bm=128, bn=128, bk=64, threads=128, stages=2), False, "bfloat16"),  # 2 slabs/WG
    ((256, 512, 64), dict(bm=64, bn=256, bk=64, threads=256, stages=2), False, "float16"),  # 1 iteration
    ((200, 200, 40), dict(bm=64, bn=128, bk=64, threads=128, stages=2), False, "float16"),  # K < tile
    ((512, 256, 320), dict(bm=128, bn=128, bk=64, threads=256, stages=1), False, "float16"),  # 1-slot ring
    ((1000, 520, 456), dict(bm=128, bn=128, bk=64, threads=256, stages=5), False, "float16"),  # chain (5 slots)
    ((1000, 520, 264), dict(bm=192, bn=256, bk=64, threads=384, stages=3), False, "float16"),  # 3 WGs, m64n128
    ((1000, 520, 264), dict(bm=128, bn=128, bk=32, threads=128, stages=4), False, "float16"),  # A: 64-byte swizzle
    ((520, 384, 328), dict(bm=128, bn=256, bk=32, threads=256, stages=4), True, "bfloat16"),  # A and B: 64-byte
])
def test_gemm_schedules_match_torch(tmp_path, schedule, shape, tiles, trans_b, dtype):
    M, N, K = shape
    func = kernels.make_gemm(M, N, K, dtype=getattr(T, dtype), out_dtype=getattr(T, dtype), trans_b=trans_b,
                             **tiles)
    kernel, source = build(func, tmp_path, **SCHEDULES[schedule])
    kernel_code = source[source.find('extern "C" __global__'):]  # calls, not the helpers' definitions
    assert ("tl_wgmma_ss" in kernel_code) == ("disable_wgmma" not in SCHEDULES[schedule])
    assert ("tl_tma_load" in kernel_code) == ("disable_warp_specialized" not in SCHEDULES[schedule])
    check_gemm(kernel, M, N, K, trans_b, getattr(torch, dtype))


@pytest.mark.parametrize("schedule", ["ws_tma_wgmma", "cp_async_wgmma", "ws_one_block", "mma_sync"])
@pytest.mark.parametrize("shape,tiles,trans_b", [
    ((1000, 520, 264), dict(bm=128, bn=256, bk=64, threads=256, stages=3), False),  # ragged
    ((384, 256, 512), dict(bm=128, bn=128, bk=64, threads=128, stages=2), True),  # 2 slabs per warpgroup
    ((520, 384, 328), dict(bm=128, bn=128, bk=32, threads=128, stages=4), True),  # 64-byte swizzles
])
def test_fp16_accumulator_gemms_match_torch(tmp_path, schedule, shape, tiles, trans_b):
    """fp16 operands into an fp16 accumulator: wgmma's and mma.sync's .f16 forms. The error is the
    fp16 sums' own (each instruction rounds once per 16 products), well inside 1e-2 relative."""
    M, N, K = shape
    func = kernels.make_gemm(M, N, K, accum_dtype=T.float16, trans_b=trans_b, **tiles)
    kernel, source = build(func, tmp_path, **SCHEDULES[schedule])
    assert ("_f16acc<" in source) == (schedule != "mma_sync")
    assert schedule != "mma_sync" or "tl_mma_m16n8k16_f16_f16(" in source
    torch.manual_seed(0)
    a = torch.randn(M, K, device="cuda", dtype=torch.float16) / 4
    b = (torch.randn(N, K, device="cuda", dtype=torch.float16) if trans_b
         else torch.randn(K, N, device="cuda", dtype=torch.float16)) / 4
    c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)
    kernel["gemm"](a, b, c)
    torch.cuda.synchronize()
    ref = a.double() @ (b.double().T if trans_b else b.double())
    err = ((c.double() - ref).norm() / ref.norm()).item()
    assert err < 1e-2, f"relative error {err}"


def test_an_fp16_accumulator_feeds_the_next_wgmma_from_registers(tmp_path):
    """The first gemm's fp16 accumulator is the second's A operand (wgmma's register form, fp16
    accumulate too): against the fp16 sums themselves, two per-16 rounding steps of error."""
    kernel, source = build(kernels.make_gemm_from_registers(T.GemmWarpPolicy.FullRow, fp16_accumulators=True), tmp_path)
    assert "tl_wgmma_rs_f16_n64_f16acc<" in source
    torch.manual_seed(0)
    a, b, c = (torch.randn(*shape, device="cuda", dtype=torch.float16) / 4 for shape in ((64, 32), (32, 64), (64, 64)))
    out = torch.full((64, 64), float("nan"), device="cuda", dtype=torch.float16)
    kernel["gemm_chain"](a, b, c, out)
    torch.cuda.synchronize()
    ref = (a.double() @ b.double()).half().double() @ c.double()
    err = ((out.double() - ref).norm() / ref.norm()).item()
    assert err < 5e-3, f"relative error {err}"


@pytest.mark.parametrize("schedule", sorted(ATTN_SCHEDULES))
@pytest.mark.parametrize("seq_len,dim,causal,tiles", [
    (1000, 128, False, dict(block_M=128, block_N=128, threads=256)),
    (1024, 128, False, dict(block_M=128, block_N=128, threads=256)),  # mask provably 0: zero-init S
    (1000, 64, True, dict(block_M=128, block_N=128, threads=256)),
    (300, 64, False, {}),  # the example's default tiles: one warpgroup
    (64, 64, True, dict(block_M=64, block_N=64, threads=128)),  # a single-iteration pipeline
    (130, 64, False, dict(block_M=64, block_N=64, threads=128)),  # 3 iterations, the last ragged
    (520, 128, True, dict(block_M=128, block_N=64, threads=256, num_stages=3)),  # 1..9 iterations
    (1000, 64, True, dict(block_M=192, block_N=128, threads=384)),  # three consumer warpgroups (24/160 regs)
    (1000, 64, False, dict(block_M=192, block_N=128, threads=384)),
    (1000, 128, True, dict(block_M=128, block_N=64, threads=128)),  # mma.sync's best: 32 rows per warp
])
def test_flash_attention_schedules_match_torch(tmp_path, schedule, seq_len, dim, causal, tiles):
    import tilelang_core as tl

    ex = example("attention/flash_attention.py")
    func = ex.flash_attention.get_tir(2, 3, seq_len, dim, causal, **tiles)
    kernel = tl.compile(func, out_idx=[3], target="cuda:sm_90a", pass_configs=ATTN_SCHEDULES[schedule])
    q, k, v = (torch.randn(2, seq_len, 3, dim, device="cuda", dtype=torch.float16) for _ in range(3))
    out = kernel(q, k, v)
    ref = ex.reference(q.cpu(), k.cpu(), v.cpu(), causal)
    err = (out.cpu().double() - ref).abs().max().item()
    assert err < 2e-2, f"max error {err}"


@pytest.mark.parametrize("batch,heads,seq_len,dim,tiles,options", [
    (4, 9, 1024, 128, dict(block_M=128, block_N=128, threads=256), {}),  # 288 tiles: the default shares 156
    (1, 5, 4096, 128, dict(block_M=128, block_N=128, threads=256), {}),  # 160 tiles of 32 iterations, all cut
    (2, 17, 1152, 64, dict(block_M=192, block_N=128, threads=384), {"enable_stream_k": True}),  # 3 consumer WGs
    (2, 70, 384, 128, dict(block_M=128, block_N=128, threads=256), {"enable_stream_k": True}),  # 3 iterations
])
def test_stream_k_attention_matches_torch(tmp_path, batch, heads, seq_len, dim, tiles, options):
    """Non-causal attention (no key mask: stream-K declines masked loops) on grids whose last wave
    is partial on the H200's 132 SMs: the tail's row blocks are cut along the keys, and a finisher combines its partners' partial softmax
    states (row max, row sum, unnormalized O) before the epilogue. Every row matches float64
    torch, on two calls in a row and on a second stream."""
    import tilelang_core as tl

    ex = example("attention/flash_attention.py")
    func = ex.flash_attention.get_tir(batch, heads, seq_len, dim, False, **tiles)
    kernel = tl.compile(func, out_idx=[3], target="cuda:sm_90a", pass_configs=options)
    assert "combined by their row maxima" in kernel.get_kernel_source()
    q, k, v = (torch.randn(batch, seq_len, heads, dim, device="cuda", dtype=torch.float16) for _ in range(3))
    ref = ex.reference(q.cpu(), k.cpu(), v.cpu(), False)
    for stream in (None, None, torch.cuda.Stream()):
        with torch.cuda.stream(stream or torch.cuda.current_stream()):
            out = kernel(q, k, v)
        torch.cuda.synchronize()
        err = (out.cpu().double() - ref).abs().max().item()
        assert err < 2e-2, f"max error {err}"


@pytest.mark.parametrize("shape,tiles,trans_b,dtype", [
    ((4096, 4096, 4096), dict(bm=128, bn=256, bk=64, threads=256, stages=4), False, "float16"),  # tail 116 of 132
    ((2176, 2048, 1000), dict(bm=128, bn=256, bk=64, threads=256, stages=4), False, "bfloat16"),  # 4 + a wave, ragged K
    ((2560, 4096, 328), dict(bm=128, bn=256, bk=64, threads=256, stages=3), True, "float16"),  # 6 iterations per tile
    ((4096, 2304, 64), dict(bm=128, bn=256, bk=64, threads=256, stages=4), False, "float16"),  # 1 iteration per tile
    ((3000, 1000, 2000), dict(bm=128, bn=128, bk=64, threads=256, stages=4), False, "float16"),  # ragged M, N
])
def test_stream_k_gemm_matches_torch(tmp_path, shape, tiles, trans_b, dtype):
    """tl.enable_stream_k on grids whose last wave is partial on the H200's 132 SMs: every tile
    (split along K or not) matches torch, on three calls in a row (the flags start at zero on
    each launch) and on a second stream."""
    M, N, K = shape
    func = kernels.make_gemm(M, N, K, dtype=getattr(T, dtype), out_dtype=getattr(T, dtype), trans_b=trans_b,
                             **tiles)
    kernel, source = build(func, tmp_path, enable_stream_k=True)
    assert "stream-K: whole waves of tiles" in source
    for _ in range(3):
        check_gemm(kernel, M, N, K, trans_b, getattr(torch, dtype))
    with torch.cuda.stream(torch.cuda.Stream()):
        check_gemm(kernel, M, N, K, trans_b, getattr(torch, dtype))


def test_stream_k_by_default_with_a_symbolic_k(tmp_path):
    """The default schedule on a GEMM whose K is known only at call time: 17 x 8 = 136 tiles on
    132 SMs, so the host shares the tail along K where the iterations saved beat the cost model's
    19 (K = 2000: 32 iterations a tile) and keeps whole tiles where they do not (K = 200: 4). Both
    match torch; one build serves both."""
    M, N = 2176, 2048
    func = kernels.make_gemm(M, N, T.dynamic("k"), bm=128, bn=256, bk=64, threads=256, stages=4)
    kernel, source = build(func, tmp_path)
    assert "saves a CTA more than 19 iterations" in source
    for K in (2000, 200):
        a = torch.randn(M, K, device="cuda", dtype=torch.float16)
        b = torch.randn(K, N, device="cuda", dtype=torch.float16)
        c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)
        kernel["gemm"](a, b, c)
        torch.cuda.synchronize()
        ref = a.double() @ b.double()
        err = ((c.double() - ref).norm() / ref.norm()).item()
        assert err < 5e-3, f"K={K}: relative error {err}"


def test_gemm_chain_with_a_from_registers(tmp_path):
    """wgmma's register-A form: (A @ B) cast to fp16 feeds the next gemm without shared memory."""
    kernel, source = build(kernels.make_gemm_from_registers(T.GemmWarpPolicy.FullRow), tmp_path)
    assert "tl_wgmma_rs" in source
    a = torch.randn(64, 32, device="cuda", dtype=torch.float16)
    b = torch.randn(32, 64, device="cuda", dtype=torch.float16)
    c = torch.randn(64, 64, device="cuda", dtype=torch.float16) / 8
    out = torch.empty(64, 64, device="cuda", dtype=torch.float32)
    kernel["gemm_chain"](a, b, c, out)
    ab = (a.double() @ b.double()).half().double()
    torch.testing.assert_close(out.double(), ab @ c.double(), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("M, N1, N2, K", [(64, 64, 128, 32), (64, 64, 512, 64), (128, 64, 256, 32)])
def test_gemm_chain_with_a_copied_in_each_warpgroup_matches_torch(tmp_path, M, N1, N2, K):
    """Register-A wgmma where two warpgroups split N (MLA decode's split kernel): each holds a
    copy of A. (M=128 keeps the rows split, the copies unused.)"""
    kernel, source = build(kernels.make_gemm_from_replicated_registers(True, M, N1, N2, K), tmp_path)
    assert "tl_wgmma_rs" in source
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(N1, K, device="cuda", dtype=torch.float16)
    c = torch.randn(N1, N2, device="cuda", dtype=torch.float16) / 8
    out = torch.full((M, N2), float("nan"), device="cuda", dtype=torch.float32)
    kernel["gemm_chain"](a, b, c, out)
    ab = (a.double() @ b.double().T).half().double()
    torch.testing.assert_close(out.double(), ab @ c.double(), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("options", [{"disable_warp_specialized": True, "enable_gemm_batches": True},
                                     {"disable_warp_specialized": True}, {}])
def test_back_to_back_score_gemms_match_torch(tmp_path, options):
    """Two gemms in a row into one accumulator (MLA decode's scores): one wgmma batch on the
    cp.async path; the warp-specialized path for comparison."""
    M, N, D, P, steps = 64, 64, 128, 64, 3
    kernel, source = build(kernels.make_two_score_gemms(M, N, D, P, steps), tmp_path, **options)
    q, qp = torch.randn(M, D, device="cuda", dtype=torch.float16), torch.randn(M, P, device="cuda", dtype=torch.float16)
    k = torch.randn(steps * N, D, device="cuda", dtype=torch.float16)
    kp = torch.randn(steps * N, P, device="cuda", dtype=torch.float16)
    out = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float32)
    kernel["scores"](q, qp, k, kp, out)
    ref = sum(q.double() @ k[t * N:(t + 1) * N].double().T + qp.double() @ kp[t * N:(t + 1) * N].double().T
              for t in range(steps))
    torch.testing.assert_close(out.double(), ref, rtol=1e-3, atol=1e-2)


@pytest.mark.parametrize("bk", [128, 64])  # 64: rows of 64 bytes, the 64-byte swizzle
def test_fp8_gemm_on_wgmma_matches_torch(tmp_path, bk):
    """e4m3 operands (B stored N x K) on wgmma k32, fp32 accumulate, fp16 out; against float64 on
    the fp8 values themselves."""
    M, N, K = 1000, 520, 512
    func = kernels.make_gemm(M, N, K, bm=128, bn=256, bk=bk, threads=256, stages=3, dtype=T.float8_e4m3fn,
                             out_dtype=T.float16, trans_b=True)
    kernel, source = build(func, tmp_path)
    assert "tl_wgmma_ss_e4m3" in source and ("tl_wgmma_desc<2>" in source) == (bk == 64)
    a = (torch.randn(M, K, device="cuda") / 2).to(torch.float8_e4m3fn)
    b = (torch.randn(N, K, device="cuda") / 2).to(torch.float8_e4m3fn)
    c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)
    kernel["gemm"](a, b, c)
    ref = a.double() @ b.double().T
    err = ((c.double() - ref).norm() / ref.norm()).item()
    assert err < 2e-3, f"relative error {err}"


def test_transposed_a_gemm_matches_torch(tmp_path):
    """The example's transposed-A GEMM through tl.compile: wgmma reads A (stored K x M) MN-major."""
    import tilelang_core as tl

    ex = example("gemm/gemm.py")
    M, N, K = 1000, 520, 264
    func = ex.gemm.get_tir(M, N, K, True, False, block_M=128, block_N=128, block_K=64, num_stages=3, threads=256)
    kernel = tl.compile(func, out_idx=[-1], target="cuda:sm_90a")
    a = torch.randn(K, M, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    c = kernel(a, b)
    ref = a.double().T @ b.double()
    err = ((c.double() - ref).norm() / ref.norm()).item()
    assert err < 5e-3, f"relative error {err}"


@pytest.mark.parametrize("schedule", ["ws_tma_wgmma", "cp_async_wgmma"])
@pytest.mark.parametrize("trans_b", [False, True])
def test_transposed_a_gemm_on_wgmma_matches_torch(tmp_path, schedule, trans_b):
    """A stored K x M read by wgmma through the MN-major descriptor (ragged M, N and K)."""
    M, N, K = 1000, 520, 264
    func = kernels.make_gemm(M, N, K, bm=128, bn=128, bk=64, threads=256, stages=3, trans_a=True,
                             trans_b=trans_b)
    kernel, source = build(func, tmp_path, **SCHEDULES[schedule])
    assert "_f16_n128<1, " in source, "the gemm did not take wgmma's MN-major A form"
    a = torch.randn(K, M, device="cuda", dtype=torch.float16)
    b = torch.randn(N, K, device="cuda", dtype=torch.float16) if trans_b else torch.randn(K, N, device="cuda",
                                                                                           dtype=torch.float16)
    c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)
    kernel["gemm"](a, b, c)
    ref = a.double().T @ (b.double().T if trans_b else b.double())
    err = ((c.double() - ref).norm() / ref.norm()).item()
    assert err < 5e-3, f"relative error {err}"


def test_division_by_zero_in_a_warp_specialized_epilogue(tmp_path):
    """x / 0 in the consumers' epilogue gives inf / nan like torch, not a fault. (A reverted
    experiment faulted at the division's slow-path subroutine call in such an epilogue; a fully
    masked attention row, whose sum is 0, takes that path.)"""
    M, N, K = 256, 512, 256
    kernel, source = build(kernels.make_gemm_div(M, N, K), tmp_path)
    assert "tl_tma_load" in source and "tl_setmaxnreg_inc" in source
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    d = torch.rand(N, device="cuda") + 0.5
    d[::7] = 0.0
    c = torch.empty(M, N, device="cuda")
    kernel["gemm_div"](a, b, d, c)
    torch.cuda.synchronize()
    ref = (a.double() @ b.double()) / d.double()
    finite = torch.isfinite(ref)
    assert torch.equal(torch.isinf(c), torch.isinf(ref)) and torch.equal(torch.isnan(c), torch.isnan(ref))
    err = ((c.double() - ref)[finite].norm() / ref[finite].norm()).item()
    assert err < 5e-3, f"relative error {err}"


@pytest.mark.parametrize("schedule", ["ws_tma_wgmma", "ws_thread_store", "cp_async_wgmma", "mma_sync"])
@pytest.mark.parametrize("masked", [False, True])
def test_grouped_gemm_under_its_guard_matches_torch(tmp_path, schedule, masked):
    """examples/moe: the pipeline under `if tile_group[by] >= 0:` / `if by * bM < masked_m[g]:`
    (the guard wraps the producer/consumer split): random group sizes, an expert with no token,
    N and K not multiples of the tiles; skipped tiles stay NaN."""
    moe = example("moe/grouped_gemm.py")
    tiles = dict(block_M=128, block_N=128, block_K=64, num_stages=4, threads=256)
    G, N, K = 6, 520, 328
    sizes = [0, 1, 300, 129, 128, 77]
    b = torch.randn(G, N, K, device="cuda", dtype=torch.bfloat16)
    if masked:
        M_max = 320
        a = torch.randn(G, M_max, K, device="cuda", dtype=torch.bfloat16)
        func = moe.grouped_gemm_masked.get_tir(G, M_max, N, K, **tiles)
        args = (a, b, torch.tensor(sizes, dtype=torch.int32, device="cuda"))
        c = torch.full((G, M_max, N), float("nan"), device="cuda", dtype=torch.bfloat16)
        rows = [(c[g, :m], a[g, :m], g) for g, m in enumerate(sizes)]
        skipped = [c[g, -(-m // 128) * 128:] for g, m in enumerate(sizes)]
    else:
        M, starts, tile_group = moe.pad_groups(sizes, 128)
        a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        tile_group = torch.cat([tile_group, torch.tensor([-1], dtype=torch.int32)])  # a tile of padding
        M += 128
        a = torch.cat([a, torch.randn(128, K, device="cuda", dtype=torch.bfloat16)])
        func = moe.grouped_gemm_contiguous.get_tir(M, N, K, G, **tiles)
        args = (a, b, tile_group.cuda())
        c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
        rows = [(c[s:s + m], a[s:s + m], g) for g, (s, m) in enumerate(zip(starts, sizes))]
        skipped = [c[-128:]]
    kernel, source = build(func, tmp_path, **SCHEDULES[schedule])
    if schedule.startswith("ws"):
        assert "the pipeline runs under the kernel's block-uniform `if`" in source
    kernel["main"](*args, c)
    torch.cuda.synchronize()
    for got, x, g in rows:
        if len(x):
            ref = x.double() @ b[g].double().T
            assert ((got.double() - ref).norm() / ref.norm()).item() < 5e-3, (schedule, g)
    assert all(s.isnan().all() for s in skipped)


@pytest.mark.parametrize("schedule", ["ws_tma_wgmma", "cp_async_wgmma", "mma_sync"])
@pytest.mark.parametrize("M, N, K, group, dtype", [(1, 8192, 1024, 128, "float16"), (16, 1000, 2048, 128, "float16"),
                                                   (13, 520, 1024, 64, "bfloat16"), (24, 256, 512, 128, "float16")])
def test_w4a16_gemm_matches_torch(tmp_path, schedule, M, N, K, group, dtype):
    """examples/dequant: packed int4 weights through a uint8 TMA box (64-byte swizzle), decoded by
    the consumers into wgmma's register operand; against torch in float64."""
    dq = example("dequant/w4a16_gemm.py")
    tdt = getattr(torch, dtype)
    codes, s = dq.quantize(torch.randn(N, K), group)
    s = s.to(tdt)
    a = torch.randn(M, K, dtype=tdt)
    func = dq.w4a16_gemm.get_tir(M, N, K, group=group, block_N=64, block_K=128, num_stages=4, dtype=dtype)
    kernel, source = build(func, tmp_path, **SCHEDULES[schedule])
    if schedule == "ws_tma_wgmma":
        assert "TMA producer warpgroup" in source and "W_s" in source[:source.find("#ifdef")]
    c = torch.full((M, N), float("nan"), device="cuda", dtype=tdt)
    kernel["main"](a.cuda(), dq.pack_int4(codes).cuda(), s.cuda(), c)
    torch.cuda.synchronize()
    w = ((codes.double() - 8).view(N, K // group, group) * s.double()[..., None]).view(N, K)
    ref = a.double() @ w.T
    err = ((c.cpu().double() - ref).norm() / ref.norm()).item()
    assert err < (2e-3 if dtype == "float16" else 8e-3), err


@pytest.mark.parametrize("schedule", ["ws_tma_wgmma", "ws_no_overlap", "cp_async_wgmma"])
@pytest.mark.parametrize("M, N, K, tiles", [
    (1000, 520, 512, dict(block_M=128, block_N=128, num_stages=4, threads=256)),  # ragged M and N
    (256, 1024, 1024, dict(block_M=128, block_N=64, num_stages=3, threads=256)),  # 2 tiles per B scale
    (200, 384, 256, dict(block_M=64, block_N=128, num_stages=2, threads=128)),
    # two slabs an iteration, each promoted under the other's gemm (lazy waits)
    (1000, 520, 1024, dict(block_M=128, block_N=128, num_stages=3, threads=256, slabs=2)),
    (200, 384, 512, dict(block_M=64, block_N=128, num_stages=2, threads=128, slabs=2))])
def test_fp8_blockscaled_gemm_matches_torch(tmp_path, schedule, M, N, K, tiles):
    """examples/fp8: e4m3 wgmma per 128-deep slab into a fresh tile, promoted with the slab's
    1x128 / 128x128 scales; against torch in float64 on the dequantized operands."""
    bs = example("fp8/blockscaled_gemm.py")
    a, sa = bs.quantize_1x128(torch.randn(M, K, device="cuda"))
    b, sb = bs.quantize_128x128(torch.randn(N, K, device="cuda"))
    kernel, source = build(bs.blockscaled_gemm.get_tir(M, N, K, **tiles), tmp_path, **SCHEDULES[schedule])
    c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
    kernel["main"](a, b, sa, sb, c)
    torch.cuda.synchronize()
    ref = bs.reference(a, b, sa, sb)
    assert ((c.cpu().double() - ref).norm() / ref.norm()).item() < 5e-3


@pytest.mark.parametrize("tie", ["accumulator", "parallel"])
def test_gemms_tied_to_an_mma_sync_gemm_match_torch(tmp_path, tie):
    """Two gemms sharing a layout, one of them on an author-laid-out operand (mma.sync): both run
    on mma.sync (test_hopper_tied_accumulators.py), C = A1 @ B1 + A2 @ B2 against float64."""
    import test_hopper_tied_accumulators as tied

    a1, b1, a2, b2 = (torch.randn(64, 64, device="cuda", dtype=torch.float16) for _ in range(4))
    c = torch.full((64, 64), float("nan"), device="cuda")
    kernel, _ = build(tied.tied_gemms(tie), tmp_path)
    kernel["main"](a1, b1, a2, b2, c)
    torch.cuda.synchronize()
    ref = a1.double() @ b1.double() + a2.double() @ b2.double()
    assert ((c.double() - ref).norm() / ref.norm()).item() < 1e-5


@pytest.mark.parametrize("B,H,S,D,causal,tiles", [
    (2, 3, 100, 32, False, {}), (1, 2, 257, 64, True, {}), (2, 2, 512, 128, False, {}),
    (1, 4, 1000, 128, True, dict(block_M=64, block_N=128, num_stages=2, threads=256)),
    (1, 2, 384, 64, False, dict(block_M=128, block_N=64, num_stages=1, threads=256)),
    (1, 1, 1, 64, False, {}),
    # stats="global": TMA producer warpgroup, lazy wgmma waits, persistent tiles / stream-K pieces
    (2, 3, 100, 32, False, dict(stats="global")), (1, 2, 257, 64, True, dict(stats="global")),
    (2, 2, 512, 128, False, dict(stats="global")),
    (1, 4, 1000, 128, True, dict(block_M=64, block_N=128, num_stages=2, threads=256, stats="global")),
    (4, 8, 2048, 128, False, dict(block_M=64, block_N=128, num_stages=2, threads=256, stats="global")),
    (2, 4, 1024, 64, True, dict(block_M=64, block_N=64, num_stages=1, threads=128, stats="global")),
    (2, 4, 1000, 64, False, dict(block_M=128, block_N=128, num_stages=2, threads=256, stats="global")),
    # grouped-query attention: one loop over the group's heads, dK and dV summed in registers
    (2, 8, 1000, 128, False, dict(block_M=64, block_N=128, num_stages=2, threads=256, stats="global", groups=4)),
    (1, 6, 777, 64, True, dict(block_M=64, block_N=128, num_stages=2, threads=256, stats="global", groups=3)),
    (2, 4, 300, 64, True, dict(groups=2)),
    # stats="shared" at the bench tile: lse and delta by 1-D TMA boxes (test_linear_tma_boxes.py),
    # ragged lengths zero-filled past the end
    (2, 4, 1000, 128, False, dict(block_M=64, block_N=128, num_stages=2, threads=256)),
    (1, 6, 776, 128, True, dict(block_M=64, block_N=128, num_stages=2, threads=256, groups=3)),
    (2, 4, 1000, 64, True, dict(block_M=128, block_N=128, num_stages=2, threads=256))])
def test_flash_attention_backward_matches_autograd(B, H, S, D, causal, tiles):
    """examples/attention/flash_attention_bwd.py on the default sm_90a schedule: dQ, dK, dV against
    torch autograd in float64, ragged lengths and causal included."""
    ex = example("attention/flash_attention_bwd.py")
    assert ex.check(B, H, S, D, causal, device="cuda", **tiles) < 1e-2


@pytest.mark.parametrize("B,H,S,D,causal", [(2, 2, 512, 128, False), (1, 4, 1000, 128, True),
                                             (2, 4, 1024, 64, True), (1, 2, 257, 64, False)])
def test_flash_attention_backward_with_early_gemm_issue_matches_autograd(B, H, S, D, causal):
    """tl.enable_early_gemm_issue (consumer_schedule.issue_order): dP issued with S, dQ before dK."""
    ex = example("attention/flash_attention_bwd.py")
    ex.flash_bwd.pass_configs = {"tl.enable_early_gemm_issue": True}
    assert ex.check(B, H, S, D, causal, device="cuda", block_M=64, block_N=128, num_stages=2, threads=256,
                    stats="global") < 1e-2


@pytest.mark.parametrize("schedule", ["mma_sync", "ws_tma_mma_sync", "ws_tma_wgmma"])
@pytest.mark.parametrize("trans_a, trans_b", [(False, False), (False, True), (True, False)])
@pytest.mark.parametrize("layout_a, layout_b", [(None, "transposed"), ("transposed", None),
                                                ("row_blocks", "row_major"), ("transposed", "transposed")])
def test_gemm_on_annotated_operand_layouts_matches_torch(tmp_path, schedule, trans_a, trans_b, layout_a, layout_b):
    """Shared operands the author laid out (test_gemm_annotated_operands.py): a layout that breaks
    ldmatrix's 8-element rows is read element by element (it was read as if swizzled: a silent
    wrong answer found here); the others keep ldmatrix."""
    from test_gemm_annotated_operands import annotated_gemm

    M, N, K = 64, 64, 32
    a = torch.randn((K, M) if trans_a else (M, K), device="cuda", dtype=torch.float16)
    b = torch.randn((N, K) if trans_b else (K, N), device="cuda", dtype=torch.float16)
    c = torch.full((M, N), float("nan"), device="cuda")
    kernel, _ = build(annotated_gemm(M, N, K, trans_a, trans_b, layout_a, layout_b), tmp_path, **SCHEDULES[schedule])
    kernel["main"](a, b, c)
    torch.cuda.synchronize()
    ref = (a.T if trans_a else a).double() @ (b.T if trans_b else b).double()
    assert ((c.double() - ref).norm() / ref.norm()).item() < 1e-5


@pytest.mark.parametrize("M,N,rows,cols,col0", [(64, 128, 16, 32, 0), (20, 36, 16, 32, 4), (9, 64, 8, 64, 0)])
def test_float32_tile_atomics_from_shared_as_vector_reductions(tmp_path, M, N, rows, cols, col0):
    """tilelang_cuda/vector_atomics.py (red.global.add.v4.f32): blocks adding overlapping rows, ragged
    rows, a column offset; against float64 (test_vector_atomics.py has the interpreter's run)."""
    from test_vector_atomics import accumulate, expected

    src = torch.randn(3, rows, cols)
    d = torch.randn(M, N)
    want = expected(src.numpy(), d.numpy(), col0)
    kernel, source = build(accumulate(M, N, rows, cols, col0), tmp_path)
    assert "tl_red_add_v4(" in source
    dd = d.cuda()
    kernel["acc"](src.cuda(), dd)
    torch.cuda.synchronize()
    assert float((dd.cpu().double() - torch.from_numpy(want)).abs().max()) < 1e-5


@pytest.mark.parametrize("num_stages", [1, 2])
@pytest.mark.parametrize("batch, max_len, num_split", [(4, 2000, 4), (1, 700, 8), (9, 64, 1)])
def test_mla_decode_example_matches_torch(batch, max_len, num_split, num_stages):
    """examples/attention/mla_decode.py at DeepSeek's shape (128 heads, D 512 + 64) on the H200:
    paged cache with shuffled pages, ragged lengths, empty splits; against torch in float64."""
    import importlib.util

    mla = example("attention/mla_decode.py")
    assert mla.check(batch, 128, 512, 64, max_len, num_split, device="cuda", num_stages=num_stages) < 3e-3


@pytest.mark.parametrize("batch, seq_len, heads, dim, gated, tiles", [
    (2, 300, 3, 128, True, {}),                                   # ragged last chunk, 2 V slices
    (1, 257, 2, 128, False, dict(block_V=128, threads=256)),      # one V slice, two warpgroups
    (1, 64, 1, 64, True, dict(num_stages=1)),                     # one chunk, no pipeline
    (2, 300, 3, 128, True, dict(block_K=64)),                     # dim_k split: partial outputs added
])
def test_chunked_linear_attention_matches_the_recurrence(batch, seq_len, heads, dim, gated, tiles):
    """examples/linear_attention on the H200 (wgmma, cp.async stages, the staged decay scan)
    against the token recurrence in float64."""
    la = example("linear_attention/chunked_linear_attention.py")
    assert la.check(batch, seq_len, heads, dim, dim, gated, device="cuda", **tiles) < 3e-3


@pytest.mark.parametrize("maker_name, block_K", [("make_swizzled_layout", 64), ("make_swizzled_layout", 32),
                                                 ("make_full_bank_swizzled_layout", 128),
                                                 ("make_half_bank_swizzled_layout", 64)])  # the last on mma.sync
def test_swizzle_annotated_gemm_matches_torch(tmp_path, maker_name, block_K):
    """Gemm operands annotated with TileLang's swizzles (tests/test_swizzle_hints.py: wgmma where
    the layout is one wgmma reads or a make_swizzled_layout request, mma.sync otherwise)."""
    import tilelang_core.layout as L
    from test_swizzle_hints import annotated_gemm

    kernel, _ = build(annotated_gemm(64, 64, 512, getattr(L, maker_name), block_K), tmp_path)
    a = torch.randn(64, 512, device="cuda", dtype=torch.float16)
    b = torch.randn(64, 512, device="cuda", dtype=torch.float16)
    c = torch.full((64, 64), float("nan"), device="cuda", dtype=torch.float32)
    kernel["main"](a, b, c)
    torch.cuda.synchronize()
    ref = a.double() @ b.double().T
    assert ((c.double() - ref).norm() / ref.norm()).item() < 1e-4


@pytest.mark.parametrize("tiles, w_len", [(8, None), (8, 8 * 64 - 24), (3, None)])
def test_linear_box_scales(tiles, w_len, tmp_path):
    """A float32 run loaded by a 1-D TMA box each iteration (test_linear_tma_boxes.py's kernel):
    out[i, j] = sum_t (K Q_t^T)[i, j] W[t*64 + j], W past its end read as 0, against float64."""
    import test_linear_tma_boxes as linear

    kernel, source = build(linear.scaled_scores(tiles, w_len=w_len), tmp_path)
    assert "tl_tma_load<1>((&(((float*)smem_ptr)" in source
    n = w_len or tiles * 64
    k, q = (torch.randn(r, 64, device="cuda", dtype=torch.float16) for r in (64, tiles * 64))
    w = torch.randn(n + 64, device="cuda")  # (only the first n are the tensor's)
    out = torch.full((64, 64), float("nan"), device="cuda")
    kernel["main"](k, q, w[:n], out)
    torch.cuda.synchronize()
    wd = torch.zeros(tiles * 64, dtype=torch.float64)
    wd[:n] = w[:n].double().cpu()
    s = k.double().cpu() @ q.double().cpu().T  # (64, tiles * 64)
    ref = (s * wd[None, :]).view(64, tiles, 64).sum(1)
    assert ((out.double().cpu() - ref).norm() / ref.norm()).item() < 1e-5
