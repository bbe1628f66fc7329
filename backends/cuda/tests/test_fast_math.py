"""Fast-math choices of the cuda backend: T.exp2 as one ex2.approx.ftz instruction by default,
float32 division IEEE unless tl.fast_div, TileLang's tl.enable_fast_math (pipeline.codegen)."""

import pytest

import kernels
from tilelang_core.errors import ConfigError
from tilelang_cuda.options import CudaOptions
from test_hopper_lowering import HOPPER_TILES, _flash_example, cuda_source


def test_exp2_is_one_instruction_unless_precise_exp2():
    """T.exp2 on float32 -> tl_exp2 (ex2.approx.ftz); tl.precise_exp2 keeps CUDA's exp2f."""
    source, kernel = cuda_source(kernels.make_flash_attention(2, 4, 1000, 128, 128, 128, 256))
    assert "tl_exp2(" in kernel and "exp2f(" not in kernel
    assert "ex2.approx.ftz.f32" in source
    precise, kernel = cuda_source(kernels.make_flash_attention(2, 4, 1000, 128, 128, 128, 256), precise_exp2=True)
    assert "tl_exp2(" not in precise and "exp2f(" in kernel
    plain, _ = cuda_source(kernels.make_gemm(256, 256, 256, **HOPPER_TILES))
    assert "tl_exp2" not in plain  # the helper only where it is called


def test_float32_division_is_ieee_unless_fast_div():
    """float32 / in a kernel stays IEEE division, as in TileLang (TileKernels compares quotients bit
    for bit with torch); tl.fast_div makes it tl_div (div.full.f32: attention's epilogue divides by
    the row sum without an FCHK and slow-path branch per element), except in kernels on the dynamic
    tile scheduler (measured slower with it; transform/fast_divide.py)."""
    attention = kernels.make_flash_attention(2, 4, 1000, 128, 128, 128, 256)
    precise, kernel = cuda_source(attention)
    assert "tl_div(" not in precise and "div.full.f32" not in precise and " / " in kernel
    source, kernel = cuda_source(attention, fast_div=True)
    assert "tl_div(" in kernel and "div.full.f32" in source and " / logsum" not in kernel
    host = source[source.find("#include <tvm/ffi/c_api.h>"):]
    assert "tl_div(" not in host
    causal = _flash_example().get_tir(2, 3, 1000, 128, True, block_M=128, block_N=128, threads=256)
    _, dynamic = cuda_source(causal, fast_div=True)
    assert "tl_claim_tile(" in dynamic and "tl_div(" not in dynamic
    assert "tl_div(" in cuda_source(causal, disable_persistent=True, fast_div=True)[1]


def test_tilelang_fast_math_key_and_retired_precise_div():
    """TileLang's tl.enable_fast_math passes --use_fast_math (it was accepted and ignored);
    tl.precise_div, the old opt-out, is refused with what replaced it."""
    assert CudaOptions.from_pass_configs({"tl.enable_fast_math": True}).fast_math
    assert not CudaOptions.from_pass_configs({"tl.disable_fast_math": True}).fast_math
    with pytest.raises(ConfigError, match="tl.fast_div"):
        CudaOptions.from_pass_configs({"tl.precise_div": True})
