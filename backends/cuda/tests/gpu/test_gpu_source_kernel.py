"""On the GPU: T.CUDASourceCodeKernel (tilelang_core/language/source_kernel.py) runs the hand-written
entry over the grid with the kernel's parameters, then its dynamic dimensions (the source and the
refusals: tests/test_source_kernel_build.py). Skipped without a GPU."""

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

import tilelang_core as tl  # noqa: E402
from test_source_kernel_build import copy_kernel, scale_kernel  # noqa: E402


@pytest.mark.parametrize("n", [1, 128, 1000])
def test_copy_entry_runs(n):
    kernel = tl.compile(copy_kernel(), target="cuda")
    a = torch.randn(n, device="cuda")
    b = torch.full_like(a, float("nan"))
    kernel(a, b)
    torch.testing.assert_close(b, a, rtol=0, atol=0)


@pytest.mark.parametrize("m, n", [(3, 7), (64, 256)])
def test_scalars_and_two_dimensions_reach_the_entry(m, n):
    kernel = tl.compile(scale_kernel(), target="cuda")
    x = torch.randn(m, n, device="cuda", dtype=torch.float16)
    y = torch.zeros_like(x)
    kernel(x, y, 0.5)
    torch.testing.assert_close(y.double(), (x.double() * 0.5).half().double(), rtol=0, atol=0)
