"""The sm_90a path without a GPU: when wgmma and the TMA producer warpgroup are chosen, what the
generated CUDA looks like, and the layouts both rely on (numerics run in tests/gpu)."""

import re

import pytest

import kernels
import tilelang_core.language as T
from tilelang_cuda.hopper.wgmma import (WgmmaPlan, explain_wgmma, plan_wgmma, wgmma_accumulator_layout,
                                        wgmma_shared_layout)
from tilelang_cuda.layouts import mma_accumulator_layout
from tilelang_core.ir import Gemm, TileOp, is_tile_op


class Target:
    def __init__(self, arch):
        self.arch = arch


#: a thread's store of two converted accumulator lanes into C (tilelang_cuda/vector_casts.py)
C_STORE = "tl_cvt_floatx2_to_halfx2((&(C_ptr["

def cuda_source(func, arch="sm_90a", **options):
    from tilelang_cuda.options import CudaOptions
    from tilelang_cuda.pipeline import CudaBackend

    backend = CudaBackend(Target(arch))
    opts = CudaOptions(**options)
    source = backend.codegen(backend.lower(func, opts), opts)
    kernel = source[source.find('extern "C" __global__'):source.find("#include <tvm/ffi/c_api.h>")]
    return source, kernel


def example_module(relpath):
    """An examples/ file as a module (its @jit kernels give PrimFuncs through ``get_tir``)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "examples" / relpath
    spec = importlib.util.spec_from_file_location("hopper_lowering_" + path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def gemm_op(func):
    found = []

    def visit(node):
        if is_tile_op(node) and isinstance(TileOp.from_stmt(node), Gemm):
            found.append(TileOp.from_stmt(node))

    import tvm_ffi
    from tvm import tirx

    tvm_ffi.structural_walk(func.body, [(tirx.TilePrimitiveCall, visit)])
    return found[0]


HOPPER_TILES = dict(bm=128, bn=256, bk=64, threads=256, stages=3)


def test_wgmma_is_planned_only_where_it_fits():
    op = gemm_op(kernels.make_gemm(1024, 1024, 1024, **HOPPER_TILES))
    assert plan_wgmma(op, "sm_90a", 256) == WgmmaPlan(wg_m=2, wg_n=1, m_wg=64, n_wg=256, n_inst=256)
    assert plan_wgmma(op, "sm_80", 256) is None
    assert plan_wgmma(op, "sm_90a", 256, disabled=True) is None
    assert plan_wgmma(op, "sm_90a", 256, annotated={"A_s"}) is None
    narrow = gemm_op(kernels.make_gemm(256, 256, 256, bk=32))  # 64-byte K-major rows: the 64-byte swizzle
    assert plan_wgmma(narrow, "sm_90a", 128) is not None
    # B stored K x N with 64-byte rows is MN-major: only the 128-byte swizzle reads it there
    mn_narrow = gemm_op(kernels.make_gemm(256, 32, 256, bn=32, bk=64))
    plan, why = explain_wgmma(mn_narrow, "sm_90a", 128)
    assert plan is None and "exactly 32 when B_s is K-major (64-byte swizzle)" in why
    thin = gemm_op(kernels.make_gemm(256, 256, 256, bk=16))  # 32-byte rows: no swizzle of ours
    assert plan_wgmma(thin, "sm_90a", 128) is None
    f32 = gemm_op(kernels.make_gemm(256, 256, 256, bk=64, dtype=T.float32, out_dtype=T.float32))
    assert plan_wgmma(f32, "sm_90a", 128) is None


def test_shared_layout_is_what_a_128_byte_swizzle_tma_box_writes():
    rows, cols = 64, 256
    layout = wgmma_shared_layout(rows, cols, 16)
    assert layout.is_bijective() and layout.align_bytes == 1024
    for r in (0, 3, 9, 63):
        for c in (0, 8, 70, 255):
            box, inner = divmod(c, 64)  # boxes of 64 columns land one after another
            expect = box * rows * 64 + r * 64 + (((inner // 8) ^ (r % 8)) * 8) + inner % 8
            assert layout.offset(r, c) == expect


def test_shared_layout_of_64_byte_rows_is_what_a_64_byte_swizzle_tma_box_writes():
    """16-byte chunk c of row r at c ^ (r // 2) % 4 (CU_TENSOR_MAP_SWIZZLE_64B: address bits 4-5
    XOR bits 7-8), rows of 64 bytes one after another; fp8 rows of 64 values alike."""
    for rows, cols, bits in ((64, 32, 16), (128, 64, 8)):
        layout = wgmma_shared_layout(rows, cols, bits)
        assert layout.is_bijective() and layout.align_bytes == 512
        for r in range(rows):
            for c in range(cols):
                byte = r * 64 + c * bits // 8
                assert layout.offset(r, c) * bits // 8 == byte ^ (((byte >> 7) & 3) << 4)


def test_block_k_32_gemm_takes_wgmma_and_tma_with_the_64_byte_swizzle():
    """TileLang's usual GEMM tile (block_K = 32, A stored M x K): A's 64-byte rows load by TMA with
    CU_TENSOR_MAP_SWIZZLE_64B and wgmma reads them through descriptors of swizzle mode 2 (8-row
    groups 512 bytes apart, the second k16 step 32 bytes in); B (K x N, 128-byte rows) keeps the
    128-byte swizzle. Both transposes, and fp8 with block_K = 64, alike."""
    source, kernel = cuda_source(kernels.make_gemm(1000, 520, 264, bm=128, bn=128, bk=32, stages=3))
    assert "tl_cp_async_16" not in kernel and "tl_mma_m16n8k16" not in kernel
    assert kernel.count("tl_tma_load<2>") == 3  # A: one box of 64-byte rows; B: two 128-byte strips
    assert "tl_wgmma_desc<2>((&(((half*)smem_ptr)[((k % 3) * 4096)])), 16, 512)" in kernel
    assert "tl_wgmma_desc<2>((&(((half*)smem_ptr)[(((k % 3) * 4096) + 16)])), 16, 512)" in kernel
    assert "tl_wgmma_desc<2>((&(((half*)smem_ptr)[(((k % 3) * 4096) + 2048)])), 16, 512)" in kernel  # second 64-row slab
    assert "static_cast<CUtensorMapSwizzle>(2)" in source and "static_cast<CUtensorMapSwizzle>(3)" in source
    _, nt = cuda_source(kernels.make_gemm(1000, 520, 264, bm=128, bn=128, bk=32, stages=3, trans_b=True))
    assert "tl_wgmma_desc<2>" in nt and "tl_wgmma_desc((" not in nt  # A and B K-major: every descriptor
    _, tn = cuda_source(kernels.make_gemm(1000, 520, 264, bm=128, bn=128, bk=32, stages=3, trans_a=True))
    assert "tl_wgmma_desc<2>" not in tn and "tl_wgmma_ss_f16" in tn  # A stored K x M: 256-byte rows
    _, fp8 = cuda_source(kernels.make_gemm(1024, 512, 512, bm=128, bn=128, bk=64, stages=3, trans_b=True,
                                           dtype=T.float8_e4m3fn, out_dtype=T.float16))
    assert "tl_wgmma_ss_e4m3" in fp8 and "tl_wgmma_desc<2>" in fp8 and "tl_wgmma_desc((" not in fp8
    # a 32-column fp16 epilogue would store 64-byte strips: not by TMA until that has run on a GPU
    _, narrow = cuda_source(kernels.make_gemm(1000, 520, 264, bm=128, bn=32, bk=64, stages=3, trans_b=True))
    assert "tl_wgmma_ss_f16" in narrow and "tl_tma_store" not in narrow


def test_accumulator_layout_matches_mma_when_warpgroups_stack_along_m():
    """One 64-row slab per warpgroup is mma.sync's layout with warps stacked along M (a fragment
    shared by an mma.sync gemm and a wgmma gemm keeps one layout); two slabs interleave."""
    one = wgmma_accumulator_layout(128, 256, WgmmaPlan(2, 1, 64, 256, 256))
    assert one == mma_accumulator_layout(128, 256, 8, 1)
    two = wgmma_accumulator_layout(128, 128, WgmmaPlan(1, 1, 128, 128, 128))
    assert two.num_threads == 128 and two.local_size == 128
    assert two != mma_accumulator_layout(128, 128, 4, 1)


def test_pipelined_gemm_gets_a_tma_producer_warpgroup():
    # (per-thread epilogue stores: the TMA store's own fence and barriers have their test below)
    source, kernel = cuda_source(kernels.make_gemm(1000, 520, 264, **HOPPER_TILES), disable_tma_store=True,
                                 disable_stream_k=True)  # one CTA per tile (stream-K: test_hopper_stream_k.py)
    # 256 consumers + one producer warpgroup; one block per SM, so that ptxas knows the registers at
    # entry and honours setmaxnreg (without it, FlashAttention backward D64 got C7508)
    assert "__launch_bounds__(384, 1)" in kernel
    assert "const __grid_constant__ CUtensorMap" in kernel
    assert kernel.count("tl_tma_load<2>") == 5  # one box of A, four 64-column boxes of B
    assert "tl_setmaxnreg_dec<40>" in kernel and "tl_setmaxnreg_inc<232>" in kernel
    assert "tl_wgmma_ss_f16_n256<0, 1>" in kernel  # A K-major, B MN-major (transpose bit)
    assert "tl_fence_proxy_async" not in kernel  # operands only TMA writes
    assert "cuTensorMapEncodeTiled" in source  # host side, before the launch
    assert "__syncthreads" in kernel and "tl_named_barrier_sync(1, 256)" not in kernel


@pytest.mark.parametrize("trans_b", [False, True])
def test_a_stored_k_by_m_reads_mn_major_on_wgmma(trans_b):
    """Checked on the H200 (tests/gpu/test_gpu_hopper.py): the transpose bit of A, with A's
    descriptor starting at (k0, row0) of the K x M tile."""
    _, kernel = cuda_source(kernels.make_gemm(1000, 520, 264, trans_a=True, trans_b=trans_b, **HOPPER_TILES))
    assert f"tl_wgmma_ss_f16_n256<1, {int(not trans_b)}>" in kernel
    assert "tl_mma_m16n8k16" not in kernel


@pytest.mark.parametrize("options,wgmma,tma", [({}, True, True), ({"disable_warp_specialized": True}, True, False),
                                               ({"disable_tma_lower": True}, True, False),
                                               ({"disable_wgmma": True}, False, True)])
def test_pass_configs_turn_each_part_off(options, wgmma, tma):
    _, kernel = cuda_source(kernels.make_gemm(512, 512, 512, **HOPPER_TILES), **options)
    assert ("tl_wgmma_ss" in kernel) == wgmma
    assert ("tl_tma_load" in kernel) == tma
    assert ("tl_cp_async_16" in kernel) == (not tma)
    assert ("tl_mma_m16n8k16" in kernel) == (not wgmma)


def test_sm80_source_has_no_hopper_helpers():
    source, _ = cuda_source(kernels.make_gemm(512, 512, 512, **HOPPER_TILES), arch="sm_80")
    assert "tl_wgmma" not in source and "tl_mbar" not in source and "CUtensorMap" not in source


def test_attention_moves_the_mid_body_copy_to_the_producer():
    """FlashAttention's V copy sits between the two gemms; it is TMA-loaded with K, the softmax
    stays with the consumers, Q (written by the consumers) is fenced for the async proxy, and
    their barriers are named barriers the producer never waits on."""
    _, kernel = cuda_source(kernels.make_flash_attention(2, 4, 1000, 128, 128, 128, 256), disable_tma_store=True,
                            disable_persistent=True)
    assert kernel.count("tl_tma_load<4>") == 4  # K and V, two 64-column boxes each
    assert "tl_wgmma_ss_f16_n128" in kernel and "tl_wgmma_rs_f16_n128" in kernel
    # Q, written by the consumers before the loop, is fenced for the async proxy once, there
    assert kernel.count("tl_fence_proxy_async") == 1
    assert kernel.index("tl_fence_proxy_async") < kernel.index("tl_named_barrier_sync(1, 256)") \
        < kernel.index("tl_wgmma_ss_f16")
    assert "tl_named_barrier_arrive(2, 256)" in kernel  # the ping-pong turns (below)


def loop_body(kernel: str, header: str) -> str:
    """The text of the loop that starts with ``header`` (braces matched)."""
    start = kernel.index(header)
    depth, i = 0, kernel.index("{", start)
    for i in range(i, len(kernel)):
        depth += {"{": 1, "}": -1}.get(kernel[i], 0)
        if depth == 0:
            break
    return kernel[start:i]


def test_attention_waits_for_k_and_v_separately():
    """K and V have their own full/empty mbarriers per slot: the consumers wait for V only before
    the second gemm and give K's slot back once the first gemm is done."""
    _, kernel = cuda_source(kernels.make_flash_attention(2, 4, 1000, 128, 128, 128, 256),
                            disable_wgmma_overlap=True)
    assert kernel.count("tl_mbar_init") == 10  # 2 slots x (K, V) x (full, empty) + Q's pair (persistent)
    body = loop_body(kernel, "for (int k = 0;")
    waits = [i for i in range(len(body)) if body.startswith("tl_mbar_wait", i)]
    arrives = [i for i in range(len(body)) if body.startswith("tl_mbar_arrive", i)]
    first, second = body.index("tl_wgmma_ss_f16"), body.index("tl_wgmma_rs_f16")
    assert len(waits) == 2 and waits[0] < first < arrives[0] < waits[1] < second < arrives[1]
    assert "tl_exp2" in body[arrives[0]:waits[1]]  # the softmax runs while V may still be landing


