"""On a GPU: T.Parallel loops with no fragment to follow, which now become vector accesses
(simt/transform/lower_parallel.py; tests/simt/test_spread_loops_vectorize.py checks the same kernels
on every interpreter), guarded ones split into vector runs and a ragged edge lane by lane
(lane_guards.py; tests/simt/test_lane_guards.py), and ``T.unroll(unroll_factor=N)``'s loops
(tilelang_cuda/unroll_pragmas.py), and runs of 8 half lanes computed in float32 (test_wide_value_vectors.py),
against torch in float64; ragged shapes and unaligned starts included."""

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

sys.path.append(str(Path(__file__).parents[4] / "tests" / "simt"))

import tilelang_core as tl  # noqa: E402
from test_lane_guards import flat_scale, guarded_add  # noqa: E402
from test_spread_loops_vectorize import elementwise, read_what_it_writes  # noqa: E402
from test_unroll_pragmas import partially_unrolled  # noqa: E402
import test_wide_value_vectors as wide  # noqa: E402


@pytest.mark.parametrize("bound", [False, True])
@pytest.mark.parametrize("M, N, offset", [(256, 256, 0), (70, 100, 0), (1, 4, 0), (33, 64, 1), (65, 12, 4)])
def test_elementwise(M, N, offset, bound):
    kernel = tl.compile(elementwise(M, N, 16, bound, offset), target="cuda")
    a = torch.randn(M, N + offset, device="cuda")
    b = torch.full((M, N), float("nan"), device="cuda")
    kernel(a, b)
    torch.cuda.synchronize()
    want = a.double().cpu()[:, offset:] * 2 + 1
    assert (b.double().cpu() - want).abs().max().item() <= 1e-5


def test_a_binding_of_memory_the_body_writes():
    kernel = tl.compile(read_what_it_writes(256), target="cuda")
    a = torch.randn(256, device="cuda")
    a0 = a.double().cpu()
    b = torch.zeros(256, device="cuda")
    kernel(a, b)
    torch.cuda.synchronize()
    assert (a.double().cpu() - a0 * 3).abs().max().item() <= 1e-5
    assert (b.double().cpu() - a0 * 4).abs().max().item() <= 1e-5


@pytest.mark.parametrize("factor", [2, 4, 16])
def test_partially_unrolled(factor):
    kernel = tl.compile(partially_unrolled(factor=factor), target="cuda")
    assert f"#pragma unroll {factor}" in kernel.get_kernel_source()
    a = torch.randn(8, 16, device="cuda")
    b = torch.zeros(8, 16, device="cuda")
    kernel(a, b)
    torch.cuda.synchronize()
    r = torch.arange(8, dtype=torch.float64)[:, None] * torch.arange(16, dtype=torch.float64)[None, :]
    assert (b.double().cpu() - (a.double().cpu() * 2 + r)).abs().max().item() <= 1e-5


@pytest.mark.parametrize("N", [1, 3, 130, 1001, 4099, 65536])
def test_ragged_flat(N):
    kernel = tl.compile(flat_scale(N, 128), target="cuda")
    a = torch.randn(N, device="cuda")
    b = torch.full((N + 8,), float("nan"), device="cuda")  # (past N: must stay untouched)
    kernel(a, b[:N])
    torch.cuda.synchronize()
    assert (b[:N].double().cpu() - (a.double().cpu() * 2 + 1)).abs().max().item() <= 1e-5
    assert torch.isnan(b[N:]).all()


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("M, N", [(37, 96), (100, 64), (1, 8), (33, 200)])
def test_guarded_add(M, N, dtype):
    kernel = tl.compile(guarded_add(M, N, 16, 64, dtype), target="cuda")
    t = {"float32": torch.float32, "float16": torch.float16}[dtype]
    a, b = torch.randn(M, N, device="cuda").to(t), torch.randn(M, N, device="cuda").to(t)
    c = torch.full((M, N), float("nan"), device="cuda").to(t)
    kernel(a, b, c)
    torch.cuda.synchronize()
    want = 0.5 * a.double().cpu() + b.double().cpu()
    assert (c.double().cpu() - want).abs().max().item() <= (1e-5 if dtype == "float32" else 5e-3)


