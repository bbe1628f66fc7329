"""On the GPU: float16/bfloat16 register reductions folded two values per half2 instruction
(simt/paired_fold.py; tests/test_paired_folds.py checks the source and the interpreter) against
torch in float64, per-thread tiles and fragments, NaN rows with nan_propagate (skipped without a
GPU)."""

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

from gpu_compile import compiled  # noqa: E402
from test_paired_folds import fragment_reduce, local_reduce  # noqa: E402  (the kernels the interpreter runs)


def reference(kind, a, dim):
    x = a.double().abs() if kind.startswith("abs") else a.double()
    if kind in ("sum", "abssum"):
        return x.sum(dim)
    return x.amax(dim) if kind in ("max", "absmax") else x.amin(dim)


@pytest.mark.parametrize("kind", ["sum", "max", "min", "absmax", "abssum"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("shape", [("per_thread", 3, 8, 1), ("per_thread", 1, 7, 1), ("per_thread", 8, 6, 0),
                                   ("fragment", 128, 128, 256), ("fragment", 16, 48, 128)])
def test_paired_folds_match_torch(kind, dtype, shape):
    where, a0, a1, a2 = shape
    torch_dtype = getattr(torch, dtype)
    if where == "per_thread":
        rows, cols, dim = a0, a1, a2
        kernel, a = compiled(local_reduce(kind, rows, cols, dim, dtype)), torch.randn(rows, cols, device="cuda")
    else:
        rows, cols, dim = a0, a1, 1
        kernel, a = compiled(fragment_reduce(kind, rows, cols, dtype, a2)), torch.randn(rows, cols, device="cuda")
    source = kernel.get_kernel_source()
    assert "tl::" in source  # the paired fold was taken
    a = a.to(torch_dtype)
    b = torch.zeros(cols if dim == 0 else rows, device="cuda", dtype=torch_dtype)
    kernel(a, b)
    want = reference(kind, a.cpu(), dim)
    tol = (4e-3 if dtype == "float16" else 3e-2) * (cols if dim == 1 else rows) ** 0.5
    torch.testing.assert_close(b.cpu().double(), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("kind", ["max", "min", "absmax"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_nan_propagating_paired_folds(kind, dtype):
    kernel = compiled(fragment_reduce(kind, 128, 128, dtype, 256, nan_propagate=True))
    assert "2_nan" in kernel.get_kernel_source()
    a = torch.randn(128, 128, device="cuda").to(getattr(torch, dtype))
    a[5, 17] = float("nan")
    a[90, 0] = float("nan")
    b = torch.zeros(128, device="cuda", dtype=a.dtype)
    kernel(a, b)
    got = b.cpu().double()
    assert torch.isnan(got[[5, 90]]).all()
    keep = [r for r in range(128) if r not in (5, 90)]
    torch.testing.assert_close(got[keep], reference(kind, a.cpu(), 1)[keep], rtol=0, atol=0)
