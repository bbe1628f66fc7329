"""float8 conversions on the cpu backend against torch: every code decoded, random values encoded
(subnormals, ties, zero, NaN), saturation of finite overflow, float16/bfloat16 on either side.
TVM's own LLVM lowering decoded code 0 as 0.0078125 and flushed subnormals."""

import pytest
import torch

import tilelang_core.language as T
from cpu_harness import compile_cpu

FMTS = ["float8_e4m3fn", "float8_e5m2"]
MAX = {"float8_e4m3fn": 448.0, "float8_e5m2": 57344.0}


def convert(n, src, dst):
    @T.prim_func
    def cvt(X: T.Tensor((n,), src), Y: T.Tensor((n,), dst)):
        with T.Kernel(T.ceildiv(n, 256), threads=128) as bx:
            for i in T.Parallel(256):
                Y[bx * 256 + i] = X[bx * 256 + i]

    return compile_cpu(cvt)


def same(a, b):
    return bool(((a == b) | (a.isnan() & b.isnan())).all())


@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("dst", ["float32", "float16"])
def test_every_code_decodes_as_torch_does(fmt, dst):
    codes = torch.arange(256, dtype=torch.uint8).view(getattr(torch, fmt))
    out = torch.zeros(256, dtype=getattr(torch, dst))
    convert(256, fmt, dst)(codes, out)
    assert same(out.float(), codes.float())


@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("src", ["float32", "bfloat16"])
def test_random_values_encode_as_torch_does(fmt, src):
    n = 1 << 14
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(n, generator=gen) * torch.exp2(torch.randint(-22, 12, (n,), generator=gen).float())
    x = x.clamp(-MAX[fmt], MAX[fmt]).to(getattr(torch, src))
    x[:4] = torch.tensor([0.0, -0.0, float("nan"), 2.0 ** -9 * 1.5])  # zero, NaN, a subnormal tie
    out = torch.zeros(n, dtype=getattr(torch, fmt))
    convert(n, src, fmt)(x, out)
    assert same(out.float(), x.to(getattr(torch, fmt)).float())


@pytest.mark.parametrize("fmt", FMTS)
def test_finite_overflow_and_inf_saturate(fmt):
    x = torch.tensor([MAX[fmt] * 1.2, -MAX[fmt] * 3, float("inf"), -float("inf")] + [0.0] * 252)
    out = torch.zeros(256, dtype=getattr(torch, fmt))
    convert(256, "float32", fmt)(x, out)
    assert out[:4].float().tolist() == [MAX[fmt], -MAX[fmt], MAX[fmt], -MAX[fmt]]