def test_attention_softmax_overlaps_the_previous_pv_gemm():
    """Intra-warpgroup overlap: iteration k issues S = Q K^T, then P V of iteration k-1, waits
    for S alone (wait_group 1), runs the softmax, and waits for P V (wait_group 0) only before P
    is rewritten; iteration 0 and the last P V are peeled."""
    source, kernel = cuda_source(kernels.make_flash_attention(2, 4, 1000, 128, 128, 128, 256))
    assert "the softmax-like work of iteration j overlaps the last gemm of j-1" in source[:source.find("#ifdef")]
    body = loop_body(kernel, "for (int k = 1; k < 8; ++k)")
    at = 0
    for step in ("tl_wgmma_ss_f16", "tl_wgmma_rs_f16", "tl_wgmma_wait<1>", "tl_exp2", "tl_wgmma_wait<0>",
                 "((half)acc_s"):
        at = body.index(step, at)  # each after the one before
    assert "((half)acc_s" not in body[:body.index("tl_wgmma_wait<0>")]
    assert body.count("tl_wgmma_wait<") == 2
    # the P V gemm of iteration k-1 reads the V slot of k-1; its empty barrier is arrived on after it
    assert "tl_mbar_arrive((&(smem_uint64_ptr[(((k + 1) & 1) + 6)])))" in body
    _, off = cuda_source(kernels.make_flash_attention(2, 4, 1000, 128, 128, 128, 256), disable_wgmma_overlap=True)
    assert "tl_wgmma_wait<1>" not in off


