"""On a GPU: the vector atomic adds (AtomicAddx2 / AtomicAddx4, tilelang_core/simt/vector_atomic_adds.py)
against torch in float64: split-K's fragment epilogue (float32, float16, bfloat16; ragged shapes),
a T.Parallel body adding a shared tile, tile adds with memory orders, T.atomic_addx2/x4's lanes and
a scatter of rows whose indices collide. The kernels are those of test_vector_atomic_adds.py, which
checks the same sources on the CPU."""

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

import tilelang_core as tl  # noqa: E402
from test_vector_atomic_adds import (explicit_lanes, fragment_add, parallel_add, scatter_rows,  # noqa: E402
                                     tile_add)

TORCH = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def _close(got, want, tol):
    assert ((got.double().cpu() - want).abs().max() <= tol * (1 + want.abs().max())).item()


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("M, N, K", [(128, 128, 4), (100, 70, 3), (1, 2, 2), (257, 64, 5)])
def test_fragment_tile_add(dtype, M, N, K):
    kernel = tl.compile(fragment_add(M, N, K, 32, 64, dtype, dtype), target="cuda")
    a = torch.randn(K, M, N, device="cuda").to(TORCH[dtype])
    b = torch.randn(M, N, device="cuda").to(TORCH[dtype])
    want = b.double().cpu() + a.double().cpu().sum(0)
    kernel(a, b)
    torch.cuda.synchronize()
    _close(b, want, 1e-5 if dtype == "float32" else 2e-2)


@pytest.mark.parametrize("M, N, offset", [(128, 128, 0), (45, 70, 0), (64, 64, 1)])
def test_parallel_add(M, N, offset):
    kernel = tl.compile(parallel_add(M, N, 3, 32, 32, offset=offset), target="cuda")
    assert ("AtomicAddx" in kernel.get_kernel_source()) == (offset == 0)
    a = torch.randn(3, M, N, device="cuda")
    b = torch.randn(M, N + offset, device="cuda")
    want = b.double().cpu()
    want[:, offset:] += a.double().cpu().sum(0)
    kernel(a, b)
    torch.cuda.synchronize()
    _close(b, want, 1e-5)


@pytest.mark.parametrize("order", ["relaxed", "acquire", "release", "acq_rel", "seq_cst"])
@pytest.mark.parametrize("dtype, N", [("float16", 64), ("float32", 256), ("bfloat16", 128)])
def test_tile_add_with_order(order, dtype, N):
    kernel = tl.compile(tile_add(N, 32, order, dtype), target="cuda")
    x = torch.randn(N, device="cuda").to(TORCH[dtype])
    out = torch.randn(N, device="cuda").to(TORCH[dtype])
    want = out.double().cpu() + x.double().cpu()
    kernel(x, out)
    torch.cuda.synchronize()
    _close(out, want, 1e-5 if dtype == "float32" else 1e-2)


@pytest.mark.parametrize("lanes", [2, 4])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_explicit_lanes(lanes, dtype):
    kernel = tl.compile(explicit_lanes(64, 128, 16, 32, lanes, dtype), target="cuda")
    a = torch.randn(64, 128, device="cuda").to(TORCH[dtype])
    b = torch.randn(64, 128, device="cuda").to(TORCH[dtype])
    want = b.double().cpu() + a.double().cpu()
    for _ in range(3):  # three launches: every element three adds
        kernel(a, b)
    torch.cuda.synchronize()
    _close(b, want + 2 * a.double().cpu(), 1e-5 if dtype == "float32" else 2e-2)


def test_scatter_rows_collide():
    kernel = tl.compile(scatter_rows(256, 8), target="cuda")
    idx = torch.randint(0, 8, (256,), dtype=torch.int32, device="cuda")
    val = torch.randn(256, 4, device="cuda")
    dst = torch.zeros(8, 4, device="cuda")
    want = torch.zeros(8, 4, dtype=torch.float64).index_add_(0, idx.long().cpu(), val.double().cpu())
    kernel(idx, val, dst)
    torch.cuda.synchronize()
    _close(dst, want, 1e-5)
