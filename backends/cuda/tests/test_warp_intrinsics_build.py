"""TileLang's warp intrinsics and vector accesses in CUDA source: every helper spelled with CUDA's
own intrinsic (__ballot_sync, __shfl_sync, __match_any_sync, __syncthreads_count, __fns, ...),
the device code compiled by nvcc for sm_80 and sm_90a, and only the helpers a kernel calls in
its source."""

import shutil
from pathlib import Path

import pytest

import tilelang_core.language as T

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists(),
                                reason="nvcc (CUDA toolkit) is not installed")


def every_intrinsic(dtype):
    @T.prim_func
    def kernel(A: T.Tensor((64,), "int32"), F: T.Tensor((64,), dtype), O: T.Tensor((64,), "int64"),
               P: T.Tensor((64,), dtype), Q: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            a = A[tx]
            v = F[tx]
            O[tx] = (T.cast(T.ballot_sync(a > 0), "int64") + T.any_sync(a) + T.all_sync(a > 1)
                     + T.cast(T.activemask(), "int64") + T.match_any_sync(a) + T.match_all_sync(T.cast(a, "int64"))
                     + T.__ffs(a) + T.__ffs(T.ballot(a)) + T.cast(T.__fns(a, 0, 2), "int64")
                     + T.syncthreads_count(a > 0) + T.syncthreads_and(a) + T.syncthreads_or(a)
                     + T.get_lane_idx() + T.get_warp_group_idx() + T.warp_reduce_bitand(a)
                     + T.warp_reduce_bitor(T.cast(a, "int64")) + T.warp_reduce_max(a)
                     + T.cast(T.shuffle_elect(32), "int64") + T.__ldg(A[tx]))
            P[tx] = (T.shfl_sync(v, 3) + T.shfl_xor(v, 1) + T.shfl_up(v, 2, 16) + T.shfl_down(v, 1)
                     + T.warp_reduce_sum(v) + T.warp_reduce_max(v) + T.warp_reduce_min(v))
            T.sync_warp()
            S = T.alloc_shared((64,), "float32")
            T.sts128(S[(tx // 4) * 4:(tx // 4) * 4 + 4], T.ldg128(Q[(tx // 4) * 4:(tx // 4) * 4 + 4]))
            T.sync_threads()
            T.stg64(Q[(tx // 2) * 2:(tx // 2) * 2 + 2], T.lds64(S[(tx // 2) * 2:(tx // 2) * 2 + 2]), pred=tx < 8)
            T.stg256(Q[(tx // 8) * 8:(tx // 8) * 8 + 8], T.ldg256(Q[(tx // 8) * 8:(tx // 8) * 8 + 8], pred=tx > 3))

    return kernel


class Target:
    def __init__(self, arch):
        self.arch = arch


def cuda_source(func, arch):
    from tilelang_cuda.options import CudaOptions
    from tilelang_cuda.pipeline import CudaBackend

    backend, options = CudaBackend(Target(arch)), CudaOptions(device_compiler="nvcc")
    return backend.codegen(backend.lower(func, options), options), options


SPELLINGS = ("__ballot_sync(", "__any_sync(", "__all_sync(", "__activemask()", "__match_any_sync(",
             "__match_all_sync(", "__shfl_sync(", "__shfl_xor_sync(", "__syncwarp(", "__syncthreads_count(",
             "__syncthreads_and(", "__syncthreads_or(", "__ffs(", "__ffsll(", "__fns(", "__ldg(", "%%laneid")


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_every_intrinsic_compiles_with_nvcc(arch, dtype, tmp_path):
    from tilelang_cuda import codegen, compiler

    source, options = cuda_source(every_intrinsic(dtype), arch)
    missing = [s for s in SPELLINGS if s not in source]
    assert not missing, missing
    kernel = source[source.find('extern "C" __global__'):]
    assert "*(float4*)(Q_ptr" in kernel and "*(ulonglong4*)(Q_ptr" in kernel  # one vector access each
    cubin, _, _ = compiler.compile_device(codegen.split_source(source).device, arch, tmp_path, options)
    assert Path(cubin).stat().st_size > 0


def test_a_kernel_without_warp_intrinsics_gets_none_of_their_helpers():
    @T.prim_func
    def plain(A: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            A[tx] = A[tx] * 2.0

    @T.prim_func
    def one(A: T.Tensor((64,), "int64")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            A[tx] = T.cast(T.ballot_sync(tx < 5), "int64")

    source, _ = cuda_source(plain, "sm_80")
    assert "tl_ballot_sync" not in source and "__match_any_sync" not in source
    source, _ = cuda_source(one, "sm_80")
    assert "tl_ballot_sync(" in source and "__ballot_sync(" in source
    assert "__match_any_sync" not in source and "tl_warp_reduce_sum" not in source
