"""Every example, on the cpu reference backend: numerics against torch in float64 on random data
with sizes that do not divide the tiles, and each file run as a script the way a user would."""

import importlib.util
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st
import torch

import tilelang_core as tilelang
from tilelang_core.target import Target

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load(relpath: str):
    spec = importlib.util.spec_from_file_location(relpath.replace("/", "_")[:-3], EXAMPLES / relpath)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(autouse=True)
def on_cpu():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with Target("cpu"):
            yield


@pytest.mark.parametrize("trans_A, trans_B", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("dtype, tol", [(torch.float16, 1e-3), (torch.bfloat16, 8e-3)])
def test_gemm_with_transposes(trans_A, trans_B, dtype, tol):
    assert load("gemm/gemm.py").check(130, 72, 100, trans_A, trans_B, dtype=dtype) < tol


def test_gemm_with_other_tiles_and_float32():
    gemm = load("gemm/gemm.py")
    assert gemm.check(67, 33, 45, dtype=torch.float32, block_M=32, block_N=16, block_K=16) < 1e-6


def test_split_k_gemm_accumulates_every_slice():
    assert load("gemm/gemm_splitk.py").check(100, 70, 300, split_k=3) < 1e-5


@pytest.mark.parametrize("dtype, tol", [(torch.float16, 1e-3), (torch.bfloat16, 8e-3), (torch.float32, 1e-6)])
def test_softmax(dtype, tol):
    assert load("softmax/softmax.py").check(37, 100, dtype=dtype) < tol


@pytest.mark.parametrize("name", ["rms_norm", "layer_norm"])
@pytest.mark.parametrize("dtype, tol", [(torch.float16, 1e-3), (torch.bfloat16, 8e-3), (torch.float32, 1e-6)])
def test_norms(name, dtype, tol):
    assert load(f"norm/{name}.py").check(19, 72, dtype=dtype) < tol


@pytest.mark.parametrize("is_causal", [False, True])
def test_flash_attention(is_causal):
    assert load("attention/flash_attention.py").check(1, 2, 100, 32, is_causal, block_M=32, block_N=32) < 2e-3


def test_flash_attention_with_unequal_tiles():
    attention = load("attention/flash_attention.py")
    assert attention.check(1, 1, 77, 16, True, block_M=16, block_N=32) < 2e-3


@pytest.mark.parametrize("dtype, tol", [(torch.float32, 1e-6), (torch.float16, 1e-3)])
def test_scale_add(dtype, tol):
    assert load("elementwise/scale_add.py").check(33, 130, 0.75, dtype=dtype) < tol


@pytest.mark.parametrize("batch, heads, max_len, num_split, page_size, tiles", [
    (3, 16, 150, 3, 32, {"block_N": 32}),          # ragged lengths, shuffled pages
    (2, 32, 70, 4, 64, {"block_H": 16}),           # more splits than tiles: empty splits
    (1, 16, 1, 1, 32, {"block_N": 16}),            # a one-token sequence, two tiles per page
])
def test_mla_decode_paged_split_kv(batch, heads, max_len, num_split, page_size, tiles):
    mla = load("attention/mla_decode.py")
    assert mla.check(batch, heads, 64, 16, max_len, num_split, page_size=page_size, **tiles) < 3e-3


SCRIPTS = [
    ["linear_attention/chunked_linear_attention.py", "--batch", "1", "--seq-len", "70", "--heads", "2",
     "--dim-k", "32", "--dim-v", "64", "--gated"],
    ["attention/mla_decode.py", "--batch", "2", "--heads", "16", "--max-len", "90", "--num-split", "2"],
    ["quickstart.py", "--m", "70", "--n", "40", "--k", "50"],
    ["gemm/gemm.py", "--m", "70", "--n", "40", "--k", "50", "--trans-a"],
    ["gemm/gemm_splitk.py", "--m", "70", "--n", "40", "--k", "130", "--split-k", "2"],
    ["softmax/softmax.py", "--m", "20", "--n", "30"],
    ["norm/rms_norm.py", "--m", "20", "--n", "30"],
    ["norm/layer_norm.py", "--m", "20", "--n", "30"],
    ["attention/flash_attention.py", "--seq-len", "50", "--dim", "16", "--heads", "1", "--batch", "1",
     "--is-causal"],
    ["elementwise/scale_add.py", "--m", "20", "--n", "30"],
    ["moe/grouped_gemm.py", "--groups", "3", "--n", "40", "--k", "24", "--tokens", "50", "--masked"],
    ["dequant/w4a16_gemm.py", "--m", "3", "--n", "72", "--k", "256"],
    ["fp8/blockscaled_gemm.py", "--m", "40", "--n", "136", "--k", "256"],
    ["attention/flash_attention_bwd.py", "--batch", "1", "--heads", "2", "--seq-len", "40", "--dim", "16",
     "--is-causal"],
    ["attention/flash_attention_bwd.py", "--batch", "1", "--heads", "4", "--seq-len", "40", "--dim", "16",
     "--groups", "2"],
]


@pytest.mark.parametrize("argv", SCRIPTS, ids=[a[0] for a in SCRIPTS])
def test_runs_as_a_script(argv, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TILELANG_")}
    env["TILELANG_CACHE_DIR"] = str(tmp_path)
    out = subprocess.run([sys.executable, str(EXAMPLES / argv[0]), *argv[1:]], capture_output=True, text=True,
                         env=env, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "OK" in out.stdout and "cpu reference backend" in out.stderr


def test_quickstart_shows_the_kernel_body_not_the_preamble():
    quickstart = load("quickstart.py")
    out = subprocess.run([sys.executable, str(EXAMPLES / "quickstart.py"), "--m", "64", "--n", "64", "--k", "32"],
                         capture_output=True, text=True, timeout=300,
                         env={k: v for k, v in os.environ.items() if not k.startswith("TILELANG_")})
    shown = out.stdout.split("=== generated source", 1)[1]
    assert "private constant" not in shown and ("parallel_lambda" in shown or "for_begin" in shown)  # loops
    cuda = ["#include <cuda_fp16.h>", "__device__ int helper();", 'extern "C" __global__ void k(float* A) {', "}"]
    assert quickstart.kernel_body_line(cuda) == 2
    assert quickstart.kernel_body_line(["#include <metal_stdlib>", "kernel void k(device float* A) {"]) == 1
    assert quickstart.kernel_body_line(["nothing here"]) == 0


def test_T_compile_and_tilelang_compile_are_the_same_entry_point():
    import numpy as np

    import tilelang_core as tilelang
    import tilelang_core.language as T

    assert T.compile is tilelang.compile
    kernel = T.compile(load("elementwise/scale_add.py").scale_add.get_tir(37, 41, 2.0), out_idx=[-1], target="cpu")
    a, b = np.random.rand(37, 41).astype("float32"), np.random.rand(37, 41).astype("float32")
    np.testing.assert_allclose(kernel(a, b), 2.0 * a.astype("float64") + b, rtol=1e-6)


@pytest.mark.parametrize("M, N, group, mn_major", [(37, 256, 128, False), (1, 384, 128, False), (20, 256, 256, False),
                                                 (37, 384, 128, True), (1, 256, 256, True)])
def test_swiglu_fp8_quant(M, N, group, mn_major):
    """Scales exact to float64's, dequantized values within e4m3's rounding, ragged M, one scale
    per token (group = N), and scales stored MN-major (DeepGEMM's layout, S.T given back)."""
    assert load("quant/swiglu_fp8_quant.py").check(M, N, group=group, scales_mn_major=mn_major) < 0.04


def test_swiglu_fp8_quant_values_match_torch():
    """Every e4m3 value is torch's rounding of y * (448 / amax) (or a neighbour where it sits on a
    rounding boundary that float32 and float64 see on different sides)."""
    quant = load("quant/swiglu_fp8_quant.py")
    x = (torch.randn(45, 512) * 3).bfloat16()
    q, s = quant.swiglu_fp8_quant(45, 256)(x)
    _, _, ref = quant.reference(x)
    differ = (q.double() != ref)
    assert differ.float().mean().item() < 1e-3
    assert (q.double() - ref).abs().max().item() <= 32  # one e4m3 step at the top of the range


@pytest.mark.parametrize("groups, N, K, tokens, masked", [
    (4, 72, 40, 90, False), (4, 72, 40, 90, True),  # N, K not multiples of the tiles
    (1, 32, 16, 1, False), (3, 48, 24, 0, True)])  # one token; no token at all
def test_grouped_gemm(groups, N, K, tokens, masked):
    """Random group sizes (the first expert gets no token), rows of each group against torch in
    float64; the contiguous layout with each group padded to a tile of rows."""
    moe = load("moe/grouped_gemm.py")
    tiles = dict(block_M=32, block_N=32, block_K=16, num_stages=2, threads=128)
    assert moe.check(groups, N, K, tokens, masked=masked, **tiles) < 1e-2


def test_grouped_gemm_skips_padding_tiles_and_masked_rows():
    """A contiguous tile of padding (-1) is not written, nor are masked rows' tiles with no valid row."""
    moe = load("moe/grouped_gemm.py")
    tiles = dict(block_M=16, block_N=16, block_K=16, num_stages=1, threads=128)
    a, b = torch.randn(48, 16).bfloat16(), torch.randn(2, 16, 16).bfloat16()
    kernel = moe.grouped_gemm_contiguous(48, 16, 16, 2, **tiles)
    c = kernel(a, b, torch.tensor([1, -1, 0], dtype=torch.int32))
    torch.testing.assert_close(c[:16].double(), a[:16].double() @ b[1].double().T, rtol=1e-2, atol=1e-2)
    torch.testing.assert_close(c[32:].double(), a[32:].double() @ b[0].double().T, rtol=1e-2, atol=1e-2)
    out = torch.full((2, 48, 16), 7.0).bfloat16()
    moe.grouped_gemm_masked.get_tir(2, 48, 16, 16, **tiles)
    masked = tilelang.compile(moe.grouped_gemm_masked.get_tir(2, 48, 16, 16, **tiles), target="cpu")
    a3 = torch.randn(2, 48, 16).bfloat16()
    masked(a3, b, torch.tensor([17, 0], dtype=torch.int32), out)
    torch.testing.assert_close(out[0, :17].double(), a3[0, :17].double() @ b[0].double().T, rtol=1e-2, atol=1e-2)
    assert (out[0, 32:] == 7).all() and (out[1] == 7).all()  # tiles with no valid row: untouched


@pytest.mark.parametrize("M, N, K, group, block_K, dtype", [
    (1, 64, 256, 128, 128, torch.float16), (5, 100, 512, 128, 128, torch.float16),  # N not a multiple of the tile
    (16, 128, 256, 64, 128, torch.float16), (20, 64, 256, 128, 64, torch.float16),  # 2 groups / tile; 2 tiles / group
    (7, 96, 256, 128, 128, torch.bfloat16)])
def test_w4a16_gemm(M, N, K, group, block_K, dtype):
    """Against torch in float64 on the dequantized weights; token counts from 1 to past 16."""
    err = load("dequant/w4a16_gemm.py").check(M, N, K, group=group, dtype=dtype, block_N=64, block_K=block_K,
                                               num_stages=2)
    assert err < (2e-3 if dtype == torch.float16 else 8e-3)


def test_w4a16_decodes_every_code():
    """Each of the 16 codes in both nibbles, on one scale: W = (code - 8) * s exactly."""
    dq = load("dequant/w4a16_gemm.py")
    N, K = 64, 128
    codes = torch.arange(N * K).remainder(16).view(N, K).to(torch.uint8)
    s = torch.full((N, 1), 0.5, dtype=torch.float16)
    eye = torch.eye(K, dtype=torch.float16)[:16]  # C[m, n] = W[n, m]: the first 16 columns of W
    c = dq.w4a16_gemm(16, N, K, block_N=64, block_K=128, num_stages=1)(eye, dq.pack_int4(codes), s)
    assert torch.equal(c.double(), (codes[:, :16].double().T - 8) * 0.5)


@pytest.mark.parametrize("M, N, K, tiles", [
    (100, 200, 256, dict(block_M=64, block_N=64, num_stages=2, threads=128)),  # M, N ragged; 2 tiles per B scale
    (1, 128, 384, dict(block_M=64, block_N=128, num_stages=2, threads=128)),  # one token, 3 slabs
    (70, 300, 128, dict(block_M=64, block_N=32, num_stages=1, threads=128)),  # 4 tiles per B scale
    (100, 200, 512, dict(block_M=64, block_N=64, num_stages=2, threads=128, slabs=2)),  # two slabs an iteration
    (1, 128, 256, dict(block_M=64, block_N=128, num_stages=1, threads=128, slabs=2)),
    (130, 128, 512, {}), (130, 128, 384, {})])  # the defaults: two slabs where K / 128 is even, else one
def test_fp8_blockscaled_gemm(M, N, K, tiles):
    """Against torch in float64 on the dequantized operands: every slab scaled by its own scales."""
    assert load("fp8/blockscaled_gemm.py").check(M, N, K, **tiles) < 5e-3


def test_fp8_blockscaled_gemm_default_slabs_follow_k():
    """Two slabs an iteration (2 stages) where the slab count is even, else one (4 stages)."""
    bs = load("fp8/blockscaled_gemm.py")
    two, one = (bs.blockscaled_gemm.get_tir(256, 128, K).script() for K in (512, 384))
    assert two.count("tl_gemm(") == 2 and one.count("tl_gemm(") == 1
    # four stages asked for: one slab (two slabs of four stages would not fit in shared memory)
    assert bs.blockscaled_gemm.get_tir(256, 128, 512, num_stages=4).script().count("tl_gemm(") == 1
    assert bs.blockscaled_gemm.get_tir(256, 128, 512, num_stages=3).script().count("tl_gemm(") == 2


def test_fp8_blockscaled_gemm_refuses_tiles_wider_than_a_scale_block():
    with pytest.raises(AssertionError, match="must divide 128"):
        load("fp8/blockscaled_gemm.py").blockscaled_gemm.get_tir(256, 512, 256, block_N=256)


def test_fp8_blockscaled_gemm_applies_each_slab_its_scales():
    """Equal values, scales that differ per slab and per 128-row block of B: a kernel that applied
    one scale per tile, or the first slab's to all, would be off by large factors."""
    bs = load("fp8/blockscaled_gemm.py")
    M, N, K = 8, 256, 256
    a = torch.ones(M, K).to(torch.float8_e4m3fn)
    b = torch.ones(N, K).to(torch.float8_e4m3fn)
    sa = torch.tensor([[1.0, 2.0]]).repeat(M, 1)
    sb = torch.tensor([[1.0, 10.0], [100.0, 1000.0]])
    c = bs.blockscaled_gemm(M, N, K, block_M=64, block_N=64, num_stages=1, threads=128)(a, b, sa, sb)
    want = torch.tensor([128 * (1 * 1 + 2 * 10.0)] * 128 + [128 * (1 * 100 + 2 * 1000.0)] * 128)
    torch.testing.assert_close(c.float(), want.expand(M, N), rtol=1e-2, atol=0)


@pytest.mark.parametrize("batch, heads, seq_len, dim, is_causal, tiles", [
    (2, 3, 100, 32, False, {}), (2, 3, 100, 32, True, {}),  # seq_len not a multiple of the tiles
    (1, 2, 1, 16, True, {}),  # one token
    (1, 1, 130, 16, True, dict(block_M=32, block_N=64, num_stages=2)),  # key blocks wider than query blocks
    (1, 2, 96, 64, False, dict(block_M=64, block_N=32)),
    # lse and delta read where used (the form sm_90a warp-specializes)
    (2, 3, 100, 32, True, dict(stats="global")), (1, 1, 130, 16, False, dict(block_M=32, block_N=64, stats="global")),
    # grouped-query attention: dK, dV summed over each K/V head's group of query heads
    (2, 4, 100, 32, False, dict(groups=2)), (1, 6, 70, 16, True, dict(groups=3, stats="global")),
    (1, 4, 33, 16, True, dict(groups=4, block_M=32, block_N=64, num_stages=2))])
def test_flash_attention_backward(batch, heads, seq_len, dim, is_causal, tiles):
    """dQ, dK, dV against torch autograd in float64 (fp16 inputs: ~1e-3 relative)."""
    assert load("attention/flash_attention_bwd.py").check(batch, heads, seq_len, dim, is_causal, **tiles) < 5e-3


@pytest.mark.parametrize("path", ["cuda:sm_80", "hip:gfx942", "metal:apple7"])
def test_mla_decode_split_kernel_on_the_simt_interpreters(path):
    """The split kernel's lowered thread program on each SIMT backend's interpreter against the
    cpu backend (ragged lengths, an empty split, shuffled pages)."""
    import numpy as np

    from tilelang_core.testing.oracle import run

    mla = load("attention/mla_decode.py")
    batch, heads, dim, pe_dim, max_len, page_size, num_split = 2, 16, 32, 16, 70, 32, 3
    q, q_pe, kv, k_pe, table, seqlens = mla.make_inputs(batch, heads, dim, pe_dim, max_len, page_size)
    seqlens[1] = 20  # one tile: splits 1 and 2 of sequence 1 are empty
    func = mla.mla_decode_split.get_tir(batch, heads, dim, pe_dim, kv.shape[0], page_size, table.shape[1],
                                        num_split, block_H=16, block_N=32, threads=128)
    arrays = {"Q": q.numpy(), "Q_pe": q_pe.numpy(), "KV": kv.numpy(), "K_pe": k_pe.numpy(),
              "block_table": table.numpy(), "seqlens": seqlens.numpy()}
    outs = {}
    for where in ("cpu", path):
        o = np.full((batch, heads, num_split, dim), np.nan, np.float32)
        lse = np.full((batch, heads, num_split), np.nan, np.float32)
        run(where, func, **arrays, O_partial=o, LSE_partial=lse)
        outs[where] = (o, lse)
    assert np.isneginf(outs[path][1][1, :, 1:]).all() and (outs[path][0][1, :, 1:] == 0).all()
    np.testing.assert_allclose(outs[path][0], outs["cpu"][0], rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(outs[path][1], outs["cpu"][1], rtol=1e-4, atol=1e-4)
    # and the combined output against torch in float64
    combined = mla.mla_decode_combine(batch, heads, dim, num_split, dtype="float16")(
        torch.from_numpy(outs[path][0]), torch.from_numpy(outs[path][1]))
    ref = mla.reference(q, q_pe, kv, k_pe, table, seqlens)
    assert ((combined.double() - ref).norm() / ref.norm()).item() < 3e-3


@settings(max_examples=12, deadline=None)
@given(batch=st.integers(1, 2), seq_len=st.sampled_from([1, 5, 64, 100, 192]), heads=st.integers(1, 3),
       dim_k=st.sampled_from([32, 64]), dims_v=st.sampled_from([(32, 32), (64, 32), (128, 64)]),
       gated=st.booleans(), chunk=st.sampled_from([32, 64]), bf16=st.booleans(), split_k=st.booleans(),
       seed=st.integers(0, 100))
def test_chunked_linear_attention_matches_the_recurrence(batch, seq_len, heads, dim_k, dims_v, gated, chunk, bf16,
                                                         split_k, seed):
    """Outputs and final state against the token-by-token recurrence in float64: ragged last chunks,
    one-token sequences, one head, state slices narrower than dim_v, the decay on and off, dim_k
    split in two (partial outputs added atomically) or not."""
    dim_v, block_V = dims_v
    la = load("linear_attention/chunked_linear_attention.py")
    dtype, tol = (torch.bfloat16, 1.5e-2) if bf16 else (torch.float16, 3e-3)
    assert la.check(batch, seq_len, heads, dim_k, dim_v, gated, dtype=dtype, seed=seed, chunk=chunk,
                    block_V=block_V, block_K=dim_k // 2 if split_k else None) < tol


@pytest.mark.parametrize("path", ["cuda:sm_80", "hip:gfx942", "metal:apple7"])
def test_chunked_linear_attention_on_the_simt_interpreters(path):
    """The lowered thread program on each SIMT backend's interpreter against the cpu backend
    (two V slices, a ragged last chunk, the decay on)."""
    import numpy as np

    from tilelang_core.testing.oracle import run

    la = load("linear_attention/chunked_linear_attention.py")
    batch, seq_len, heads, dim_k, dim_v = 1, 50, 2, 32, 64
    q, k, v, g = la.make_inputs(batch, seq_len, heads, dim_k, dim_v, gated=True)
    func = la.chunked_linear_attention.get_tir(batch, seq_len, heads, dim_k, dim_v, chunk=32, block_V=32)
    arrays = {"Q": q.numpy(), "K": k.numpy(), "V": v.numpy(), "G": g.numpy()}
    outs = {}
    for where in ("cpu", path):
        o = np.full((batch, seq_len, heads, dim_v), np.nan, np.float16)
        state = np.full((batch, heads, dim_k, dim_v), np.nan, np.float32)
        run(where, func, **arrays, O=o, final_state=state)
        outs[where] = (o, state)
    np.testing.assert_allclose(outs[path][0].astype(np.float32), outs["cpu"][0].astype(np.float32), rtol=2e-3,
                               atol=2e-3)
    np.testing.assert_allclose(outs[path][1], outs["cpu"][1], rtol=1e-3, atol=1e-3)
    ref_o, ref_state = la.reference(q, k, v, g)
    assert np.abs(outs[path][0].astype(np.float64) - ref_o.numpy()).max() < 1e-2


@pytest.mark.parametrize("path", ["cuda:sm_80", "hip:gfx942", "metal:apple7"])
def test_split_k_linear_attention_on_the_simt_interpreters(path):
    """dim_k in two slices, each block adding its share of O atomically: each SIMT interpreter
    against the recurrence (a ragged last chunk, two V slices, the decay on)."""
    import numpy as np

    from tilelang_core.testing.oracle import run

    la = load("linear_attention/chunked_linear_attention.py")
    batch, seq_len, heads, dim_k, dim_v = 1, 50, 2, 64, 64
    q, k, v, g = la.make_inputs(batch, seq_len, heads, dim_k, dim_v, gated=True)
    func = la.chunked_linear_attention_split_k.get_tir(batch, seq_len, heads, dim_k, dim_v, chunk=32, block_V=32,
                                                       block_K=32)
    o = np.zeros((batch, seq_len, heads, dim_v), np.float32)
    state = np.full((batch, heads, dim_k, dim_v), np.nan, np.float32)
    run(path, func, Q=q.numpy(), K=k.numpy(), V=v.numpy(), G=g.numpy(), O=o, final_state=state)
    ref_o, ref_state = la.reference(q, k, v, g)
    assert np.abs(o - ref_o.numpy()).max() < 1e-2
    assert np.abs(state - ref_state.numpy()).max() < 1e-2
