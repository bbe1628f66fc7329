"""Programs of several kernels with T.alloc_global workspaces, T.ptr parameters and pointer tables,
built for sm_80 and sm_90a by the real toolchain (no GPU needed): the host wrapper allocates each
workspace once on the launch stream, launches the kernels in program order and frees it after the
last; TMA descriptors of a workspace encode the workspace's pointer; a tensor viewed through a
pointer table never gets a host-encoded descriptor. Numerics: tests/language (cpu and the sm_80
interpreter) and tests/gpu/test_gpu_program_kernels.py on a GPU."""

import re
import shutil

import pytest

import tilelang_core as tilelang
import tilelang_core.language as T
from tilelang_cuda.codegen import split_source

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None and not __import__("os").path.exists(
    "/usr/local/cuda/bin/nvcc"), reason="nvcc (CUDA toolkit) is not installed")

ARCHS = ("sm_80", "sm_90a")


def split_combine(N, block):
    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32)):
        W = T.alloc_global((N,), T.float32)
        V = T.alloc_global((2, N), T.float16)
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            for i in T.Parallel(block):
                W[bx * block + i] = A[bx * block + i] * 2.0
                V[1, bx * block + i] = A[bx * block + i]
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            for i in T.Parallel(block):
                B[bx * block + i] = W[(N - 1) - (bx * block + i)] + V[1, bx * block + i]

    return main


def gemm_then_scale(M, N, K, bm=64, bn=64, bk=32):
    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((K, N), T.float16), D: T.Tensor((M, N), T.float32)):
        W = T.alloc_global((M, N), T.float16)
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bk), T.float16)
            B_s = T.alloc_shared((bk, bn), T.float16)
            acc = T.alloc_fragment((bm, bn), T.float32)
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy(A[by * bm, k * bk], A_s)
                T.copy(B[k * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, acc)
            T.copy(acc, W[by * bm, bx * bn])
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            W_s = T.alloc_shared((bm, bn), T.float16)
            T.copy(W[by * bm, bx * bn], W_s)
            for i, j in T.Parallel(bm, bn):
                D[by * bm + i, bx * bn + j] = W_s[i, j] * 2.0

    return main


def table_gemm(G, M, N, K, bm=64, bn=64, bk=32):
    @T.prim_func
    def main(a_ptrs: T.Tensor([G], T.ptr), B: T.Tensor((K, N), T.float16), C: T.Tensor((G, M, N), T.float32)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), G, threads=128) as (bx, by, g):
            A = T.make_tensor(a_ptrs[g], (M, K), T.float16)
            A_s = T.alloc_shared((bm, bk), T.float16)
            B_s = T.alloc_shared((bk, bn), T.float16)
            acc = T.alloc_fragment((bm, bn), T.float32)
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy(A[by * bm, k * bk], A_s)
                T.copy(B[k * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, acc)
            T.copy(acc, C[g, by * bm, bx * bn])

    return main


def pointer_params(K):
    @T.prim_func
    def main(a_ptr: T.ptr, c_ptr: T.ptr, m: T.int32):
        A = T.make_tensor(a_ptr, (m, K), T.float16)
        C = T.make_tensor(c_ptr, (m, K), T.float16)
        with T.Kernel(T.ceildiv(m, 4), threads=128) as bx:
            for i, j in T.Parallel(4, K):
                C[bx * 4 + i, j] = A[bx * 4 + i, j] + A[bx * 4 + i, j]

    return main


def host_of(kernel) -> str:
    return split_source(kernel.get_kernel_source(kernel_only=False)).host


@pytest.mark.parametrize("arch", ARCHS)
def test_the_wrapper_allocates_launches_in_order_and_frees(arch):
    kernel = tilelang.compile(split_combine(100, 32), target=f"cuda:{arch}")
    host = host_of(kernel)
    events = [m.group(0) for m in re.finditer(r"tl_scratch_alloc\(\(int64_t\)\d+|tl_launch_\d\(&|tl_scratch_free\(\w+\)",
                                              host.split("__tvm_ffi_main(void* self_handle")[-1])]
    assert events == ["tl_scratch_alloc((int64_t)400", "tl_scratch_alloc((int64_t)400",  # 100 fp32, 2x100 fp16
                      "tl_launch_0(&", "tl_launch_1(&", "tl_scratch_free(V_workspace)", "tl_scratch_free(W_workspace)"]
    assert "could not allocate the T.alloc_global workspace 'W'" in host
    assert kernel.artifact_path.stat().st_size > 0
    assert [p.name for p in kernel.params] == ["A", "B"]  # workspaces are no parameters of the call


def test_a_dynamic_workspace_is_sized_on_the_host():
    n = T.dynamic("n")

    @T.prim_func
    def main(A: T.Tensor((n,), T.float32), B: T.Tensor((n,), T.float32)):
        W = T.alloc_global((n, 3), T.float32)
        with T.Kernel(T.ceildiv(n, 32), threads=32) as bx:
            for i in T.Parallel(32):
                if bx * 32 + i < n:
                    W[bx * 32 + i, 2] = A[bx * 32 + i]
        with T.Kernel(T.ceildiv(n, 32), threads=32) as bx:
            for i in T.Parallel(32):
                if bx * 32 + i < n:
                    B[bx * 32 + i] = W[bx * 32 + i, 2]

    host = host_of(tilelang.compile(main, target="cuda:sm_80"))
    assert "tl_scratch_alloc((((int64_t)n) * (int64_t)12), (int64_t)0)" in host  # n x 3 float32


def test_tma_descriptors_of_a_workspace_encode_its_pointer():
    kernel = tilelang.compile(gemm_then_scale(128, 128, 64), target="cuda:sm_90a")
    host = host_of(kernel)
    assert re.search(r"auto tensormap_arg_\d+ = W_workspace;", host)  # the TMA store into W
    alloc, launch = host.find("tl_scratch_alloc(("), host.find("tl_launch_0(&")
    encodes = [m.start() for m in re.finditer(r"cuTensorMapEncodeTiled\(static_cast", host)]
    assert encodes and alloc < min(encodes) and max(encodes) < launch


@pytest.mark.parametrize("arch", ARCHS)
def test_a_tensor_viewed_through_a_pointer_table_gets_no_host_descriptor(arch):
    kernel = tilelang.compile(table_gemm(3, 128, 128, 64), target=f"cuda:{arch}")
    source = kernel.get_kernel_source(kernel_only=False)
    device = split_source(source).device
    assert re.search(r"void\* ptr = \(void\*\)\(\(void\*\)a_ptrs\w*\[", device)
    assert "cuTensorMapEncode" not in host_of(kernel)
    if arch == "sm_90a":
        assert "copy from A: a tensor the kernel declares (T.make_tensor)" in source  # no TMA producer for it


@pytest.mark.parametrize("arch", ARCHS)
def test_pointer_parameters_are_checked_tensor_parameters(arch):
    kernel = tilelang.compile(pointer_params(8), target=f"cuda:{arch}")
    host = host_of(kernel)
    assert "(2 == (((DLTensor*)A_handle)[0].ndim))" in host  # checked like any tensor
    assert [(p.name, p.pointer) for p in kernel.params] == [("A", True), ("C", True), ("m", False)]


def test_the_single_file_nvcc_build_defines_the_scratch_helpers():
    import ctypes
    import os

    # a shared library may leave symbols undefined: bind them all now, as a first call would
    kernel = tilelang.compile(split_combine(64, 32), target="cuda:sm_80", pass_configs={"host_build": "nvcc"})
    ctypes.CDLL(str(kernel.artifact_path), mode=os.RTLD_NOW | os.RTLD_LOCAL)
