"""On an sm_90 GPU: float32 tile atomic adds inside a warp-specialized loop, as TMA reduce-adds
(tl.enable_tma_reduce, tilelang_cuda/hopper/tma_reduce.py) and as the threads' reductions (default),
against numpy in float64: three blocks adding into the same rows, one row block per iteration,
rows past a ragged end left alone; and the FlashAttention backward (stats="global") with it."""

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] != 9,
                                reason="needs an sm_90 (Hopper) GPU")

import numpy as np  # noqa: E402
from test_gpu_hopper import build  # noqa: E402
from test_tma_reduce import expected, split_k_partials  # noqa: E402


@pytest.mark.parametrize("options", [{"enable_tma_reduce": True}, {}])
@pytest.mark.parametrize("M, K", [(300, 256), (64, 64), (129, 200), (1000, 1024)])
def test_tma_reduce_adds_every_partial(tmp_path, options, M, K):
    kernel, source = build(split_k_partials(M, K, 128), tmp_path, **options)
    assert ("tl_tma_reduce_add" in source) == bool(options)
    rng = np.random.default_rng(M * K)
    a = rng.standard_normal((3 * 64, K)).astype(np.float16)
    b = rng.standard_normal((128, K)).astype(np.float16)
    d = rng.standard_normal((M, 128)).astype(np.float32)
    want = expected(a, b, d)
    dt = torch.from_numpy(d).cuda()
    kernel["main"](torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda(), dt)
    torch.cuda.synchronize()
    np.testing.assert_allclose(dt.cpu().numpy(), want, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("B,H,S,D,causal", [(2, 3, 100, 32, False), (1, 4, 1000, 128, True), (4, 8, 2048, 128, False)])
def test_flash_attention_backward_with_tma_reduce_matches_autograd(B, H, S, D, causal):
    from test_gpu_hopper import example

    ex = example("attention/flash_attention_bwd.py")
    tiles = dict(block_M=64, block_N=128, num_stages=2, threads=256) if D == 128 else {}
    import tilelang_core as tl

    kernel = tl.compile(ex.flash_bwd.get_tir(B, H, S, D, causal, stats="global", **tiles), out_idx=[-2, -1],
                        target="cuda:sm_90a", pass_configs={"tl.enable_tma_reduce": True})
    assert "tl_tma_reduce_add" in kernel.get_kernel_source()
    q, k, v, do = (torch.randn(B, S, H, D, dtype=torch.float16, device="cuda") for _ in range(4))
    o, lse, dq_ref, dk_ref, dv_ref = ex.reference(q, k, v, do, causal)
    delta = ex.flash_bwd_delta(B, H, S, D)(o.half().cuda(), do)
    dq = torch.zeros(B, S, H, D, dtype=torch.float32, device="cuda")
    dk, dv = kernel(q, k, v, do, lse.float().cuda(), delta, dq)
    for got, ref in ((dq, dq_ref), (dk, dk_ref), (dv, dv_ref)):
        assert ((got.cpu().double() - ref).norm() / max(ref.norm(), 1.0)).item() < 1e-2
