"""Vector casts in CUDA source (tilelang_cuda/vector_casts.py): a converting T.copy and a T.Parallel
cast between fragments store 2 or 4 converted lanes with one paired-conversion helper
(``__float22half2_rn``, ``__nv_cvt_float2_to_fp8x2``, ...), for every pair the table names; the
device code compiles for sm_90a; a kernel without such casts gets none of the helpers. The GPU
test (gpu/test_gpu_vector_casts.py) checks the values bit for bit against the scalar casts."""

import shutil
from pathlib import Path

import pytest

import tilelang_core.language as T

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists(),
                                reason="nvcc (CUDA toolkit) is not installed")

from tilelang_cuda.vector_casts import PAIRS, VECTOR_CASTS  # noqa: E402

#: the CUDA intrinsic each pair's helpers must use (what TileLang's test_vectorized_cast looks for)
INTRINSIC = {("float32", "float16"): "__float22half2_rn", ("float16", "float32"): "__half22float2",
             ("float32", "bfloat16"): "__float22bfloat162_rn", ("bfloat16", "float32"): "__bfloat1622float2"}
for _k in ("float8_e4m3fn", "float8_e5m2"):
    INTRINSIC.update({("float32", _k): "__nv_cvt_float2_to_fp8x2", (_k, "float32"): "__tl_cvt_fp8x2_to_float2",
                      ("float16", _k): "__nv_cvt_halfraw2_to_fp8x2", (_k, "float16"): "__tl_cvt_fp8x2_to_half2",
                      ("bfloat16", _k): "__nv_cvt_bfloat16raw2_to_fp8x2", (_k, "bfloat16"): "__tl_cvt_fp8x2_to_bfloat162"})


def casts(src, dst):
    """2 and 4 lanes per thread (128 threads over 256 and 512 elements), by copy and by T.Parallel."""
    @T.prim_func
    def k(A2: T.Tensor((256,), src), B2: T.Tensor((256,), dst), A4: T.Tensor((512,), src),
          B4: T.Tensor((512,), dst), C4: T.Tensor((512,), dst)):
        with T.Kernel(1, threads=128):
            T.copy(A2, B2)
            a = T.alloc_fragment((512,), src)
            b = T.alloc_fragment((512,), dst)
            T.copy(A4, a)
            for i in T.Parallel(512):
                b[i] = a[i]
            T.copy(b, B4)
            T.copy(A4, C4)

    return k


class Target:
    def __init__(self, arch):
        self.arch = arch


def cuda_source(func, arch="sm_90a"):
    from tilelang_cuda.options import CudaOptions
    from tilelang_cuda.pipeline import CudaBackend

    backend, options = CudaBackend(Target(arch)), CudaOptions()
    return backend.codegen(backend.lower(func, options), options), options


def test_the_table_covers_both_directions_of_every_pair():
    assert set(PAIRS) == set(INTRINSIC)
    assert all((d, s) in PAIRS for s, d in PAIRS)


@pytest.mark.parametrize("src, dst", sorted(PAIRS), ids=[f"{s}-{d}" for s, d in sorted(PAIRS)])
def test_vector_casts_are_paired_and_compile(src, dst, tmp_path):
    from tilelang_cuda import codegen, compiler

    source, options = cuda_source(casts(src, dst))
    kernel = source[source.find('extern "C" __global__'):]
    for lanes in (2, 4):
        assert f"{VECTOR_CASTS.helper(src, dst, lanes)}((&(" in kernel, lanes
    assert kernel.count(VECTOR_CASTS.helper(src, dst, 4) + "(") == 2  # the T.Parallel cast and the copy
    assert INTRINSIC[(src, dst)] in source
    cubin, _, _ = compiler.compile_device(codegen.split_source(source).device, "sm_90a", tmp_path, options)
    assert Path(cubin).stat().st_size > 0


def test_a_kernel_without_vector_casts_gets_none_of_their_helpers():
    @T.prim_func
    def plain(A: T.Tensor((256,), "float32"), B: T.Tensor((256,), "float16")):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding()
            B[tx] = T.cast(A[tx] * 2.0, "float16")  # scalar: no pair to convert

    source, _ = cuda_source(plain)
    assert "tl_cvt_" not in source and "__float22half2_rn" not in source