CHAIN_TILES = dict(bm=128, bn=128, bk=64, threads=256, stages=5)  # five slots: the chain pays for its slot


def test_gemm_keeps_one_wgmma_batch_in_flight():
    """GEMM's main loop in a ring of five slots: k-tile j is issued before j-1 is awaited
    (wait_group 1), and j-1's slot goes back to the producer only then. The last k-tile is peeled:
    its batch is issued and awaited (wait_group 0) in one block, before both slots go back and the
    epilogue reads the accumulator (a wait after the loop let ptxas move those reads above it).
    One full/empty pair per slot (A and B travel together). With fewer slots (4 measured 1.5%
    slower on the H200), or tl.disable_wgmma_overlap, each batch is awaited right away."""
    source, kernel = cuda_source(kernels.make_gemm(1000, 520, 456, **CHAIN_TILES), disable_tma_store=True,
                                 disable_stream_k=True)  # one CTA per tile: static trip counts
    assert kernel.count("tl_mbar_init") == 2 * CHAIN_TILES["stages"]
    assert "one wgmma batch stays in flight" in source[:source.find("#ifdef")]
    body = loop_body(kernel, "for (int k = 1; k < 7; ++k)")
    at = 0
    for step in ("tl_mbar_wait", "tl_wgmma_ss_f16", "tl_wgmma_commit", "tl_wgmma_wait<1>",
                 "tl_mbar_arrive((&(smem_uint64_ptr[(((k + 4) % 5) + 5)])))"):  # slot (k - 1) % 5, empty barrier
        at = body.index(step, at)
    last = kernel[kernel.index(body) + len(body):]
    at = 0
    for step in ("tl_mbar_wait", "tl_wgmma_ss_f16", "tl_wgmma_commit", "tl_wgmma_wait<0>", "tl_mbar_arrive",
                 "tl_mbar_arrive", C_STORE):
        at = last.index(step, at) + 1
    assert "tl_wgmma_wait<1>" not in last
    for off in ({"disable_wgmma_overlap": True}, {"stages": 4}, {"stages": 2}):
        tiles = {**CHAIN_TILES, **{k: v for k, v in off.items() if k == "stages"}}
        source, plain = cuda_source(kernels.make_gemm(1000, 520, 456, **tiles),
                                    **{k: v for k, v in off.items() if k != "stages"})
        assert "tl_wgmma_wait<1>" not in plain and "tl_wgmma_wait<0>" in plain
        assert "each wgmma batch awaited right after it is issued" in source[:source.find("#ifdef")]


def test_gemm_chain_of_one_k_tile_waits_in_place():
    """A single k-tile (K <= block_K): no loop, the batch is awaited right after it is issued."""
    _, kernel = cuda_source(kernels.make_gemm(256, 256, 64, **HOPPER_TILES), disable_tma_store=True)
    assert "tl_wgmma_wait<1>" not in kernel
    assert kernel.index("tl_wgmma_commit") < kernel.index("tl_wgmma_wait<0>") < kernel.index(C_STORE)


def test_pingpong_with_overlap_takes_a_turn_per_iteration():
    """With the overlap a turn is what one iteration issues (S of k, P V of k-1): taken before the
    first issue, handed over after the second, before either is awaited."""
    _, kernel = cuda_source(kernels.make_flash_attention(2, 4, 1000, 128, 128, 128, 256))
    body = loop_body(kernel, "for (int k = 1; k < 8; ++k)")
    at = 0
    for step in ("tl_named_barrier_sync(((((int)threadIdx.x) >> 7) + 2), 256)", "tl_wgmma_ss_f16",
                 "tl_wgmma_rs_f16", "tl_named_barrier_arrive((3 - (((int)threadIdx.x) >> 7)), 256)",
                 "tl_wgmma_wait<1>"):
        at = body.index(step, at)
    # warpgroup 1 gives the first turn, warpgroup 0 takes the last hand-over; prologue + loop +
    # epilogue hand over once each
    assert kernel.count("tl_named_barrier_arrive(2, 256)") == 1 and kernel.count("tl_named_barrier_sync(2, 256)") == 1
    assert kernel.count("tl_named_barrier_arrive((3 - ") == 3
    for off in ({"disable_pingpong": True}, {"disable_wgmma_overlap": True}):  # turns need the overlap
        _, plain = cuda_source(kernels.make_flash_attention(2, 4, 1000, 128, 128, 128, 256), **off)
        assert "tl_named_barrier_arrive" not in plain
    _, one_wg = cuda_source(kernels.make_flash_attention(2, 4, 1000, 64, 64, 64, 128))
    assert "tl_wgmma_wait<1>" in one_wg and "tl_named_barrier_arrive" not in one_wg


