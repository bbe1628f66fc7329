"""Every kernel in examples/ compiled to MSL for Apple GPUs, with no Mac: the MSL passes the
clang-19 syntax/type check against our metal_stdlib shim and the structural checks (kernel
signature, barriers around reused threadgroup memory, the simdgroup_matrix path for T.gemm, no
CUDA spellings). The cpu backend runs the same programs against torch (tests/examples)."""

import pytest

from metal_cases import EXAMPLE_CASES, msl, needs_clang
from tilelang_metal.check import check_msl, structural_problems

_SOURCES = {}


def source(name):
    if name not in _SOURCES:
        _SOURCES[name] = msl(EXAMPLE_CASES[name][0]())
    return _SOURCES[name]


@needs_clang
@pytest.mark.parametrize("name", sorted(EXAMPLE_CASES))
def test_example_msl_passes_the_syntax_and_type_check(name):
    check_msl(source(name), name)


@pytest.mark.parametrize("name", sorted(EXAMPLE_CASES))
def test_example_msl_has_the_structure_meant(name):
    text = source(name)
    assert structural_problems(text, gemm=EXAMPLE_CASES[name][1]) == []
    assert "[[threadgroup_position_in_grid]]" in text and "[[ buffer(0) ]]" in text


def test_reductions_use_simd_functions():
    text = source("rms_norm")
    assert "simd_sum(" in text and "simd_shuffle_xor" not in text  # 32-lane rows: one call
    assert "simd_shuffle_xor(" in source("softmax")  # rows over 4 lanes: butterflies


def test_splitk_adds_partials_with_metal_atomics():
    text = source("gemm_splitk")
    assert "tl_atomic_add(" in text and "atomic_fetch_add_explicit" in text


def test_flash_attention_feeds_p_from_registers_into_the_second_gemm():
    text = source("flash_attention")
    calls = [line for line in text.splitlines() if "tl_simdgroup_gemm<" in line and "(&(" in line]
    assert len(calls) == 2
    assert any("acc_s_cast" in line for line in calls)  # P @ V: A is the register fragment
