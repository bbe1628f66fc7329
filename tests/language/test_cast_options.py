"""T.cast's TileLang options (round=, sat=, rbits=): checked as TileLang checks them, accepted where
they ask for the conversion every backend does anyway (round to nearest even between floats,
truncation to integers, float8 saturating), refused with the reason where they would not (a
directed or stochastic rounding, an unsaturated float8), so an option is never dropped silently.
Accepted options run on every reference path and give the default conversion's values."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import tilelang_core.language as T
from tilelang_core.errors import FrontendError
from tilelang_core.language.tir.ir import _VALID_CAST_ROUNDING_MODES
from tilelang_core.testing.oracle import PATHS, run


def test_tilelang_rounding_modes_are_exported():
    assert _VALID_CAST_ROUNDING_MODES == {"", "rn", "rz", "rp", "rm", "rs"}


@pytest.mark.parametrize("kwargs, match", [
    (dict(round="invalid"), "Invalid round"),
    (dict(sat="invalid"), "Invalid sat"),
    (dict(round="rs"), "rbits is required"),
    (dict(round="rn", rbits=1), "rbits is only valid"),
])
def test_bad_options_raise_value_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        T.cast(1.0, "float8_e4m3fn", **kwargs)


@pytest.mark.parametrize("src, dst, kwargs, match", [
    ("float32", "float16", dict(round="rz"), "directed rounding is not lowered"),
    ("float32", "bfloat16", dict(round="rp"), "directed rounding is not lowered"),
    ("float32", "float8_e4m3fn", dict(round="rm"), "directed rounding is not lowered"),
    ("float32", "int32", dict(round="rn"), r"T\.nearbyint"),
    ("float32", "int32", dict(round="rm"), r"T\.floor"),
    ("float32", "float8_e5m2", dict(round="rs", rbits=T.int32(7)), "Stochastic rounding f32-to-FP8 requires sm_100a"),
    ("float16", "float8_e4m3fn", dict(sat=False), "saturate"),
])
def test_options_that_change_the_value_are_refused(src, dst, kwargs, match):
    with pytest.raises(FrontendError, match=match):
        T.cast(T.Cast(src, T.float32(1.5)) if src != "float32" else T.float32(1.5), dst, **kwargs)


def test_refusal_inside_a_kernel_names_the_line():
    with pytest.raises(FrontendError) as info:
        @T.prim_func
        def kernel(A: T.Tensor((4,), "float32"), B: T.Tensor((4,), "float16")):
            with T.Kernel(1, threads=4) as _:
                for i in T.Parallel(4):
                    B[i] = T.cast(A[i], "float16", round="rz")  # the refused line
    assert info.value.lineno is not None and "round='rz'" in str(info.value)
    assert "the refused line" in (info.value.source_line or "")


# (src, dst, options): each asks for the default conversion, or cannot change the value
ACCEPTED = [
    ("float32", "float16", dict(round="rn")),
    ("float32", "bfloat16", dict(round="rn", sat=True)),
    ("float32", "float8_e4m3fn", dict(round="rn")),
    ("float32", "float16", dict(sat=False)),  # float16 does not saturate: overflow is inf either way
    ("float32", "int32", dict(round="rz")),
    ("float16", "float32", dict(round="rm")),  # widening: exact under every mode
    ("int32", "int8", dict(round="rp")),  # integers do not round
]


def cast_kernel(n, src, dst, options):
    @T.prim_func
    def kernel(A: T.Tensor((n,), src), B: T.Tensor((n,), dst), C: T.Tensor((n,), dst)):
        with T.Kernel(1, threads=32) as _:
            for i in T.Parallel(n):
                scaled = A[i] * T.cast(2, src)  # a value bound inside the loop body
                B[i] = T.cast(scaled, dst, **options)
                C[i] = T.cast(scaled, dst)

    return kernel


NUMPY_DTYPES = ("float16", "float32", "int32", "int8")


@settings(max_examples=16, deadline=None)
@given(case=st.sampled_from([c for c in ACCEPTED if c[0] in NUMPY_DTYPES and c[1] in NUMPY_DTYPES]),
       n=st.sampled_from([1, 7, 64, 100]), path=st.sampled_from(PATHS), seed=st.integers(0, 1000))
def test_accepted_options_convert_as_the_default(case, n, path, seed):
    src, dst, options = case
    rng = np.random.default_rng(seed)
    scale = 100 if src.startswith("int") else 3e4  # float16 overflow included
    a = (rng.standard_normal(n) * scale).astype(src)
    b, c = np.zeros(n, dst), np.ones(n, dst)
    run(path, cast_kernel(n, src, dst, options), A=a, B=b, C=c)
    np.testing.assert_array_equal(b, c)
    if src.startswith("float") and dst.startswith("float"):
        want = (a * a.dtype.type(2)).astype(dst)  # doubled in src (exact or inf), nearest even, inf past float16
        np.testing.assert_array_equal(b, want)


@pytest.mark.parametrize("dst", ["bfloat16", "float8_e4m3fn"])
def test_accepted_options_on_narrow_floats_match_torch(dst):
    """bfloat16 and float8 (saturating) on the cpu backend, the reference, against torch."""
    import tilelang_core

    kernel = tilelang_core.compile(cast_kernel(100, "float32", dst, dict(round="rn", sat=True)), target="cpu")
    a = torch.randn(100, dtype=torch.float64).mul(300).float()
    b, c = torch.zeros(100, dtype=getattr(torch, dst)), torch.ones(100, dtype=getattr(torch, dst))
    kernel(a, b, c)
    doubled = a.double() * 2
    if dst.startswith("float8"):
        doubled = doubled.clamp(-448, 448)  # satfinite
    want = doubled.to(getattr(torch, dst))
    assert torch.equal(b.view(torch.uint8) if dst.startswith("float8") else b, want.view(torch.uint8) if
                       dst.startswith("float8") else want)
    assert torch.equal(b.float(), c.float())
