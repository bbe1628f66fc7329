"""On the GPU (sm_90): T.ClusterKernel and the cluster's barriers, the kernels of
tests/language/test_cluster_kernel.py (cpu, the interpreter and nvcc there)."""

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] < 9,
                                reason="needs a CUDA device of sm_90 or newer")

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "tests" / "language"))

import tilelang_core as tl  # noqa: E402
from tilelang_core.errors import TileLangError  # noqa: E402
from cluster_kernels import (CASES, dynamic_grid, exchange, expected_ranks, gemm, multicast_ring, ranks,  # noqa: E402
                             remote_barrier)


@pytest.mark.parametrize("grid,dims", CASES)
def test_rank_is_the_hardware_rank(grid, dims):
    r = torch.full(tuple(reversed(list(grid) + [1] * (3 - len(grid)))), -1, dtype=torch.int32, device="cuda")
    tl.compile(ranks(grid, dims), target="cuda")(r)
    assert (r.cpu().numpy() == expected_ranks(grid, dims)).all()


def test_cluster_sync_orders_the_blocks_of_a_cluster():
    kernel = tl.compile(exchange(clusters=64, block=128, size=4), target="cuda")
    for seed in range(5):
        a = torch.randn(256, 128, device="cuda", generator=torch.Generator("cuda").manual_seed(seed))
        b = torch.full_like(a, float("nan"))
        doubled = a * 2
        kernel(a, b)
        peer = torch.arange(256, device="cuda")
        peer = peer - peer % 4 + (peer % 4 + 1) % 4
        torch.testing.assert_close(b, doubled[peer], rtol=0, atol=0)


def test_remote_arrivals_complete_block_zeros_barrier():
    a = torch.zeros(16, dtype=torch.int32, device="cuda")
    tl.compile(remote_barrier(4), target="cuda")(a)
    torch.cuda.synchronize()
    assert a.tolist() == [1 if i % 4 == 0 else 0 for i in range(16)]


@pytest.mark.parametrize("dims", [(2, 1, 1), (1, 2, 1), (2, 2, 1)])
def test_gemm_in_a_cluster_kernel(dims):
    a = torch.randn(1024, 512, device="cuda").half()
    b = torch.randn(512, 768, device="cuda").half()
    c = torch.zeros(1024, 768, device="cuda")
    tl.compile(gemm(1024, 768, 512, dims), target="cuda")(a, b, c)
    torch.testing.assert_close(c, a.double().matmul(b.double()).float(), rtol=1e-3, atol=2e-2)


def test_a_dynamic_grid_the_cluster_does_not_divide_is_refused_at_the_call():
    kernel = tl.compile(dynamic_grid(), target="cuda")
    a = torch.full((100,), -1, dtype=torch.int32, device="cuda")
    kernel(a)
    assert a.tolist() == [(i // 32) % 2 for i in range(100)]
    with pytest.raises(TileLangError, match="not a multiple of the cluster's 2"):
        kernel(torch.zeros(90, dtype=torch.int32, device="cuda"))


@pytest.mark.parametrize("blocks, mask", [(2, 0b11), (4, 0b0110)])
def test_tma_copy_with_a_cluster_mask(blocks, mask):
    """TileLang's multicast test kernel (each block its own copy here): every block holds every tile."""
    kernel = tl.compile(multicast_ring(blocks=blocks, mask=mask), target="cuda")
    a = torch.randn(8, 64, 64, device="cuda")
    b = torch.full((blocks, 8, 64, 64), float("nan"), device="cuda")
    kernel(a, b)
    for rank in range(blocks):
        torch.testing.assert_close(b[rank], a, rtol=0, atol=0)
