"""On the H200: TileLang's hand-written warp-specialized kernels (ws_kernels.py: mbarriers,
T.ws, T.tma_copy, T.set_max_nreg) compiled for sm_90a, against torch in float64 (skipped without
a GPU). The interpreter runs the same kernels in test_ws_kernels_interpreted.py, except the consumer-first
order, which only real concurrent warpgroups can run."""

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

from gpu_compile import compiled  # noqa: E402
from ws_kernels import ws_gemm, ws_gemm_stages, ws_register_a_gemm, ws_scale_rows, ws_split_gemm  # noqa: E402


def check_gemm(func, M, N, K, out=torch.float16):
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    c = torch.full((M, N), float("nan"), device="cuda", dtype=out)
    compiled(func)(a, b, c)
    tol = 2e-2 if out == torch.float16 else 1e-3
    torch.testing.assert_close(c.double(), a.double() @ b.double(), rtol=tol, atol=tol * 4)


@pytest.mark.parametrize("producer,consumer_first,nreg", [(0, False, False), (1, False, False), (0, True, False),
                                                          (1, False, True)])
@pytest.mark.parametrize("M,N,K", [(1000, 520, 320), (128, 128, 64)])
def test_ws_gemm(M, N, K, producer, consumer_first, nreg):
    check_gemm(ws_gemm(M, N, K, bM=128, bN=128, bK=64, producer=producer, consumer_first=consumer_first,
                       nreg=nreg), M, N, K)


@pytest.mark.parametrize("stages", [2, 3])
def test_ws_gemm_stages(stages):
    check_gemm(ws_gemm_stages(1000, 512, 640, bM=128, bN=128, bK=64, stages=stages), 1000, 512, 640,
               out=torch.float32)


def test_ws_split_gemm():
    check_gemm(ws_split_gemm(1000, 520, 320, bM=128, bN=128, bK=64), 1000, 520, 320, out=torch.float32)


def test_one_arrival_publishes_the_whole_copy():
    x = torch.randn(1000, 64, device="cuda")
    y = torch.full_like(x, float("nan"))
    compiled(ws_scale_rows(1000, 64, bM=32, arrivals=1))(x, y)
    torch.testing.assert_close(y, 2 * x, rtol=0, atol=0)


def test_register_a_gemm_in_a_warpgroup():
    """wgmma with A in registers planned for the group's warpgroup (the planner used the block's)."""
    a = torch.randn(64, 64, device="cuda", dtype=torch.float16)
    b = torch.randn(64, 64, device="cuda", dtype=torch.float16)
    c = torch.full((64, 64), float("nan"), device="cuda")
    compiled(ws_register_a_gemm())(a, b, c)
    torch.testing.assert_close(c.double(), a.double().clamp(min=0) @ b.double(), rtol=1e-3, atol=1e-2)
