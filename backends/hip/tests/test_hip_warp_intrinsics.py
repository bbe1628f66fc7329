"""TileLang's warp intrinsics and vector accesses compiled by clang for gfx942 (64-lane waves) and
gfx1100 (32-lane waves): the prelude's helpers (wave ballot, ds_bpermute shuffles, LDS block votes)
type-check and compile, and the 64-lane wave refuses what a 32-bit mask cannot name."""

import warnings

import pytest
from hip_examples import needs_clang

import tilelang_core.language as T
from tilelang_core.errors import LoweringError
from tilelang_hip import codegen, compiler
from tilelang_hip.options import HipOptions
from tilelang_hip.pipeline import HipBackend


def every_intrinsic(dtype, wave):
    @T.prim_func
    def kernel(A: T.Tensor((128,), "int32"), F: T.Tensor((128,), dtype), O: T.Tensor((128,), "int64"),
               P: T.Tensor((128,), dtype), Q: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding()
            a = A[tx]
            v = F[tx]
            O[tx] = (T.cast(T.ballot_sync(a > 0), "int64") + T.any_sync(a) + T.all_sync(a > 1)
                     + T.cast(T.activemask(), "int64") + T.__ffs(a) + T.__ffs(T.ballot(a))
                     + T.cast(T.__fns(a, 0, 2), "int64") + T.syncthreads_count(a > 0) + T.syncthreads_and(a)
                     + T.syncthreads_or(a) + T.get_lane_idx() + T.warp_reduce_bitand(a)
                     + T.warp_reduce_bitor(T.cast(a, "int64")) + T.warp_reduce_max(a)
                     + T.cast(T.shuffle_elect(wave), "int64") + T.__ldg(A[tx]))
            if wave == 32:
                O[tx] = O[tx] + T.match_any_sync(a) + T.match_all_sync(T.cast(a, "int64"))
            P[tx] = (T.shfl_sync(v, 3) + T.shfl_xor(v, 1) + T.shfl_up(v, 2, 16) + T.shfl_down(v, 1)
                     + T.warp_reduce_sum(v) + T.warp_reduce_max(v) + T.warp_reduce_min(v))
            T.sync_warp()
            T.stg256(Q[(tx // 8) * 8:(tx // 8) * 8 + 8], T.ldg256(Q[(tx // 8) * 8:(tx // 8) * 8 + 8], pred=tx > 3))

    return kernel


class Target:
    def __init__(self, arch):
        self.arch = arch


def lower(func, arch):
    backend, options = HipBackend(Target(arch)), HipOptions()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return backend, options, backend.lower(func, options)


@needs_clang
@pytest.mark.parametrize("arch,wave", [("gfx942", 64), ("gfx1100", 32)])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_every_intrinsic_compiles_with_clang(arch, wave, dtype, tmp_path):
    backend, options, mod = lower(every_intrinsic(dtype, wave), arch)
    source = backend.codegen(mod, options)
    for helper in ("tl_ballot_sync(", "tl_shfl_sync(", "tl_warp_reduce_sum(", "tl_syncthreads_count(", "tl_fns("):
        assert helper in source
    code_object = compiler.compile_device(codegen.split(source).device, arch, tmp_path, options)
    assert code_object.stat().st_size > 0


def test_match_on_a_64_lane_wave_is_refused():
    @T.prim_func
    def kernel(A: T.Tensor((64,), "int32")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            A[tx] = T.cast(T.match_all_sync(A[tx]), "int32")

    with pytest.raises(LoweringError, match="cannot hold the 64 lanes"):
        lower(kernel, "gfx942")


def test_only_kernels_that_call_warp_helpers_get_them():
    @T.prim_func
    def plain(A: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            A[tx] = A[tx] * 2.0

    backend, options, mod = lower(plain, "gfx942")
    assert "tl_wave_ballot" not in backend.codegen(mod, options)
