"""On the GPU present: gemms whose A operand comes from registers (kernels.make_register_a_gemm:
tf32, int8 and fp16 A fragments, warps splitting C's columns holding copies of their rows) against
torch in float64 (skipped without a GPU). The interpreter checks the same in test_interpreted_numerics.py."""

import warnings

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

import kernels  # noqa: E402
import tilelang_core as tl  # noqa: E402
import tilelang_core.language as T  # noqa: E402


@pytest.mark.parametrize("dtype,accum", [("float32", "float32"), ("int8", "int32"), ("float16", "float32")])
@pytest.mark.parametrize("M,N,K,policy,threads", [
    (64, 64, 32, T.GemmWarpPolicy.FullRow, 128),
    (32, 32, 64, T.GemmWarpPolicy.Square, 128),
    (64, 32, 64, T.GemmWarpPolicy.Square, 256),
])
def test_gemm_with_a_from_registers(dtype, accum, M, N, K, policy, threads):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kernel = tl.compile(kernels.make_register_a_gemm(M, N, K, dtype, accum, policy, threads), target="cuda")
    if dtype == "int8":
        a = torch.randint(-100, 100, (M, K), dtype=torch.int8, device="cuda")
        b = torch.randint(-100, 100, (K, N), dtype=torch.int8, device="cuda")
    else:
        a = torch.randn(M, K, device="cuda", dtype=getattr(torch, dtype))
        b = torch.randn(K, N, device="cuda", dtype=getattr(torch, dtype))
    c = torch.full((M, N), 7, device="cuda", dtype=getattr(torch, accum))
    kernel(a, b, c)
    ref = a.double() @ b.double()
    if dtype == "int8":
        assert torch.equal(c.long(), ref.long())
    else:
        torch.testing.assert_close(c.double(), ref, atol=2e-2 * K ** 0.5, rtol=1e-2)