def test_copy_tma_cannot_carry_keeps_the_cp_async_pipeline():
    """32-byte rows (block_K=16) take neither swizzle: cp.async and mma.sync, and the schedule
    notes say why."""
    source, kernel = cuda_source(kernels.make_gemm(512, 512, 512, bk=16))
    assert "tl_tma_load" not in kernel and "tl_cp_async_16" in kernel and "tl_mma_m16n8k16" in kernel
    assert "columns in multiples of 64 (128-byte swizzle), or exactly 32 when A_s is K-major" in source


def make_gathered_gemm():
    """Block rows of A picked by indices the kernel first copies to shared memory."""

    @T.prim_func
    def gathered(A: T.Tensor((1024, 64), T.float16), Idx: T.Tensor((8,), T.int32),
                 B: T.Tensor((64, 128), T.float16), C: T.Tensor((128, 128), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            idx = T.alloc_shared((8,), T.int32)
            A_s = T.alloc_shared((128, 64), T.float16)
            B_s = T.alloc_shared((64, 128), T.float16)
            C_f = T.alloc_fragment((128, 128), T.float32)
            T.copy(Idx, idx)
            T.clear(C_f)
            for k in T.Pipelined(8, num_stages=2):
                T.copy(A[idx[k] * 128, 0], A_s)
                T.copy(B, B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[bx * 128, 0])

    return gathered


def test_box_coordinates_read_from_shared_memory_keep_cp_async():
    """The producer warpgroup cannot see the consumers' shared-memory indices in time: no TMA."""
    _, kernel = cuda_source(make_gathered_gemm())
    assert "tl_tma_load" not in kernel and "tl_cp_async_16" in kernel and "tl_wgmma_ss" in kernel


@pytest.mark.parametrize("swizzle,options,rasterized", [(0, {}, True), (0, {"disable_rasterization": True}, False),
                                                        (4, {}, False)])
def test_2d_gemm_grids_are_rasterized_unless_the_kernel_says_otherwise(swizzle, options, rasterized):
    source, _ = cuda_source(kernels.make_gemm(4096, 4096, 4096, swizzle=swizzle, **HOPPER_TILES), **options)
    header = source[:source.find("#ifdef")]  # the planner's notes, a comment at the top
    assert ("walked in panels of 8 block rows" in header) == rasterized, header
    assert "wgmma m64n256k16" in header and "TMA producer warpgroup" in header


FP8_TILES = dict(bm=128, bn=256, bk=128, threads=256, stages=3, dtype=T.float8_e4m3fn, out_dtype=T.float16)


def test_fp8_gemm_runs_on_wgmma_k32():
    """e4m3 operands, K-major (B stored N x K): wgmma m64n256k32 fed by TMA (uint8 tensor maps)."""
    source, kernel = cuda_source(kernels.make_gemm(1000, 520, 512, trans_b=True, **FP8_TILES))
    assert "tl_wgmma_ss_e4m3_n256<0, 0>" in kernel and "wgmma m64n256k32" in source[:source.find("#ifdef")]
    assert "CU_TENSOR_MAP_DATA_TYPE_UINT8" in source
    _, off = cuda_source(kernels.make_gemm(1000, 520, 512, trans_b=True, **FP8_TILES), disable_wgmma=True)
    assert "tl_wgmma_ss_e4m3" not in off


def test_fp8_wgmma_needs_k_major_operands():
    source, kernel = cuda_source(kernels.make_gemm(512, 512, 512, **FP8_TILES))
    assert "tl_wgmma_ss_e4m3" not in kernel
    assert "store A as M x K and B as N x K (transpose_B=True)" in source[:source.find("#ifdef")]


def test_fp8_wgmma_compiles_to_qgmma(tmp_path):
    import re

    from tilelang_cuda import compiler
    from tilelang_cuda.options import CudaOptions
    from tilelang_cuda.pipeline import CudaBackend

    if compiler.find_cuobjdump() is None:
        pytest.skip("cuobjdump missing: pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm")
    backend, options = CudaBackend(Target("sm_90a")), CudaOptions()
    mod = backend.lower(kernels.make_gemm(1000, 520, 512, trans_b=True, **FP8_TILES), options)
    backend.build(mod, backend.codegen(mod, options), options, tmp_path)
    sass = compiler.sass(tmp_path / "kernel.cubin")
    assert re.search(r"\bQGMMA\b", sass) and re.search(r"\bUTMALDG\b", sass)
    assert not re.search(r"\b(LDL|STL)\b", sass)


def make_scaled_operand_gemm():
    """A TMA-loaded tile the consumers rescale in place before the gemm reads it."""

    @T.prim_func
    def scaled(A: T.Tensor((512, 256), T.float16), B: T.Tensor((256, 256), T.float16),
               C: T.Tensor((512, 256), T.float32)):
        with T.Kernel(1, 4, threads=256) as (bx, by):
            A_s = T.alloc_shared((128, 64), T.float16)
            B_s = T.alloc_shared((64, 256), T.float16)
            C_f = T.alloc_fragment((128, 256), T.float32)
            T.clear(C_f)
            for k in T.Pipelined(4, num_stages=2):
                T.copy(A[by * 128, k * 64], A_s)
                T.copy(B[k * 64, 0], B_s)
                for i, j in T.Parallel(128, 64):
                    A_s[i, j] = A_s[i, j] * T.float16(0.5)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * 128, 0])

    return scaled


