"""TileLang's T.CUDASourceCodeKernel (tilelang_core/language/source_kernel.py): a hand-written
``__global__`` entry launched as the kernel, its arguments the kernel's parameters (data
pointers, scalars) then the tensors' dynamic dimensions. Checked here: the source's entry becomes a
``__device__`` function the kernel calls with those arguments, nvcc compiles it (an entry named
``main_kernel`` too, TileLang's default, which is our kernel's own name), file paths, and the
refusals (a missing entry names the ones there are; other backends refuse the kernel by name).
Run on a GPU: tests/gpu/test_gpu_source_kernel.py."""

import re

import numpy as np
import pytest

import tilelang_core as tl
import tilelang_core.language as T
from tilelang_core import FrontendError, LoweringError
from tilelang_core.language.source_kernel import as_device_function, entries, load_source
from tilelang_core.testing.oracle import run

pytest.importorskip("tilelang_cuda")
from test_language_fidelity_build import compiles, needs_nvcc  # noqa: E402

COPY = """
extern "C" __global__ void external_copy(float* A, float* B, int n) {
    int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (i < n) {
        B[i] = A[i];
    }
}
"""

SCALE = """
#include <cuda_fp16.h>
__device__ float helper(float x) { return x; }
extern "C" __global__ void __launch_bounds__(256) main_kernel(const half* x, half* y, float alpha, int m, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < m * n) y[i] = __float2half(helper(alpha * __half2float(x[i])));
}
__global__ void unused(int* p) { p[0] = 1; }
"""


def copy_kernel(source=COPY, entry="external_copy"):
    N = T.dynamic("N")

    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32)):
        T.CUDASourceCodeKernel(T.ceildiv(N, 128), threads=128, source_code_or_path=source, entry_name=entry)

    return main


def scale_kernel():
    M, N = T.dynamic("M"), T.dynamic("N")

    @T.prim_func
    def main(X: T.Tensor((M, N), T.float16), Y: T.Tensor((M, N), T.float16), alpha: T.float32):
        T.CUDASourceCodeKernel(T.ceildiv(M * N, 256), threads=256, source_code_or_path=SCALE)

    return main


def source(func, arch="sm_90a"):
    return tl.compile(func, target=f"cuda:{arch}").get_kernel_source()


def test_the_entry_is_called_with_the_parameters_then_the_dynamic_dimensions():
    src = source(copy_kernel())
    assert 'extern "C" __device__ void tl_source_external_copy(float* A, float* B, int n)' in src
    assert re.search(r"tl_source_external_copy\(\(&\(A_ptr\[0\]\)\), \(&\(B_ptr\[0\]\)\), N\);", src), src
    assert "B[i] = A[i];" in src


def test_scalars_in_parameter_order_and_two_dimensions():
    src = source(scale_kernel())
    # TileLang's default entry name is our kernel's: renamed, no clash
    assert re.search(r"tl_source_main_kernel\(\(&\(X_ptr\[0\]\)\), \(&\(Y_ptr\[0\]\)\), alpha, M, N\);", src), src
    assert "__launch_bounds__(256) tl_source_main_kernel" not in src  # (bounds: the kernel's)
    assert "__global__ void unused" in src  # other entries stay as written


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_source_kernels_compile(arch, tmp_path):
    compiles(copy_kernel(), arch, tmp_path / "copy")
    compiles(scale_kernel(), arch, tmp_path / "scale")


def test_a_path_loads_the_file(tmp_path):
    path = tmp_path / "copy.cu"
    path.write_text(COPY)
    assert "B[i] = A[i];" in source(copy_kernel(path))
    assert "B[i] = A[i];" in source(copy_kernel(str(path)))
    assert load_source(str(path)) == COPY


def test_refusals():
    with pytest.raises(FrontendError, match=r"no __global__ function 'main_kernel'.*Available entries: external_copy"):
        copy_kernel(entry="main_kernel")
    with pytest.raises(FrontendError, match="CUDA source file not found: /no/such/kernel.cu"):
        copy_kernel("/no/such/kernel.cu")
    with pytest.raises(FrontendError, match="declares no __global__ function"):
        copy_kernel("__device__ void f() {}\n")
    with pytest.raises(FrontendError, match="source_code_or_path must be CUDA source"):
        copy_kernel("   ")


def test_other_backends_refuse_the_kernel_by_name():
    a = np.ones(8, np.float32)
    with pytest.raises(LoweringError, match="brings its own device source"):
        run("cpu", copy_kernel(), A=a, B=np.zeros_like(a))


def test_entries_and_the_device_rewrite():
    assert entries(SCALE) == ["main_kernel", "unused"]
    rewritten = as_device_function(SCALE, "main_kernel", "tl_source_main_kernel")
    assert 'extern "C" __device__ void tl_source_main_kernel(const half* x' in rewritten
    assert "__global__ void unused" in rewritten and "__device__ float helper" in rewritten
