"""A kernel's CUDA source holds the device helpers it calls and nothing else (intrinsics.py's
ON_DEMAND_HELPERS), each defined before its callers, and compiles with nvcc; the device code has no
"if (" of ours (TileLang's tests look for it to find bounds checks)."""

import re

import pytest

import tilelang_core.language as T

pytest.importorskip("tilelang_cuda")
from test_language_fidelity_build import compiles, needs_nvcc  # noqa: E402
from tilelang_cuda.intrinsics import ON_DEMAND_HELPERS, with_on_demand_helpers  # noqa: E402


def store_only():
    N = T.dynamic("N")

    @T.prim_func
    def k(A: T.Tensor((N,), "float32"), lo: T.int32):
        with T.Kernel(1, threads=32):
            for i in T.serial(4):
                T.assume(lo + i >= 0 and lo + i < N)
                A[lo + i] = 0.0

    return k


def copy_and_atomics():
    @T.prim_func
    def k(A: T.Tensor((256, 64), "float16"), C: T.Tensor((64,), "float32")):
        with T.Kernel(4, threads=128) as bx:
            s = T.alloc_shared((64, 64), "float16")
            T.copy(A[bx * 64, 0], s)
            for i, j in T.Parallel(64, 64):
                T.atomic_add(C[j], T.cast(s[i, j], "float32"))

    return k


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_a_kernel_without_helpers_gets_none(arch, tmp_path):
    from tilelang_cuda.codegen import split_source

    device = split_source(compiles(store_only(), arch, tmp_path)).device
    assert not re.search(r"\btl_\w+\(", device.split('extern "C" __global__')[0]), "a helper nobody calls"
    assert "if (" not in device


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_called_helpers_come_with_their_callees_and_compile(arch, tmp_path):
    source = compiles(copy_and_atomics(), arch, tmp_path)
    # sm_90a adds 4 columns at once (AtomicAddx4, whose ordered form calls the atomics' fences)
    assert ("tl_atomic_add" if arch == "sm_80" else "AtomicAddx4") in source
    assert "tl_fence_before" in source  # the atomics' block, once
    assert source.count("__device__ __forceinline__ void tl_fence_before") == 1
    assert "tl_mma_m16n8k16" not in source and "tl_shfl_xor(float" not in source


def test_every_helper_is_defined_before_the_helpers_that_call_it():
    names = list(ON_DEMAND_HELPERS)
    for i, name in enumerate(names):
        called = set(re.findall(r"\b(tl_\w+)[(<]", ON_DEMAND_HELPERS[name])) & set(names)
        later = [c for c in called if names.index(c) > i and ON_DEMAND_HELPERS[c] != ON_DEMAND_HELPERS[name]]
        assert not later, f"{name} calls {later}, defined after it"


def test_the_closure_adds_what_the_added_helpers_call():
    from tilelang_cuda.intrinsics import DEVICE_HEADER

    source = DEVICE_HEADER + 'extern "C" __global__ void k(void* a, void* b) { tl_cp_async_16(a, b, true); }\n'
    out = with_on_demand_helpers(source)
    assert out.index("unsigned tl_smem_addr(") < out.index("void tl_cp_async_16(") < out.index("__global__")
