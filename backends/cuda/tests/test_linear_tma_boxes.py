"""1-D tiles by TMA (hopper/tma.py's linear boxes): a pipelined loop that copies a run of a float32
tensor into a 1-D shared tile each iteration (FlashAttention backward's per-row lse and delta,
``stats="shared"``) keeps its TMA producer warpgroup, the run loaded by one unswizzled box into a
128-byte aligned ring slot; before, float32 sent the whole loop to the cp.async pipeline.

* the box (one load, no swizzle, its bytes) and the tiles it refuses, with the reason;
* a kernel's schedule notes, its loads, its host-side tensor map, nvcc's build and the SASS;
* FlashAttention backward's ``stats="shared"`` on the producer path.
Numerics on a GPU: gpu/test_gpu_hopper.py (``test_linear_box_scales``, the FA backward cases with
``stats="shared"``)."""

import re

import pytest

pytest.importorskip("tilelang_cuda")

import tilelang_core.language as T  # noqa: E402
from test_hopper_lowering import cuda_source, example_module  # noqa: E402
from tilelang_cuda.hopper.tma import LINEAR_ALIGN, NotSpecialized, load_box  # noqa: E402
from tilelang_core.ir import Copy, TileOp, is_tile_op  # noqa: E402


def scaled_scores(T_, D=64, bm=64, bn=64, w_len=None, threads=128, stages=2):
    """out[i, j] = sum_t sum_d K[i, d] Q[t*bm + j, d] W[t*bm + j]: each iteration a Q tile (TMA, 2-D)
    and its ``bm`` weights (a 1-D float32 tile, read after the gemm as FA backward reads lse)."""
    w_len = w_len or T_ * bm

    @T.prim_func
    def main(K: T.Tensor((bn, D), "float16"), Q: T.Tensor((T_ * bm, D), "float16"), W: T.Tensor((w_len,), "float32"),
             Out: T.Tensor((bn, bm), "float32")):
        with T.Kernel(1, threads=threads):
            K_s = T.alloc_shared((bn, D), "float16")
            Q_s = T.alloc_shared((bm, D), "float16")
            w_s = T.alloc_shared((bm,), "float32")
            s = T.alloc_fragment((bn, bm), "float32")
            acc = T.alloc_fragment((bn, bm), "float32")
            T.copy(K, K_s)
            T.clear(acc)
            for t in T.Pipelined(T_, num_stages=stages):
                T.copy(Q[t * bm:(t + 1) * bm, :], Q_s)
                T.copy(W[t * bm:(t + 1) * bm], w_s)
                T.gemm(K_s, Q_s, s, transpose_B=True, clear_accum=True)
                for i, j in T.Parallel(bn, bm):
                    acc[i, j] += s[i, j] * w_s[j]
            T.copy(acc, Out)

    return main


def _copies(func):
    found = []

    def visit(node):
        if is_tile_op(node) and isinstance(TileOp.from_stmt(node), Copy):
            found.append(node)

    import tvm_ffi
    from tvm import tirx

    tvm_ffi.structural_walk(func.body, [(tirx.TilePrimitiveCall, visit)])
    return found


def test_a_run_of_float32_is_one_unswizzled_box():
    w_copy = [c for c in _copies(scaled_scores(8)) if TileOp.from_stmt(c).dst.source.name == "w_s"][0]
    box = load_box(w_copy)
    assert box.linear and box.swizzle == 0 and box.atom == 64
    assert box.box == (64,) and box.bytes == 256  # innermost first: the run, nothing else
    assert box.strip_index(0)[0].value == 0 and len(box.strip_index(0)) == 1


@pytest.mark.parametrize("bm, why", [(20, f"a multiple of {LINEAR_ALIGN} bytes"), (512, "at most 256 elements")])
def test_runs_a_box_cannot_carry_are_refused_with_the_reason(bm, why):
    w_copy = [c for c in _copies(scaled_scores(4, bm=bm)) if TileOp.from_stmt(c).dst.source.name == "w_s"][0]
    with pytest.raises(NotSpecialized, match=why):
        load_box(w_copy)


