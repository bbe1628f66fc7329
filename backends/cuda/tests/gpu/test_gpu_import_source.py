"""On the GPU present: device source brought by T.import_source / T.Kernel(prelude=...) and
called through T.call_extern on per-thread arrays (kernels.make_imported_source) computes what it
says (skipped without a GPU; test_build.py checks the source and the nvcc build without one)."""

import warnings

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

import kernels  # noqa: E402
import tilelang_core as tl  # noqa: E402


@pytest.mark.parametrize("prelude", [False, True])
def test_imported_device_function_runs(prelude):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kernel = tl.compile(kernels.make_imported_source(prelude), target="cuda")
    a = torch.randn(512, device="cuda")
    b = torch.full_like(a, float("nan"))
    kernel(a, b)
    torch.testing.assert_close(b, 2 * a, rtol=0, atol=0)
