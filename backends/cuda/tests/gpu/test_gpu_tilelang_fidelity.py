"""On the H200: the TileLang-fidelity rules of this stop compiled for sm_90a (wgmma, TMA, warp
specialization where chosen), against torch in float64 (skipped without a GPU). The same kernels
run on cpu and the SIMT interpreters in tests/simt/test_warp_policy_fallback.py,
tests/simt/test_whole_fragments.py and tests/language/test_fragment_growth.py."""

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

import tilelang_core.language as T  # noqa: E402
from gpu_compile import compiled  # noqa: E402


@pytest.mark.parametrize("M,N,K,threads", [(64, 64, 256, 256), (64, 128, 128, 256)])
def test_full_row_gemm_too_short_for_every_warpgroup(M, N, K, threads):
    """FullRow with fewer 64-row slabs than warpgroups: the rest split N (DeepSeek sparse MLA)."""
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=threads):
            A_s = T.alloc_shared((M, 64), "float16")
            B_s = T.alloc_shared((N, 64), "float16")
            acc = T.alloc_fragment((M, N), "float32")
            T.clear(acc)
            for k in T.Pipelined(K // 64, num_stages=2):
                T.copy(A[0, k * 64], A_s)
                T.copy(B[0, k * 64], B_s)
                T.gemm(A_s, B_s, acc, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
            T.copy(acc, C)

    kernel = compiled(main)
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(N, K, device="cuda", dtype=torch.float16)
    c = torch.full((M, N), float("nan"), device="cuda")
    kernel(a, b, c)
    torch.testing.assert_close(c.double(), a.double() @ b.double().T, rtol=1e-3, atol=2e-2)


def test_fragments_held_whole_and_grown():
    n, bm, heads = 24, 64, 8

    @T.prim_func
    def main(M: T.Tensor((n,), "int32"), X: T.Tensor((n, bm), "float32"), S: T.Tensor((heads,), "float32"),
             Y: T.Tensor((heads, bm), "float32")):
        with T.Kernel(heads, threads=128) as by:
            mask = T.alloc_fragment([n], "int32")
            acc = T.alloc_fragment([bm], "float32")
            sinks = T.alloc_fragment([heads], "float32")   # indexed over bm > heads rows: grown
            T.copy(M, mask)
            for i in T.Parallel(bm):
                sinks[i] = S[by]
            T.clear(acc)
            for k in T.serial(n):
                if mask[k] != 0:
                    for i in T.Parallel(bm):
                        acc[i] += X[k, i] * mask[k]
            for i in T.Parallel(bm):
                Y[by, i] = acc[i] + sinks[i]

    kernel = compiled(main)
    m = torch.randint(0, 3, (n,), device="cuda", dtype=torch.int32)
    x = torch.randn(n, bm, device="cuda")
    s = torch.randn(heads, device="cuda")
    y = torch.full((heads, bm), float("nan"), device="cuda")
    kernel(m, x, s, y)
    ref = (x.double() * m.double()[:, None]).sum(0)[None, :] + s.double()[:, None]
    torch.testing.assert_close(y.double(), ref, rtol=1e-5, atol=1e-4)


def test_sliding_window_mask_before_a_wgmma_gemm():
    seq, block, window = 512, 64, 128

    @T.prim_func
    def main(Q: T.Tensor((seq, 64), "float16"), K: T.Tensor((seq, 64), "float16"), S: T.Tensor((seq, seq), "float32")):
        with T.Kernel(seq // block, threads=128) as bx:
            Q_s = T.alloc_shared((block, 64), "float16")
            K_s = T.alloc_shared((block, 64), "float16")
            acc = T.alloc_fragment((block, block), "float32")
            T.copy(Q[bx * block, 0], Q_s)
            for k in T.Pipelined(T.max(0, bx - 2), bx + 1, num_stages=2):
                T.copy(K[k * block, 0], K_s)
                for i, j in T.Parallel(block, block):
                    q_idx = bx * block + i
                    k_idx = k * block + j
                    acc[i, j] = T.if_then_else(q_idx >= k_idx and q_idx < k_idx + window, 0, -T.infinity("float32"))
                T.gemm(Q_s, K_s, acc, transpose_B=True)
                T.copy(acc, S[bx * block, k * block])

    kernel = compiled(main)
    q = torch.randn(seq, 64, device="cuda", dtype=torch.float16)
    k = torch.randn(seq, 64, device="cuda", dtype=torch.float16)
    s = torch.full((seq, seq), 7.0, device="cuda")
    kernel(q, k, s)
    qi = torch.arange(seq, device="cuda")[:, None]
    ki = torch.arange(seq, device="cuda")[None, :]
    inside = (qi >= ki) & (qi < ki + window)
    ref = torch.where(inside, q.double() @ k.double().T, torch.tensor(float("-inf"), device="cuda", dtype=torch.float64))
    blocks = (ki // block >= (qi // block - 2).clamp(min=0)) & (ki // block <= qi // block)
    ref = torch.where(blocks, ref, torch.tensor(7.0, device="cuda", dtype=torch.float64))
    torch.testing.assert_close(s.double(), ref, rtol=1e-3, atol=2e-2)


def test_views_of_a_wgmma_accumulator_and_of_shared_and_global_memory():
    """T.reshape / T.view on sm_90a (tests/language/test_buffer_views.py runs the same kernels on
    cpu and the interpreters): a wgmma accumulator written and reduced through its (N, Q, H) view
    (TileLang's fp8 lightning indexer), groups of 32 straddling threads, a swizzled shared tile
    read flat, a float32 tensor read as float16."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "tests" / "language"))
    import test_buffer_views as views

    bn, bq, heads, d = 64, 2, 32, 64
    q = torch.randn(bq * heads, d, device="cuda", dtype=torch.float16)
    k = torch.randn(bn, d, device="cuda", dtype=torch.float16)
    w = torch.randn(bq, heads, device="cuda", dtype=torch.float32)
    out = torch.full((bn, bq), float("nan"), device="cuda")
    compiled(views.scaled_logits(bn, bq, heads, d))(q, k, w, out)
    s = (k.double() @ q.double().T).clamp_min(0).reshape(bn, bq, heads)
    torch.testing.assert_close(out.double(), (s * w.double()).sum(-1), rtol=1e-3, atol=1e-2)

    a = torch.randn(2, 192, device="cuda")
    b = torch.full((2, 6), float("nan"), device="cuda")
    compiled(views.grouped_sum(2, 6, 32, 128))(a, b)
    torch.testing.assert_close(b.double(), a.double().reshape(2, 6, 32).sum(-1), rtol=1e-5, atol=1e-5)

    a = torch.randn(8, 32, device="cuda")
    b = torch.full((256,), float("nan"), device="cuda")
    compiled(views.shared_reshape(8, 32, True))(a, b)
    assert torch.equal(b, a.reshape(-1))

    a = torch.randn(4 * 8, device="cuda")
    b = torch.zeros(4, 16, device="cuda", dtype=torch.float16)
    compiled(views.global_view(4, 8, "float32", "float16", 16))(a, b)
    assert torch.equal(b.view(torch.int16), a.view(torch.int16).reshape(4, 16))


@pytest.mark.parametrize("valid", [1, 4, 63])
def test_part_of_a_wgmma_accumulator_to_shared(valid):
    """TileLang's GQA decoding epilogue: T.copy(acc_o[:valid_h, :], O_shared) from a wgmma
    accumulator (tests/simt/test_fragment_parts.py runs the same rule on the interpreters)."""
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16"),
             O: T.Tensor((valid, 64), "float16")):
        with T.Kernel(1, threads=128):
            a = T.alloc_shared((64, 64), "float16")
            b = T.alloc_shared((64, 64), "float16")
            c = T.alloc_fragment((64, 64), "float32")
            o = T.alloc_shared((valid, 64), "float16")
            T.copy(A, a)
            T.copy(B, b)
            T.gemm(a, b, c, clear_accum=True, policy=T.GemmWarpPolicy.FullRow)
            T.copy(c[:valid, :], o)
            T.copy(o, O)

    a = torch.randn(64, 64, device="cuda", dtype=torch.float16)
    b = torch.randn(64, 64, device="cuda", dtype=torch.float16)
    out = torch.full((valid, 64), float("nan"), device="cuda", dtype=torch.float16)
    compiled(main)(a, b, out)
    torch.testing.assert_close(out.double(), (a.double() @ b.double())[:valid], rtol=1e-2, atol=5e-2)


@pytest.mark.parametrize("dtypes", [("float16", "float32", "int32"), ("float32", "float16", "float16")])
def test_successive_tiles_reuse_shared_bytes_across_dtypes(dtypes):
    """The shared pool's reuse on sm_90a (tests/simt/test_shared_pool.py runs the same kernel on
    the interpreters): three phases' tiles of different dtypes in the same bytes, with a barrier
    where they change hands; the reductions' workspaces share bytes inside a loop."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "tests" / "simt"))
    import test_shared_pool as pool

    shapes = [(64, 128), (32, 128), (64, 32)]
    torch_dtype = {"float16": torch.float16, "float32": torch.float32, "int32": torch.int32}
    xs = [(torch.randn(*s, device="cuda") * 20).to(torch_dtype[d]) for s, d in zip(shapes, dtypes)]
    out = torch.full((64, 128), float("nan"), device="cuda")
    compiled(pool.phases(shapes, dtypes, 128))(*xs, out)
    i = torch.arange(64, device="cuda")[:, None]
    j = torch.arange(128, device="cuda")[None, :]
    ref = xs[0].double() + 2 * xs[1].double()[i % 32, j] + 3 * xs[2].double()[i, j % 32]
    torch.testing.assert_close(out.double(), ref, rtol=1e-5, atol=1e-4)
