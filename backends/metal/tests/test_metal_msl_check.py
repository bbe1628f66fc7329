"""The no-Mac checks can fail: the clang-19 syntax/type check rejects MSL with a wrong address
space, an undeclared name, a double, a misspelled attribute, a register array handed to
simdgroup_load; the structural checks see a missing barrier, a CUDA spelling, a gemm off the
simdgroup path and an unbound pointer."""

import re

import pytest

from metal_cases import example, msl, needs_clang
from tilelang_core.errors import CompileError
from tilelang_metal.check import check_msl, kernel_part, structural_problems


@pytest.fixture(scope="module")
def gemm_msl():
    return msl(example("gemm/gemm.py").gemm.get_tir(128, 128, 64))


def in_kernel(source, old, new, count=1):
    """Replace in the generated kernel only (the prelude stays as it is)."""
    body = kernel_part(source)
    assert old in body, old
    return source[:len(source) - len(body)] + body.replace(old, new, count)


def register_array_as_b(source):
    body = kernel_part(source)
    (line,) = [ln for ln in body.splitlines() if "tl_simdgroup_gemm<" in ln]
    bad = re.sub(r"\(&\(smem\[[^\]]*\]\)\), (\d+)\);$", r"(&(C_local[0])), \1);", line)
    assert bad != line
    return source.replace(line, bad)


MUTATIONS = {
    "device pointer where threadgroup memory is expected": (
        lambda s: in_kernel(s, "tl_copy_16(", "tl_store_16("), "no matching function"),
    "undeclared identifier": (
        lambda s: in_kernel(s, "threadgroup_barrier(mem_flags::mem_threadgroup);", "__syncthreads();"),
        "undeclared identifier"),
    "double": (lambda s: in_kernel(s, "thread float C_local[", "thread double C_local["),
               "__metal_has_no_double"),
    "misspelled attribute": (
        lambda s: in_kernel(s, "[[thread_position_in_threadgroup]]", "[[thread_position_in_threadgrup]]"),
        "unknown attribute"),
    "register array handed to simdgroup_load": (register_array_as_b, "no matching function"),
    "missing semicolon": (lambda s: in_kernel(s, "threadgroup_barrier(mem_flags::mem_threadgroup);",
                                              "threadgroup_barrier(mem_flags::mem_threadgroup)"), "expected ';'"),
}


@needs_clang
def test_generated_gemm_passes(gemm_msl):
    check_msl(gemm_msl, "gemm")


@needs_clang
@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_check_rejects(gemm_msl, mutation):
    mutate, message = MUTATIONS[mutation]
    with pytest.raises(CompileError, match="kernel 'gemm' fails the clang-19") as info:
        check_msl(mutate(gemm_msl), "gemm")
    assert message in info.value.log


def test_structural_checks_see_a_missing_barrier(gemm_msl):
    body = kernel_part(gemm_msl)
    stripped = gemm_msl.replace(body, body.replace("threadgroup_barrier(mem_flags::mem_threadgroup);", "", 1))
    assert any("fewer than two barriers" in p for p in structural_problems(stripped, gemm=True))


def test_structural_checks_see_cuda_spellings_and_unbound_pointers(gemm_msl):
    bad = in_kernel(gemm_msl, "threadgroup_barrier(mem_flags::mem_threadgroup);", "__syncthreads();")
    bad = in_kernel(bad, " [[ buffer(1) ]]", "")
    problems = structural_problems(bad, gemm=True)
    assert any("'__syncthreads'" in p for p in problems)
    assert any("B_ptr" in p and "[[buffer(i)]]" in p for p in problems)


def test_structural_checks_see_a_gemm_off_the_simdgroup_path():
    fma = msl(example("gemm/gemm.py").gemm.get_tir(128, 128, 64), disable_simdgroup_matrix=True)
    assert structural_problems(fma, gemm=False) == []
    assert structural_problems(fma, gemm=True) == ["kernel main_kernel: T.gemm did not take the "
                                                    "simdgroup_matrix path"]
