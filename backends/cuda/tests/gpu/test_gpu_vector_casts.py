"""On the GPU present: the paired vector conversions (tilelang_cuda/vector_casts.py) give, bit for
bit, what the scalar casts give, on every pair, 2 and 4 lanes, by converting T.copy and by a
T.Parallel cast, on special values (NaN, infinities, overflow, subnormals, rounding ties, every
fp8 byte); and torch's .to() where the value is in range (torch's fp8 makes NaN of what CUDA
saturates). Skipped without a GPU; test_vector_casts_build.py checks the source without one."""

import warnings

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

import tilelang_core as tl  # noqa: E402
import tilelang_core.language as T  # noqa: E402
from tilelang_cuda.vector_casts import PAIRS  # noqa: E402

N = 1024  # elements: 128 threads x 4 lanes x 2 blocks
FP8 = ("float8_e4m3fn", "float8_e5m2")
SPECIAL = [0.0, -0.0, float("nan"), float("inf"), -float("inf"), 65504.0, 65520.0, -65536.0, 1e-8, -6e-8,
           448.0, 449.0, 464.0, 480.0, -500.0, 57344.0, 61440.0, 1e30, 1e-40, 1.0 + 2.0 ** -11, 1.0 + 2.0 ** -8,
           3.0e38, 0.001953125, 0.0009765625]


def vector_kernel(src, dst, lanes, form):
    @T.prim_func
    def k(A: T.Tensor((N,), src), B: T.Tensor((N,), dst)):
        with T.Kernel(N // (128 * lanes), threads=128) as bx:
            if form == "copy":
                T.copy(A[bx * 128 * lanes:(bx + 1) * 128 * lanes], B[bx * 128 * lanes:(bx + 1) * 128 * lanes])
            else:
                a = T.alloc_fragment((128 * lanes,), src)
                b = T.alloc_fragment((128 * lanes,), dst)
                T.copy(A[bx * 128 * lanes:(bx + 1) * 128 * lanes], a)
                for i in T.Parallel(128 * lanes):
                    b[i] = a[i]
                T.copy(b, B[bx * 128 * lanes:(bx + 1) * 128 * lanes])

    return k


def scalar_kernel(src, dst):
    @T.prim_func
    def k(A: T.Tensor((N,), src), B: T.Tensor((N,), dst)):
        with T.Kernel(N // 128, threads=128) as bx:
            tx = T.get_thread_binding()
            B[bx * 128 + tx] = T.cast(A[bx * 128 + tx], dst)

    return k


def inputs(src):
    g = torch.Generator().manual_seed(11)
    if src in FP8:  # every byte pattern, four times
        return torch.arange(256, dtype=torch.int32).repeat(N // 256).to(torch.uint8).view(getattr(torch, src))
    values = torch.randn(N, generator=g, dtype=torch.float64) * torch.logspace(-10, 10, N, dtype=torch.float64)
    values[:len(SPECIAL)] = torch.tensor(SPECIAL, dtype=torch.float64)
    values[N // 2:N // 2 + len(SPECIAL)] = -torch.tensor(SPECIAL, dtype=torch.float64)
    return values.to(getattr(torch, src))


def same(x, y):
    """Bitwise equal, or both NaN."""
    bits = {1: torch.uint8, 2: torch.int16, 4: torch.int32}[x.element_size()]
    nan = torch.isnan(x.float()) & torch.isnan(y.float())
    return bool(((x.view(bits) == y.view(bits)) | nan).all())


def run(func, a, dst):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kernel = tl.compile(func, target="cuda")
    b = torch.empty(N, dtype=getattr(torch, dst), device="cuda")
    kernel(a, b)
    return b, kernel.get_kernel_source()


@pytest.mark.parametrize("src, dst", sorted(PAIRS), ids=[f"{s}-{d}" for s, d in sorted(PAIRS)])
def test_paired_conversions_match_the_scalar_casts(src, dst):
    a = inputs(src).cuda()
    want, _ = run(scalar_kernel(src, dst), a, dst)
    for lanes in (2, 4):
        for form in ("copy", "parallel"):
            got, source = run(vector_kernel(src, dst, lanes, form), a, dst)
            assert "tl_cvt_" in source, (lanes, form)
            assert same(got, want), (lanes, form, (got.float() != want.float()).nonzero()[:8].flatten().tolist())
    # torch agrees where the value is finite and in the destination's range
    finite = torch.isfinite(a.float())
    if dst in FP8:
        finite &= a.float().abs() <= torch.finfo(getattr(torch, dst)).max
    ref = a.to(getattr(torch, dst))
    assert same(got[finite], ref[finite])
