"""TileLang's warp intrinsics and vector accesses in MSL: the prelude's SIMD-group helpers
(simd_ballot, simd_shuffle, simd_sum, ...) pass the clang-19 type check against the shim, the
kernel keeps no CUDA spelling, and the block votes Metal lacks are refused at the user's line."""

import warnings

import pytest

import tilelang_core.language as T
from tilelang_core.errors import LoweringError
from tilelang_metal.check import check_msl, find_clang, structural_problems
from tilelang_metal.options import MetalOptions
from tilelang_metal.pipeline import MetalBackend


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
                     + T.get_warp_idx() + T.warp_reduce_bitand(a) + T.warp_reduce_bitor(T.cast(a, "int64"))
                     + T.warp_reduce_max(a) + T.cast(T.shuffle_elect(32), "int64") + T.__ldg(A[tx])
                     + T.shfl_sync(T.cast(a, "int64"), 2))
            P[tx] = (T.shfl_sync(v, 3) + T.shfl_xor(v, 1) + T.shfl_up(v, 2, 16) + T.shfl_down(v, 1)
                     + T.warp_reduce_sum(v) + T.warp_reduce_max(v) + T.warp_reduce_min(v))
            T.sync_warp()
            S = T.alloc_shared((64,), "float32")
            T.sts128(S[(tx // 4) * 4:(tx // 4) * 4 + 4], T.ldg128(Q[(tx // 4) * 4:(tx // 4) * 4 + 4]))
            T.sync_threads()
            T.stg64(Q[(tx // 2) * 2:(tx // 2) * 2 + 2], T.lds64(S[(tx // 2) * 2:(tx // 2) * 2 + 2]), pred=tx < 8)

    return kernel


class Target:
    def __init__(self, arch):
        self.arch = arch


def msl(func):
    backend, options = MetalBackend(Target("apple7")), MetalOptions()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return backend.codegen(backend.lower(func, options), options)


@pytest.mark.skipif(find_clang() is None, reason="clang-19 missing (apt-get install clang-19)")
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_every_intrinsic_type_checks(dtype):
    source = msl(every_intrinsic(dtype))
    check_msl(source)
    assert structural_problems(source) == []
    for helper in ("tl_ballot_sync(", "tl_shfl_sync(", "tl_warp_reduce_sum(", "tl_elect_one_sync()"):
        assert helper in source
    assert "simd_ballot(" in source and "simd_shuffle(" in source and "simd_sum(" in source


def test_block_votes_are_refused():
    @T.prim_func
    def kernel(A: T.Tensor((64,), "int32")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            A[tx] = T.syncthreads_count(A[tx] > 0)

    with pytest.raises(LoweringError, match="metal backend has no block-wide vote"):
        msl(kernel)


def test_only_kernels_that_call_warp_helpers_get_them():
    @T.prim_func
    def plain(A: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            A[tx] = A[tx] * 2.0

    @T.prim_func
    def voting(A: T.Tensor((64,), "int64")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            A[tx] = T.cast(T.ballot_sync(tx < 5), "int64")

    assert "tl_ballot_sync" not in msl(plain) and "simd_ballot" not in msl(plain)
    assert "simd_ballot(" in msl(voting)


@pytest.mark.skipif(find_clang() is None, reason="clang-19 missing (apt-get install clang-19)")
def test_loops_handing_data_over_through_device_memory_get_a_device_barrier():
    """Metal's threadgroup_barrier(mem_threadgroup) does not order device memory: two T.Parallel
    loops handing data over through a buffer argument get tl_sync_threads_device between them
    (tests/simt/test_global_barriers.py has the other backends); the MSL type-checks."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests" / "simt"))
    from test_global_barriers import handoff

    source = msl(handoff())
    check_msl(source)
    assert "threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup)" in source
    body = source[source.index("kernel void"):]
    assert body.count("tl_sync_threads_device();") == 1