_TORCH = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float8_e4m3fn": torch.float8_e4m3fn}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("M, N", [(256, 256), (37, 200), (64, 196), (1, 8), (5, 1)])
def test_eight_half_lanes_in_float32(M, N, dtype):
    """Runs of 8 half / bfloat16 lanes computed as float32x8 (tests/simt/test_wide_value_vectors.py):
    the broadcast 0.5 is the 8-float make_ulonglong4 overload."""
    kernel = tl.compile(wide.scale_add(M, N, dtype), target="cuda")
    t = _TORCH[dtype]
    a, b = torch.randn(M, N, device="cuda").to(t), torch.randn(M, N, device="cuda").to(t)
    c = torch.full((M, N), float("nan"), device="cuda").to(t)
    kernel(a, b, c)
    torch.cuda.synchronize()
    want = 0.5 * a.double().cpu() + b.double().cpu()
    # one rounding of a float32 result to the 16-bit type
    tol = (4e-3 if dtype == "float16" else 3e-2) * want.abs().max().item() + 1e-3
    assert (c.double().cpu() - want).abs().max().item() <= tol


@pytest.mark.parametrize("dtype, out", [("bfloat16", "bfloat16"), ("float16", "float16"), ("bfloat16", "float8_e4m3fn")])
@pytest.mark.parametrize("M, N", [(256, 256), (33, 136)])
def test_eight_lane_swiglu(M, N, dtype, out):
    """silu(A) * B over 8 lanes, stored by the 8-lane paired conversions (tl_cvt_floatx8_to_*)."""
    kernel = tl.compile(wide.swiglu(M, N, dtype, out), target="cuda")
    t = _TORCH[dtype]
    a, b = torch.randn(M, N, device="cuda").to(t), torch.randn(M, N, device="cuda").to(t)
    c = torch.zeros(M, N, device="cuda").to(_TORCH[out])
    kernel(a, b, c)
    torch.cuda.synchronize()
    a64, b64 = a.double().cpu(), b.double().cpu()
    want = a64 / (1 + torch.exp(-a64)) * b64
    # the reference rounded to the output type the same way: the cast is exact up to one rounding
    rounded = want.float().to(_TORCH[out]).double()
    step = {"float16": 1e-3, "bfloat16": 8e-3, "float8_e4m3fn": 7e-2}[out]
    assert (c.double().cpu() - rounded).abs().max().item() <= step * want.abs().max().item() + 1e-3


@pytest.mark.parametrize("src, dst", [("int8", "float16"), ("float8_e4m3fn", "bfloat16")])
@pytest.mark.parametrize("M, N", [(256, 256), (37, 200), (5, 8)])
def test_dequantized_runs(M, N, src, dst):
    """8-bit runs widened through register arrays (test_staged_runs_build.py), exact: every int8
    and e4m3 value times 0.5 is a float16 / bfloat16 value."""
    import test_staged_runs_build as staged

    kernel = tl.compile(staged.dequant(M, N, src, dst), target="cuda")
    if src == "int8":
        a = torch.randint(-128, 128, (M, N), dtype=torch.int8, device="cuda")
    else:
        a = torch.randn(M, N, device="cuda").mul(8).to(torch.float8_e4m3fn)
    c = torch.full((M, N), float("nan"), device="cuda").to(_TORCH[dst])
    kernel(a, c)
    torch.cuda.synchronize()
    assert torch.equal(c.double().cpu(), a.double().cpu() * 0.5)


@pytest.mark.parametrize("N", [4096, 1000])
def test_int8_runs_through_int32(N):
    import test_staged_runs_build as staged

    kernel = tl.compile(staged.int8_axpy(N), target="cuda")
    a, b = (torch.randint(-128, 128, (N,), dtype=torch.int8, device="cuda") for _ in range(2))
    c = torch.zeros(N, dtype=torch.int8, device="cuda")
    kernel(a, b, c)
    torch.cuda.synchronize()
    want = (a.long().cpu() * 3 + b.long().cpu()).to(torch.int8)  # (wraps like the int32 -> int8 cast)
    assert torch.equal(c.cpu(), want)
