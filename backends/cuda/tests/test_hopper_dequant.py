"""The w4a16 decode GEMM (examples/dequant) on sm_90a without a GPU: its packed int4 weights
(uint8) travel by TMA in 64-byte-swizzled boxes of their own size, and the decoded weights feed
wgmma from registers with no int -> float conversion instruction (numerics: tests/gpu)."""

import re

import pytest

from test_hopper_lowering import Target, cuda_source, example_module


def w4a16(M=13, N=520, K=1024, **tiles):
    return example_module("dequant/w4a16_gemm.py").w4a16_gemm.get_tir(M, N, K, **tiles)


def test_packed_weights_travel_by_tma_in_boxes_of_their_bytes():
    """A 64 x 64-byte tile of uint8 is 4096 bytes on the barrier (8-bit elements were taken for
    16-bit before: 8192 expected, a box twice the tile, shared memory written out of range)."""
    source, kernel = cuda_source(w4a16(block_N=64, block_K=128, num_stages=4))
    assert "TMA producer warpgroup" in source[:source.find("#ifdef")]
    w_load = re.search(r"tl_mbar_expect_tx\(([^;]*)\), (\d+)\);\s*tl_tma_load<2>\([^;]*Wp_tmap", kernel)
    assert w_load and int(w_load.group(2)) == 64 * 64, kernel[:3000]
    assert "tl_wgmma_rs_f16_n16" in kernel


def test_decoding_uses_no_conversion_instruction(tmp_path):
    from tilelang_cuda import compiler
    from tilelang_cuda.options import CudaOptions
    from tilelang_cuda.pipeline import CudaBackend

    if compiler.find_cuobjdump() is None:
        pytest.skip("cuobjdump missing: pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm")
    backend, options = CudaBackend(Target("sm_90a")), CudaOptions()
    mod = backend.lower(w4a16(16, 8192, 8192, block_N=64, block_K=128, num_stages=4), options)
    backend.build(mod, backend.codegen(mod, options), options, tmp_path)
    sass = compiler.sass(tmp_path / "kernel.cubin")
    assert re.search(r"\bHGMMA\b", sass) and re.search(r"\bUTMALDG\b", sass)
    assert not re.search(r"\bI2F", sass)  # quarter-rate conversions: the 0x6400 | code trick instead
    assert re.search(r"\bHADD2\b", sass) and re.search(r"\bHMUL2\b", sass)  # paired half arithmetic



def test_fresh_tile_gemm_says_why_it_is_not_overlapped():
    """FP8 block scaling's slab gemm starts from zero every iteration: the schedule notes name that
    (not the ring's slot count) as why each batch is awaited where it is issued."""
    func = example_module("fp8/blockscaled_gemm.py").blockscaled_gemm.get_tir(1000, 520, 512, num_stages=4, slabs=1)
    source, _ = cuda_source(func)
    assert "awaited right after it is issued (the gemm clears its accumulator every iteration)" in source
