"""On a CUDA GPU: programs of several kernels sharing T.alloc_global workspaces, T.ptr parameters
(tensors and data_ptr() integers) and pointer tables agree with torch in float64 (skipped
elsewhere; the same kernels are built without a GPU by test_program_kernels_build.py)."""

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

import tilelang_core as tilelang  # noqa: E402
import test_program_kernels_build as programs  # noqa: E402

ARCH = None if not torch.cuda.is_available() else \
    {8: "sm_80", 9: "sm_90a"}.get(torch.cuda.get_device_capability()[0], "sm_80")


def test_split_combine_through_workspaces():
    kernel = tilelang.compile(programs.split_combine(1000, 128), target=f"cuda:{ARCH}")
    a = torch.randn(1000, device="cuda")
    b = torch.empty(1000, device="cuda")
    for _ in range(3):  # the pool hands the same memory back: results must not depend on it
        kernel(a, b)
        want = (2 * a.double()).flip(0) + a.half().double()
        torch.testing.assert_close(b.double(), want, rtol=1e-3, atol=1e-3)


def test_a_gemm_into_a_workspace_then_a_second_kernel():
    M, N, K = 256, 192, 128
    kernel = tilelang.compile(programs.gemm_then_scale(M, N, K), target=f"cuda:{ARCH}")
    a, b = torch.randn(M, K, device="cuda").half(), torch.randn(K, N, device="cuda").half()
    d = torch.empty(M, N, device="cuda")
    kernel(a, b, d)
    torch.testing.assert_close(d.double(), 2 * (a.double() @ b.double()).half().double(), rtol=1e-2, atol=1e-1)


def test_a_gemm_through_a_pointer_table():
    G, M, N, K = 3, 128, 128, 64
    kernel = tilelang.compile(programs.table_gemm(G, M, N, K), target=f"cuda:{ARCH}")
    a = [torch.randn(M, K, device="cuda").half() for _ in range(G)]
    b = torch.randn(K, N, device="cuda").half()
    c = torch.empty(G, M, N, device="cuda")
    kernel(torch.tensor([t.data_ptr() for t in a], dtype=torch.int64, device="cuda"), b, c)
    for g in range(G):
        torch.testing.assert_close(c[g].double(), a[g].double() @ b.double(), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("as_pointer", [False, True])
def test_pointer_parameters_take_tensors_or_data_pointers(as_pointer):
    kernel = tilelang.compile(programs.pointer_params(8), target=f"cuda:{ARCH}")
    a = torch.randn(10, 8, device="cuda").half()
    c = torch.zeros(10, 8, device="cuda").half()
    if as_pointer:
        kernel(a.data_ptr(), c.data_ptr(), 10)
    else:
        kernel(a, c, 10)
    torch.testing.assert_close(c, a + a)