def test_the_loop_keeps_its_tma_producer():
    source, kernel = cuda_source(scaled_scores(8))
    notes = source[:source.find("#ifdef")]
    assert "TMA producer warpgroup" in notes and "w_s" in notes, notes
    loads = re.findall(r"tl_tma_load<1>\(\(&\(\(\(float\*\)smem_ptr\)\[\(\(\(k_load & 1\) \* 64\) \+ (\d+)\)\]\)\)", kernel)
    assert len(loads) == 1, kernel
    assert int(loads[0]) * 4 % LINEAR_ALIGN == 0  # the ring's base; each slot is 256 bytes on
    assert "CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 1" in source and "static_cast<CUtensorMapSwizzle>(0)" in source


def test_a_ragged_tensor_keeps_the_box():
    """TMA zero-fills the run past the tensor's end (W shorter than the loop's tiles)."""
    _, kernel = cuda_source(scaled_scores(8, w_len=8 * 64 - 24))
    assert "tl_tma_load<1>((&(((float*)smem_ptr)" in kernel


def weights_by_region(w_shape, region):
    """acc += Q_t Q_t^T + w_t[j] over 4 tiles, ``w_t`` = ``region(W, t)`` (a 1-D float32 run that is
    not a linear box: the loop keeps the cp.async pipeline)."""
    @T.prim_func
    def main(Q: T.Tensor((256, 64), "float16"), W: T.Tensor(w_shape, "float32"), Out: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            Q_s = T.alloc_shared((64, 64), "float16")
            w_s = T.alloc_shared((64,), "float32")
            acc = T.alloc_fragment((64, 64), "float32")
            T.clear(acc)
            for t in T.Pipelined(4, num_stages=2):
                T.copy(Q[t * 64:(t + 1) * 64, :], Q_s)
                T.copy(region(W, t), w_s)
                T.gemm(Q_s, Q_s, acc, transpose_B=True)
                for i, j in T.Parallel(64, 64):
                    acc[i, j] += w_s[j]
            T.copy(acc, Out)

    return main


@pytest.mark.parametrize("w_shape, region, why", [
    ((4, 255), lambda W, t: W[t, 0:64], "row stride of 1020 bytes"),  # rows not 16-byte multiples
    ((256, 4), lambda W, t: W[t * 64:(t + 1) * 64, 1], "the tile must span the innermost dimension")])  # a column
def test_runs_tma_cannot_address_keep_cp_async(w_shape, region, why):
    source, _ = cuda_source(weights_by_region(w_shape, region))
    notes = source[:source.find("#ifdef")]
    assert "cp.async pipeline" in notes and why in notes, notes


@pytest.mark.parametrize("causal, groups", [(False, 1), (True, 1), (True, 3)])
def test_flash_attention_backward_stats_in_shared_memory_are_tma_loaded(causal, groups):
    bwd = example_module("attention/flash_attention_bwd.py").flash_bwd
    source, kernel = cuda_source(bwd.get_tir(2, 6, 1000, 128, causal, block_M=64, block_N=128, num_stages=2,
                                             threads=256, groups=groups), enable_tma_reduce=True)
    notes = source[:source.find("#ifdef")]
    assert "TMA producer warpgroup" in notes and "delta_s, lse_s" in notes, notes
    assert kernel.count("tl_tma_load<3>") == 2  # lse and delta, one box each


def test_builds_with_the_instructions_meant(tmp_path):
    from tilelang_cuda import codegen, compiler
    from tilelang_cuda.options import CudaOptions
    from tilelang_cuda.pipeline import CudaBackend
    from test_hopper_lowering import Target

    if compiler.find_cuobjdump() is None:
        pytest.skip("cuobjdump missing: pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm")
    backend, options = CudaBackend(Target("sm_90a")), CudaOptions(device_compiler="nvcc")
    source = backend.codegen(backend.lower(scaled_scores(8), options), options)
    cubin, _, _ = compiler.compile_device(codegen.split_source(source).device, "sm_90a", tmp_path, options)
    sass = compiler.sass(cubin)
    assert "UTMALDG" in sass and "LDGSTS" not in sass and "HGMMA" in sass