def test_tile_rewritten_by_consumers_keeps_the_proxy_fence():
    """TMA writes through the async proxy, the consumers' in-place rescale through the generic one:
    wgmma must see the rescaled values, so the fence stays (and a barrier orders the threads)."""
    _, kernel = cuda_source(make_scaled_operand_gemm())
    assert "tl_tma_load" in kernel and "tl_wgmma_ss" in kernel
    assert "tl_fence_proxy_async" in kernel and "tl_named_barrier_sync(1, 256)" in kernel


def _flash_example():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "examples" / "attention" / "flash_attention.py"
    spec = importlib.util.spec_from_file_location("fa_zero_fill", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.flash_attention


@pytest.mark.parametrize("seq_len,causal,folded", [(1024, False, True), (1000, False, False), (1024, True, False)])
def test_a_provably_zero_mask_becomes_the_gemms_zero_init(seq_len, causal, folded):
    """The example's mask fill is all zeros when no key can be past the end (1024 = 8 x 128, not
    causal): S = Q K^T then starts from wgmma's zero-init (accumulate 0 on its first k-step) and the
    fill is gone; a ragged length or a causal mask keeps the fill and accumulates."""
    func = _flash_example().get_tir(1, 2, seq_len, 128, causal, block_M=128, block_N=128, threads=256)
    _, kernel = cuda_source(func, disable_persistent=True)
    body = loop_body(kernel, "for (int k = 1;")
    first = body[body.index("tl_wgmma_ss_f16"):]
    first = first[:first.index(";")]
    assert first.endswith(", 0)") == folded, first
    assert ("acc_s_ptr[vi" in body[:body.index("tl_wgmma_ss_f16")]) == (not folded)


@pytest.mark.parametrize("seq_len,dropped", [(1024, True), (1000, False)])
def test_a_mask_after_the_gemm_that_masks_nothing_is_dropped(seq_len, dropped):
    """``S = if_then_else(k * 128 + j < seq_len, S, -inf)`` after S = Q K^T changes nothing when the
    keys divide the tiles (1024): the statement is gone from the loop (it read the iteration index
    for nothing); at 1000 the last key block is masked and it stays."""
    func = kernels.make_flash_attention(1, 2, seq_len, 128, 128, 128, 256)
    _, kernel = cuda_source(func, disable_persistent=True)
    body = loop_body(kernel, "for (int k = 1;")
    assert ("-CUDART_INF_F" in body) == (not dropped)


def test_conditional_mask_skips_the_fill_left_of_the_diagonal(tmp_path):
    """Causal attention: the mask fill runs only where the derived condition fails, and Q K^T's
    first k-step starts from zero (accumulate 0) where it holds; the kernel compiles without
    spills. tl.disable_conditional_mask fills in every iteration. (One CTA per tile, so that the
    row block is blockIdx.x; the dynamic tile scheduler's default walk is tested on its own.)"""
    from tilelang_cuda.options import CudaOptions
    from tilelang_cuda.pipeline import CudaBackend

    func = _flash_example().get_tir(1, 2, 1000, 128, True, block_M=128, block_N=128, threads=256)
    _, kernel = cuda_source(func, disable_persistent=True)
    body = loop_body(kernel, "for (int k = 1;")
    fill = body.index("if (((((int)blockIdx.x) - k) <= 0) || (k == 7))")  # bx <= k or the ragged last block
    assert fill < body.index("acc_s_ptr[vi") < body.index("tl_wgmma_ss_f16")
    first = body[body.index("tl_wgmma_ss_f16"):]
    assert first[:first.index(";")].endswith("(((0 < (((int)blockIdx.x) - k)) && (k < 7)) ? 0 : 1))")
    _, every = cuda_source(func, disable_conditional_mask=True, disable_persistent=True)
    assert "? 0 : 1)" not in every
    backend, options = CudaBackend(Target("sm_90a")), CudaOptions(ptxas_verbose=True, disable_persistent=True)
    mod = backend.lower(func, options)
    backend.build(mod, backend.codegen(mod, options), options, tmp_path)
    assert "0 bytes spill stores" in backend.last_build.log


def test_tma_store_epilogue_stores_in_swizzled_strips(tmp_path):
    """By default the accumulator goes to 128-row x 64-column strip buffers (128-byte swizzle),
    fenced for the async proxy, then one TMA store per strip (ragged edges clipped by the TMA
    unit); two buffers fit next to the 4-stage ring, so the four strips go in two rounds, each
    waiting once for the TMA unit's reads; UTMASTG in the SASS. tl.disable_tma_store keeps the
    per-thread stores."""
    from tilelang_cuda import compiler
    from tilelang_cuda.options import CudaOptions
    from tilelang_cuda.pipeline import CudaBackend

    func = kernels.make_gemm(1000, 520, 264, **{**HOPPER_TILES, "stages": 4})
    source, kernel = cuda_source(func)
    # the loop body twice (stream-K: whole tiles, then the tail's pieces), the epilogue with it
    assert kernel.count("tl_tma_store<2>") == 2 * 4 and kernel.count("tl_bulk_wait_read<0>") == 2 * 2
    first_round = kernel[kernel.index("tl_tma_store<2>"):kernel.index("tl_bulk_wait_read<0>")]
    buffers = re.findall(r"tl_tma_store<2>\(\(&\(\(\(half\*\)smem_ptr\)\[(\d+)\]\)\)", first_round)
    assert len(buffers) == 2 and len(set(buffers)) == 2  # one round: two strips, two buffers
    assert "C_f -> C by TMA stores (4 strips)" in source[:source.find("#ifdef")]
    first = kernel.index("tl_tma_store<2>")
    assert kernel.rindex("tl_fence_proxy_async", 0, first) > kernel.rindex("C_f_ptr[", 0, first)
    assert C_STORE not in kernel and "*(half2*)(C_ptr" not in kernel  # no per-thread global stores left
    _, threads = cuda_source(func, disable_tma_store=True)
    assert "tl_tma_store" not in threads and "tl_bulk" not in threads and C_STORE in threads
    if compiler.find_cuobjdump() is None:
        pytest.skip("cuobjdump missing")
    backend, options = CudaBackend(Target("sm_90a")), CudaOptions()
    mod = backend.lower(func, options)
    backend.build(mod, backend.codegen(mod, options), options, tmp_path)
    sass = compiler.sass(tmp_path / "kernel.cubin")
    assert "UTMASTG" in sass and "UTMALDG" in sass


def test_tma_store_is_skipped_where_its_strip_buffer_does_not_fit():
    """FlashAttention D128 with a 3-slot K/V ring (224 KB): no room for a 16 KB strip buffer, so
    the epilogue keeps per-thread stores and the note says why (instead of a shared-memory error)."""
    func = _flash_example().get_tir(1, 2, 1024, 128, False, block_M=128, block_N=128, num_stages=3, threads=256)
    source, kernel = cuda_source(func)
    assert "tl_tma_store" not in kernel
    assert "does not fit next to the pipeline" in source[:source.find("#ifdef")]
    fits = _flash_example().get_tir(1, 2, 1024, 128, False, block_M=128, block_N=128, num_stages=2, threads=256)
    assert "tl_tma_store<4>" in cuda_source(fits)[1]



def test_tma_store_is_skipped_for_an_output_row_stride_tma_cannot_address():
    """C with 1001 fp16 columns (2002-byte rows; TMA wants multiples of 16): the loads still go
    through TMA (B stored N x K has 528-byte rows), the epilogue keeps per-thread stores."""
    _, kernel = cuda_source(kernels.make_gemm(1000, 1001, 264, trans_b=True, **HOPPER_TILES))
    assert "tl_tma_load<2>" in kernel and "tl_tma_store" not in kernel
    assert "C_ptr[" in kernel


def test_three_consumer_warpgroups_share_the_register_file(tmp_path):
    """FlashAttention D64 with 192-row tiles: three consumer warpgroups and the producer (512
    threads). setmaxnreg drops the producer to 24 and raises the consumers to 160 (the register
    file's share: at 40 / 152 ptxas spilled 48 bytes); two consumer warpgroups keep 40 / 232."""
    from tilelang_cuda.options import CudaOptions
    from tilelang_cuda.pipeline import CudaBackend

    func = _flash_example().get_tir(1, 2, 1000, 64, True, block_M=192, block_N=128, threads=384)
    _, kernel = cuda_source(func)
    assert "tl_setmaxnreg_dec<24>" in kernel and "tl_setmaxnreg_inc<160>" in kernel
    two = _flash_example().get_tir(1, 2, 1000, 64, True, block_M=128, block_N=128, threads=256)
    assert "tl_setmaxnreg_dec<40>" in cuda_source(two)[1] and "tl_setmaxnreg_inc<232>" in cuda_source(two)[1]
    backend, options = CudaBackend(Target("sm_90a")), CudaOptions(ptxas_verbose=True)
    mod = backend.lower(func, options)
    backend.build(mod, backend.codegen(mod, options), options, tmp_path)
    assert "0 bytes spill stores" in backend.last_build.log


def test_wgmma_width_fits_the_register_cap_of_512_threads(tmp_path):
    """GEMM 192x256 on three consumer warpgroups (512 threads with the producer): ptxas may use at
    most 128 registers a thread at entry and refused m64n256 there (C7602: it needs 154), so each
    warpgroup's 64x256 slab runs as two m64n128 instructions; builds without spills. Two
    consumer warpgroups (384 threads, 168 registers) keep m64n256."""
    from tilelang_cuda.options import CudaOptions
    from tilelang_cuda.pipeline import CudaBackend

    func = kernels.make_gemm(1000, 520, 264, bm=192, bn=256, bk=64, threads=384, stages=3)
    source, kernel = cuda_source(func)
    assert "wgmma m64n128k16, 3x1 warpgroups" in source[:source.find("#ifdef")]
    assert "tl_wgmma_ss_f16_n128" in kernel and "_n256" not in kernel
    assert "wgmma m64n256k16" in cuda_source(kernels.make_gemm(1000, 520, 264, **HOPPER_TILES))[0]
    backend, options = CudaBackend(Target("sm_90a")), CudaOptions(ptxas_verbose=True)
    mod = backend.lower(func, options)
    backend.build(mod, backend.codegen(mod, options), options, tmp_path)
    assert "0 bytes spill stores" in backend.last_build.log


def test_two_blocks_per_sm_split_registers_and_shared_memory(tmp_path):
    """By default a GEMM with one consumer warpgroup (128x128 tiles, 2 slots) is declared for two
    resident blocks, setmaxnreg gives 40 / 216 (half the register file per block), ptxas keeps 128
    registers at entry without spills, and the TMA-store strips count against half the SM's shared
    memory. Declined, with the reason in the schedule notes and the kernel as with
    tl.disable_two_blocks_per_sm: a 4-slot ring (128 KB, more than half an SM); a 128x192
    accumulator (192 registers a thread: ptxas spilled 2336 bytes at 216); an m64n256 wgmma
    (more than the 128 registers at entry); two consumer warpgroups are never paired."""
    from tilelang_cuda.options import CudaOptions
    from tilelang_cuda.pipeline import CudaBackend

    func = kernels.make_gemm(1000, 520, 264, bm=128, bn=128, bk=64, threads=128, stages=2)
    source, kernel = cuda_source(func)
    assert '__global__ void __launch_bounds__(256, 2) gemm_kernel(' in kernel
    assert "tl_setmaxnreg_dec<40>" in kernel and "tl_setmaxnreg_inc<216>" in kernel
    assert "two blocks per SM" in source[:source.find("#ifdef")] and "tl_tma_store<2>" in kernel
    backend, options = CudaBackend(Target("sm_90a")), CudaOptions(ptxas_verbose=True)
    mod = backend.lower(func, options)
    backend.build(mod, backend.codegen(mod, options), options, tmp_path)
    assert "Used 128 registers" in backend.last_build.log and "0 bytes spill stores" in backend.last_build.log
    one_block = cuda_source(func, disable_two_blocks_per_sm=True)[1]
    assert "__launch_bounds__(256, 2)" not in one_block and "tl_setmaxnreg" not in one_block  # 255 a thread anyway
    for declined, why in ((kernels.make_gemm(1000, 520, 264, bm=128, bn=128, bk=64, threads=128, stages=4),
                           "more than half the SM's"),
                          (kernels.make_gemm(1000, 520, 264, bm=128, bn=192, bk=64, threads=128, stages=2),
                           "take 192 registers a thread, more than the 160"),
                          (kernels.make_gemm(1000, 520, 264, bm=64, bn=256, bk=64, threads=128, stages=2),
                           "m64n256 wgmma needs more than the 128 registers")):
        source, kernel = cuda_source(declined)
        notes = source[:source.find("#ifdef")]
        assert "one block per SM (" in notes and why in notes
        assert ", 2)" not in kernel[:kernel.index("(")+40] and "tl_min_blocks_per_sm" not in kernel
        assert kernel == cuda_source(declined, disable_two_blocks_per_sm=True)[1]
    scratch = _gemm_with_scratch(64)  # 128 fragment registers + 64 of T.alloc_local: 192 > 160
    source = cuda_source(scratch)[0]
    assert "arrays take 192 registers a thread" in source[:source.find("#ifdef")]
    assert "two blocks per SM" in cuda_source(_gemm_with_scratch(16))[0][:2000]  # 144: still two
    paired = cuda_source(kernels.make_gemm(1000, 520, 264, **HOPPER_TILES))
    assert "blocks per SM" not in paired[0][:paired[0].find("#ifdef")] and ", 2)" not in paired[1][:200]


def _gemm_with_scratch(scratch: int):
    """GEMM 128x128x64 in 2 slots on one consumer warpgroup whose epilogue also uses a per-thread
    float32 array of ``scratch`` values (T.alloc_local), which counts against the two-block budget."""
    M, N, K = 512, 512, 256

    @T.prim_func
    def gemm_scratch(A: T.Tensor((M, K), T.float16), B: T.Tensor((K, N), T.float16),
                     C: T.Tensor((M, N), T.float16)):
        with T.Kernel(N // 128, M // 128, threads=128) as (bx, by):
            A_s = T.alloc_shared((128, 64), T.float16)
            B_s = T.alloc_shared((64, 128), T.float16)
            C_f = T.alloc_fragment((128, 128), T.float32)
            tmp = T.alloc_local((scratch,), T.float32)
            T.clear(C_f)
            for ko in T.Pipelined(K // 64, num_stages=2):
                T.copy(A[by * 128, ko * 64], A_s)
                T.copy(B[ko * 64, bx * 128], B_s)
                T.gemm(A_s, B_s, C_f)
            for i in T.serial(scratch):
                tmp[i] = T.float32(i)
            for i, j in T.Parallel(128, 128):
                C_f[i, j] = C_f[i, j] + tmp[j % scratch]
            T.copy(C_f, C[by * 128, bx * 128])

    return gemm_scratch


def test_retired_two_blocks_option_names_its_replacement():
    from tilelang_core.errors import ConfigError
    from tilelang_cuda.options import CudaOptions

    with pytest.raises(ConfigError, match="tl.disable_two_blocks_per_sm"):
        CudaOptions.from_pass_configs({"tl.enable_two_blocks_per_sm": True})


def test_conditional_mask_on_mma_sync_writes_zeros():
    """mma.sync has no run-time zero-init: with tl.disable_wgmma the gemm always accumulates, and
    left of the diagonal the fill writes plain zeros instead (the kit's split_masked_fills);
    tl.disable_conditional_mask keeps the mask in every iteration."""
    func = _flash_example().get_tir(1, 2, 1000, 128, True, block_M=128, block_N=128, threads=256)
    _, on = cuda_source(func, disable_wgmma=True, disable_persistent=True)
    _, off = cuda_source(func, disable_conditional_mask=True, disable_wgmma=True, disable_persistent=True)
    assert "tl_mma_m16n8k16" in on and "? 0 : 1)" not in on
    assert "if ((0 < (((int)blockIdx.x) - k)) && (k < 7)) {" in on  # left of the diagonal, not ragged
    assert "(((int)blockIdx.x) - k)) && (k < 7)) {" not in off


def test_cluster_multicast_shares_b_between_two_blocks_of_a_column(tmp_path):
    """tl.enable_cluster_multicast on a GEMM: blocks (x, 2i) and (x, 2i + 1) form a cluster; each
    loads two of B's four strips by TMA multicast into both; the empty barriers also count one
    arrive per warp of the peer; the cluster syncs after barrier init and before exit; SASS has
    UTMALDG.2D.MULTICAST and the cluster barrier, no spills."""
    import re

    from tilelang_cuda import compiler
    from tilelang_cuda.options import CudaOptions
    from tilelang_cuda.pipeline import CudaBackend

    func = kernels.make_gemm(1024, 1024, 1024, **{**HOPPER_TILES, "stages": 4})
    source, kernel = cuda_source(func, enable_cluster_multicast=True)
    assert "cluster of 2 along blockIdx.y: B_s loaded half by each CTA" in source[:source.find("#ifdef")]
    assert kernel.count("__cluster_dims__(1, 2, 1) gemm_kernel(") == 2
    assert kernel.count("tl_tma_load_multicast<2>") == 4 and kernel.count("tl_tma_load<2>") == 1  # B halves, A
    assert [int(n) for n in re.findall(r"tl_mbar_init\(\(&\(smem_uint64_ptr\[[4-7]\]\)\), (\d+)\)", kernel)] == [264] * 4
    assert "tl_mbarrier_arrive_remote(" in kernel and kernel.count("tl_cluster_sync();") == 2
    backend, options = CudaBackend(Target("sm_90a")), CudaOptions(enable_cluster_multicast=True, ptxas_verbose=True)
    mod = backend.lower(func, options)
    backend.build(mod, backend.codegen(mod, options), options, tmp_path)
    assert "0 bytes spill stores" in backend.last_build.log
    if compiler.find_cuobjdump() is None:
        pytest.skip("cuobjdump missing")
    sass = compiler.sass(tmp_path / "kernel.cubin")
    assert "UTMALDG.2D.MULTICAST" in sass and "UCGABAR_ARV" in sass and "UCGABAR_WAIT" in sass


@pytest.mark.parametrize("make,options,why", [
    (lambda: kernels.make_gemm(384, 512, 256, **HOPPER_TILES), {}, "no block dimension of even size"),
    (lambda: kernels.make_gemm(1024, 1024, 1024, **HOPPER_TILES), {"enable_persistent": True}, "tl.enable_persistent"),
    (lambda: _flash_example().get_tir(1, 2, 1024, 128, True, block_M=128, block_N=128, threads=256), {},
     "the loop's trip count depends on blockIdx.x"),
])
def test_cluster_multicast_says_why_it_does_not_apply(make, options, why):
    source, kernel = cuda_source(make(), enable_cluster_multicast=True, **options)
    assert f"no cluster ({why}" in source[:source.find("#ifdef")]
    assert "__cluster_dims__" not in kernel and "tl_tma_load_multicast" not in kernel


def test_cluster_gemm_walks_panels_of_row_pairs():
    """With clusters the planner's rasterization walks pairs of block rows, so the two blocks of
    a cluster keep one column of B (block_swizzle.rasterize(pairs=True))."""
    source, _ = cuda_source(kernels.make_gemm(4096, 4096, 4096, **HOPPER_TILES), enable_cluster_multicast=True)
    header = source[:source.find("#ifdef")]
    assert "walked in panels of 8 pairs of block rows" in header and "cluster of 2 along blockIdx.y" in header


def test_non_causal_attention_clusters_along_the_query_blocks():
    """K and V do not depend on blockIdx.x (the query block) and every block runs the same loop:
    the pair along x shares both."""
    func = _flash_example().get_tir(1, 2, 1024, 128, False, block_M=128, block_N=128, threads=256)
    source, kernel = cuda_source(func, enable_cluster_multicast=True)
    assert "cluster of 2 along blockIdx.x: K_shared, V_shared" in source[:source.find("#ifdef")]
    assert kernel.count("__cluster_dims__(2, 1, 1)") == 2


def test_register_a_over_warpgroups_that_split_n_is_replicated():
    """MLA decode's split kernel: 64 rows on two warpgroups, A from registers. Each warpgroup
    issues register-A wgmma over its half of N, holding a copy of A (was mma.sync, whose row
    layout differed from the first gemm's: a LayoutError)."""
    from tilelang_cuda.hopper.wgmma import wgmma_operand_layout

    plan = WgmmaPlan(1, 2, 64, 64, 64)
    layout = wgmma_operand_layout(64, 32, plan)
    assert layout.replicas == 2 and layout.num_threads == 256 and layout.local_size == 64 * 32 // 128
    for i, j in [(0, 0), (17, 9), (63, 31)]:
        # thread t and t + 128 hold the same element in the same register: a copy per warpgroup
        first = layout.thread_of(i, j)
        assert layout.local_of(i, j) == wgmma_accumulator_layout(64, 32, WgmmaPlan(1, 1, 64, 32, 32)).local_of(i, j)
        assert first < 128
    source, kernel = cuda_source(kernels.make_gemm_from_replicated_registers(True))
    assert "gemm(ab_half, C_s -> out): wgmma m64n64k16, 1x2 warpgroups" in source
    assert "tl_wgmma_rs_f16_n64" in kernel and "tl_wgmma_ss_f16_n32" in kernel


def _wgmma_steps(kernel: str) -> list[str]:
    """The kernel's wgmma instructions, commits and waits in order, runs of one kind merged."""
    steps = []
    for x in re.findall(r"tl_wgmma_ss_\w+|tl_wgmma_rs_\w+|tl_wgmma_wait<\d>|tl_wgmma_commit", kernel):
        if not steps or steps[-1] != x:
            steps.append(x)
    return steps


def test_back_to_back_gemms_into_one_accumulator_issue_as_one_batch():
    """S = Q K^T then S += Qp Kp^T (MLA decode's scores) on the cp.async path with
    tl.enable_gemm_batches: the first gemm is only issued, the second's wait_group 0 waits for
    both (a wait after each by default)."""
    _, kernel = cuda_source(kernels.make_two_score_gemms(), disable_warp_specialized=True, enable_gemm_batches=True)
    assert _wgmma_steps(kernel) == ["tl_wgmma_ss_f16_n32", "tl_wgmma_commit", "tl_wgmma_ss_f16_n32",
                                    "tl_wgmma_commit", "tl_wgmma_wait<0>"]
    _, kernel = cuda_source(kernels.make_two_score_gemms(), disable_warp_specialized=True)  # (opt-in)
    assert _wgmma_steps(kernel).count("tl_wgmma_wait<0>") == 2


def test_a_trip_count_read_from_memory_keeps_one_cta_per_tile():
    """MLA decode's split kernel: each tile's loop runs ceildiv(seqlens[b], 64) / splits
    iterations, read from memory. The persistent walk (ring positions t * n, waves decided on the
    host) cannot take it; it printed a variable outside its loop (TVM's C printer failed)."""
    func = example_module("attention/mla_decode.py").mla_decode_split.get_tir(4, 128, 512, 64, 64, 64, 16, 4)
    source, kernel = cuda_source(func)
    notes = [line for line in source.splitlines() if line.startswith("//   ")]
    assert any("TMA producer warpgroup" in n for n in notes) and not any("persistent" in n for n in notes)
    assert "tl_num_sms" not in kernel


def mla_split(num_stages):
    mla = example_module("attention/mla_decode.py")
    return mla.mla_decode_split.get_tir(4, 128, 512, 64, 64, 64, 16, 4, num_stages=num_stages)


def test_mla_decode_in_one_ring_slot_awaits_each_batch():
    """MLA's KV tile feeds both gemms (scores and P V). The overlap issues P V of iteration j-1
    after the scores of j, so it holds j-1's slot while waiting for j's tile: in one slot the
    producer can never load it (the H200 hung). One slot awaits each batch; two keep the overlap."""
    one, _ = cuda_source(mla_split(1))
    assert "consumers: each wgmma batch awaited right after it is issued (one ring slot, and the last gemm " \
           "reads a tile the first one reads too)" in one[:one.find("#ifdef")]
    two, _ = cuda_source(mla_split(2))
    assert "overlaps the last gemm of j-1" in two[:two.find("#ifdef")]


def test_a_schedule_that_would_hang_is_played_out_and_dropped(monkeypatch):
    """The consumers' schedule is played against the producer's loads for short loops before any
    code is built (consumer_schedule.ring_deadlock): an overlap that cannot make progress is
    dropped, with the reason in the schedule comment, even where plan_overlap let it through."""
    from tilelang_cuda.hopper import consumer_schedule

    plan_overlap = consumer_schedule.plan_overlap

    def as_if_two_slots(body, is_wgmma, stages):
        return plan_overlap(body, is_wgmma, max(stages, 2))

    monkeypatch.setattr(consumer_schedule, "plan_overlap", as_if_two_slots)
    one, _ = cuda_source(mla_split(1))
    assert ("the overlap would hang: a loop of 2 iterations in 1 ring slots: the consumers wait for tile group 0 "
            "of iteration 1") in one[:one.find("#ifdef")]
    two, _ = cuda_source(mla_split(2))  # the overlap it played out in two slots stays
    assert "overlaps the last gemm of j-1" in two[:two.find("#ifdef")]
