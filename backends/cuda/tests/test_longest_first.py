"""LongestFirst (tilelang_core/simt/transform/longest_first.py) on the CUDA lowering: causal
attention's row blocks launched in reverse x order with tl.enable_longest_first; grids whose
loops do not grow along x, and kernels with T.use_swizzle, keep their order. The reversed kernel
runs in the SIMT interpreter against torch in float64."""

import numpy as np
import torch
import tvm_ffi
from tvm import tirx

import kernels
import tilelang_core.language as T
from test_split_masked_fills import AMPERE, flash_attention, lowered
from tilelang_core.simt.transform.longest_first import longest_first, trip_counts
from tilelang_cuda.interpreter import run_kernel


def launch_x(func):
    found = []
    tvm_ffi.structural_walk(func.body, [(tirx.AttrStmt, lambda a: found.append((a.node.var, int(a.value)))
                                         if a.attr_key == "thread_extent" and str(a.node.thread_tag) == "blockIdx.x"
                                         else None)])
    return found[0]


def test_causal_trip_counts_grow_and_the_grid_is_walked_backwards():
    ex = flash_attention()
    func = ex.flash_attention.get_tir(1, 2, 1000, 64, True, block_M=128, block_N=64, threads=128)
    bx, gx = launch_x(func)
    assert trip_counts(func.body, bx, gx) == [2, 4, 6, 8, 10, 12, 14, 16]
    assert not tvm_ffi.structural_equal(longest_first(func.body), func.body)
    _, source = lowered(func, enable_longest_first=True, **AMPERE)
    _, plain = lowered(func, **AMPERE)
    # row block 7 - bx runs 2 (7 - bx) + 2 key blocks: block 0 now the longest
    assert "for (int k = 0; k < (16 - (((int)blockIdx.x) * 2)); ++k) {" in source
    assert "for (int k = 0; k < ((((int)blockIdx.x) * 2) + 2); ++k) {" in plain


def test_grids_without_growing_loops_keep_their_order():
    """Non-causal attention (every row block runs all key blocks), a GEMM, and a causal kernel
    that asks for its own order with T.use_swizzle: the pass leaves the body as it was."""
    ex = flash_attention()
    full = ex.flash_attention.get_tir(1, 2, 1000, 64, False, block_M=128, block_N=64, threads=128)
    bx, gx = launch_x(full)
    assert set(trip_counts(full.body, bx, gx) or [16]) == {16}
    gemm = kernels.make_gemm(1000, 520, 264, bm=128, bn=128, bk=32, threads=128, stages=3)
    for func in (full, gemm):
        assert tvm_ffi.structural_equal(longest_first(func.body), func.body)

    @T.prim_func
    def triangle(A: T.Tensor((256, 64), "float32"), B: T.Tensor((256,), "float32")):
        with T.Kernel(8, 2, threads=32) as (bx, by):
            T.use_swizzle(panel_size=2)
            for k in T.serial(bx + 1):
                B[bx * 32 + T.get_thread_binding()] += A[bx * 32 + T.get_thread_binding(), k]

    assert tvm_ffi.structural_equal(longest_first(triangle.body), triangle.body)


def test_reversed_causal_attention_matches_torch():
    """sm_80 lowering with the reversed grid, run by the SIMT interpreter: every row block is still
    computed once, ragged last block included (200 rows in 64-row blocks)."""
    ex = flash_attention()
    B, H, S, D = 1, 1, 200, 32
    q, k, v = (torch.randn(B, S, H, D).half() for _ in range(3))
    o = np.full((B, S, H, D), np.nan, np.float16)
    mod, source = lowered(ex.flash_attention.get_tir(B, H, S, D, True, block_M=64, block_N=32, threads=128),
                          enable_longest_first=True)
    assert "- (((int)blockIdx.x) * 2)" in source[source.find("for (int k") - 300:source.find("for (int k") + 200]
    (gvar,) = mod.functions.keys()
    run_kernel(mod[gvar], {"Q": q.numpy(), "K": k.numpy(), "V": v.numpy(), "O": o})
    ref = ex.reference(q, k, v, True).numpy()
    assert np.abs(o.astype(np.float64) - ref).max() < 2e-2


def test_warp_specialized_reversed_grid_waits_on_the_slot_of_its_last_load():
    """sm_90a, causal attention reversed: block bx runs 8 - bx iterations, so after its loop it
    waits on V's slot (7 - bx) % 2, i.e. barrier 3 - bx % 2. TVM's FlattenBuffer used to print that
    index as 2 - bx % -2 (the constant dropped): the consumers waited on a barrier the producer
    never filled and the H200 hung (tilelang_core/transform/positive_floor_dividends.py)."""
    from test_hopper_lowering import cuda_source

    ex = flash_attention()
    func = ex.flash_attention.get_tir(2, 3, 1000, 64, True, block_M=128, block_N=128, threads=256)
    _, kernel = cuda_source(func, enable_longest_first=True, disable_persistent=True)  # one CTA per tile
    assert "for (int k_load = 0; k_load < (8 - ((int)blockIdx.x)); ++k_load)" in kernel
    assert "tl_mbar_wait((&(smem_uint64_ptr[(3 - (((int)blockIdx.x) & 1))]))" in kernel
    assert "% -" not in kernel
