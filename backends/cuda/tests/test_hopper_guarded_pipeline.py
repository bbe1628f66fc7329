"""A T.Pipelined GEMM under one block-uniform `if` (MoE's grouped GEMMs: `if tile_group[by] >= 0:`,
`if by * block_M < masked_m[g]:`) keeps the sm_90a schedule: the condition wraps the barrier init
and the producer/consumer split, so a block that skips its work skips all of it together (a
block-uniform branch around __syncthreads). Conditions the split cannot take keep the cp.async
pipeline, with the reason in the schedule notes. Numerics: tests/gpu/test_gpu_hopper.py on the
H200, test_cuda_examples_interpreted.py for sm_80."""

import re

import pytest

import tilelang_core.language as T
from test_hopper_lowering import cuda_source, example_module

TILES = dict(block_M=128, block_N=128, block_K=64, num_stages=4, threads=256)


def schedule_notes(source):
    return source[:source.find("#ifdef")]


@pytest.mark.parametrize("layout", ["contiguous", "masked"])
def test_grouped_gemm_is_warp_specialized_under_its_guard(layout):
    moe = example_module("moe/grouped_gemm.py")
    if layout == "masked":
        func = moe.grouped_gemm_masked.get_tir(8, 512, 4096, 7168, **TILES)
        guard = "if ((((int)blockIdx.y) * 128) < masked_m_ptr[((int)blockIdx.z)]) {"
    else:
        func = moe.grouped_gemm_contiguous.get_tir(4096, 4096, 7168, 8, **TILES)
        guard = "if (0 <= g) {"
    source, kernel = cuda_source(func)
    assert "the pipeline runs under the kernel's block-uniform `if`" in schedule_notes(source)
    assert kernel.count(guard) == 1, kernel[:2000]
    at = kernel.index(guard)
    # the guard comes first: barrier init, the block barrier and the split all sit inside it
    assert at < kernel.index("tl_mbar_init") < kernel.index("__syncthreads") < kernel.index("tl_setmaxnreg_dec")
    assert kernel.count("tl_tma_load<") == 2 and "tl_wgmma_ss_bf16" in kernel and "tl_tma_store" in kernel
    if layout == "contiguous":  # the expert index is read once, before the guard, and feeds B's TMA box
        assert kernel.index("int g = tile_group_ptr[") < at
        assert re.search(r"tl_tma_load<3>\([^;]*B_tmap[^;]*, g\);", kernel), kernel


def guarded_gemm(guard_kind):
    """A 128x128x64 bf16 GEMM whose work sits in an `if` of ``guard_kind``."""
    M, N, K = 512, 512, 256

    @T.prim_func
    def main(A: T.Tensor((M, K), T.bfloat16), B: T.Tensor((N, K), T.bfloat16), Rows: T.Tensor((M // 128,), T.int32),
             C: T.Tensor((M, N), T.bfloat16)):
        with T.Kernel(N // 128, M // 128, threads=256) as (bx, by):
            A_s = T.alloc_shared((128, 64), T.bfloat16)
            B_s = T.alloc_shared((128, 64), T.bfloat16)
            C_f = T.alloc_fragment((128, 128), T.float32)
            tx = T.get_thread_binding()
            if (tx < 512) if guard_kind == "thread" else (C[by * 128, 0] == 0) if guard_kind == "written" \
                    else Rows[by] >= 0:
                row = Rows[by] * 128  # bound inside the `if`: its read must stay there
                T.clear(C_f)
                for k in T.Pipelined(K // 64, num_stages=2):
                    T.copy(A[row, k * 64], A_s)
                    T.copy(B[bx * 128, k * 64], B_s)
                    T.gemm(A_s, B_s, C_f, transpose_B=True)
                T.copy(C_f, C[by * 128, bx * 128])

    return main


def test_a_binding_inside_the_guard_is_read_inside_it():
    """`row = Rows[by] * 128` may index out of bounds for a block its guard turns away: it stays
    under the `if` (with the producer and the consumers), not hoisted in front of it."""
    source, kernel = cuda_source(guarded_gemm("read_only"))
    assert "TMA producer warpgroup" in schedule_notes(source)
    guard = kernel.index("if (0 <= Rows_ptr[((int)blockIdx.y)]) {")
    assert guard < kernel.index("int row = (Rows_ptr[((int)blockIdx.y)] * 128);") < kernel.index("tl_mbar_init")


@pytest.mark.parametrize("guard_kind, why", [
    ("thread", "the T.Pipelined loop sits in an `if` on the thread index"),
    ("written", "the `if` around the pipeline reads memory the kernel writes")])
def test_guards_the_split_cannot_take_keep_the_cp_async_pipeline(guard_kind, why):
    source, kernel = cuda_source(guarded_gemm(guard_kind))
    assert f"T.Pipelined: cp.async pipeline, no TMA producer warpgroup ({why})" in schedule_notes(source)
    assert "tl_tma_load" not in kernel and "tl_cp_async_16" in kernel
