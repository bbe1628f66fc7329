"""On a GPU: JITKernel's launcher leaves the argument checks to TVM's cuda_host wrapper and explains
its refusals; every wrong argument must still raise a LaunchError naming the parameter, before
anything runs (skipped without a GPU)."""

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

import tilelang_core as tilelang  # noqa: E402
import tilelang_core.language as T  # noqa: E402
from tilelang_core.errors import LaunchError  # noqa: E402

N = 1024


def add_one(n):
    @T.prim_func
    def add_one(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
            for i in T.Parallel(128):
                if bx * 128 + i < n:
                    Y[bx * 128 + i] = X[bx * 128 + i] + 1.0

    return add_one


@pytest.fixture(scope="module")
def kernels():
    return (tilelang.compile(add_one(N), out_idx=None, target="cuda"),
            tilelang.compile(add_one(N), out_idx=[-1], target="cuda"))


def test_the_launcher_leaves_the_checks_to_the_wrapper(kernels):
    passed, allocating = kernels
    assert ".is_cuda" not in passed._launch.__source__ and "_relaunch(e, args)" in passed._launch.__source__
    x = torch.randn(N, device="cuda")
    y = torch.full_like(x, float("nan"))
    passed(x, y)
    out = allocating(x)
    assert out.device == x.device and out.dtype == torch.float32
    torch.testing.assert_close(y, x + 1)
    torch.testing.assert_close(out, x + 1)


@pytest.mark.parametrize("case,pattern", [
    ("host", r"parameter 'X' \(argument 0\) is on cpu, but the kernel runs on cuda.*\.to\('cuda'\)"),
    ("dtype", r"parameter 'X' \(argument 0\) has dtype float16, expected float32"),
    ("shape", r"parameter 'X' .*dimension 0 must be 1024"),
    ("strided", r"parameter 'X' .*not contiguous"),
])
def test_wrong_inputs_are_named_before_launch(kernels, case, pattern):
    passed, allocating = kernels
    x = {"host": torch.randn(N), "dtype": torch.randn(N, device="cuda").half(),
         "shape": torch.randn(N + 1, device="cuda"),
         "strided": torch.randn(2 * N, device="cuda")[::2]}[case]
    y = torch.full((N,), float("nan"), device="cuda")
    with pytest.raises(LaunchError, match=pattern):
        passed(x, y)
    with pytest.raises(LaunchError, match=pattern):
        allocating(x)
    torch.cuda.synchronize()
    assert torch.isnan(y).all()  # nothing ran


def test_output_on_the_host_is_named(kernels):
    passed, _ = kernels
    with pytest.raises(LaunchError, match=r"parameter 'Y' \(argument 1\) is on cpu"):
        passed(torch.randn(N, device="cuda"), torch.empty(N))


def test_misaligned_views_are_staged_and_written_back(kernels):
    passed, allocating = kernels
    base = torch.randn(N + 1, device="cuda")
    x = base[1:]  # 4 bytes past the allocation's alignment: the wrapper would not notice
    y_base = torch.zeros(N + 1, device="cuda")
    passed(x, y_base[1:])
    torch.testing.assert_close(y_base[1:], x + 1)
    assert y_base[0].item() == 0
    torch.testing.assert_close(allocating(x), x + 1)
