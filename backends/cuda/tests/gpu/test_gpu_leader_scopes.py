"""On a GPU: T.tma_copy's leader scopes (simt/transform/leader_scopes.py) with the kernels of
tests/language/test_tma_leader_scopes.py, which checks them on the cuda interpreter: a copy per
warp and per pair of warps, rows read from memory, a ragged last block, and a block-wide copy whose
region names the thread index (its first thread's row)."""

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

sys.path.append(str(Path(__file__).parents[4] / "tests" / "language"))

import tilelang_core as tl  # noqa: E402
from test_tma_leader_scopes import K, WARPS, block_wide, per_pair, per_warp  # noqa: E402


@pytest.mark.parametrize("M", [8, 6])
def test_per_warp(M):
    kernel = tl.compile(per_warp(M=M), target="cuda")
    a = torch.randn(M, K, device="cuda")
    b = torch.full((M, K), float("nan"), device="cuda")
    kernel(a, torch.zeros(WARPS * 32, dtype=torch.int32, device="cuda"), b)
    torch.cuda.synchronize()
    assert torch.equal(a, b)


def test_rows_read_from_memory():
    kernel = tl.compile(per_warp(rows_from="warp"), target="cuda")
    a = torch.randn(8, K, device="cuda")
    rows = torch.zeros(WARPS * 32, dtype=torch.int32, device="cuda")
    rows[:WARPS] = torch.tensor([5, 0, 7, 2], dtype=torch.int32)
    b = torch.full((8, K), float("nan"), device="cuda")
    kernel(a, rows, b)
    torch.cuda.synchronize()
    assert torch.equal(b, a[[5, 0, 7, 2, 5, 0, 7, 2]])


def test_per_pair():
    kernel = tl.compile(per_pair(), target="cuda")
    a = torch.randn(5, K, device="cuda")
    b = torch.full((5, K), float("nan"), device="cuda")
    kernel(a, b)
    torch.cuda.synchronize()
    assert torch.equal(a, b)


def test_block_wide_first_threads_row():
    kernel = tl.compile(block_wide(), target="cuda")
    a = torch.randn(5, 512, device="cuda")
    b = torch.zeros(512, device="cuda")
    kernel(a, b)
    torch.cuda.synchronize()
    assert torch.equal(b, a[1])
