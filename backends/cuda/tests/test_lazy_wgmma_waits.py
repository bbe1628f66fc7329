"""Lazy wgmma waits on sm_90a (hopper/consumer_schedule.py): in a warp-specialized loop that
neither the chain nor the attention overlap fits, a gemm followed by work that does not touch its
tiles is issued, the work runs under it, and it is awaited where its result is first read. FP8 with
block scales (examples/fp8, ``slabs=2``) promotes one slab while the other's wgmma runs. Numerics:
tests/gpu (test_fp8_blockscaled_gemm_matches_torch) and the cpu example tests."""

import re

import pytest

from test_hopper_lowering import Target, cuda_source, example_module


def two_slabs(M=1000, N=520, K=1024, **tiles):
    tiles = {"num_stages": 3, **tiles}
    return example_module("fp8/blockscaled_gemm.py").blockscaled_gemm.get_tir(M, N, K, slabs=2, **tiles)


def _consumer_loop(kernel: str) -> str:
    start = kernel.index("for (int k = 0;")
    return kernel[start:kernel.index("tl_wgmma_wait<0>();", kernel.index("tl_wgmma_wait<1>();", start)) + 20]


def test_each_slab_is_awaited_where_its_promotion_reads_it():
    source, kernel = cuda_source(two_slabs())
    assert "2 wgmma batch(es) awaited where their results are first used" in source[:source.find("#ifdef")]
    loop = _consumer_loop(kernel)
    events = re.findall(r"tl_wgmma_commit\(\)|tl_wgmma_wait<\d>\(\)|slab[01]_ptr\[0\] \* scale|"
                        r"\(acc_ptr \+ 0\)", loop)
    order = [e if "wgmma" in e else "promote" for e in events]
    # settle, issue slab 0, promote slab 1 (the last iteration's) under it, issue slab 1,
    # wait for slab 0 only, promote it under slab 1's gemm, wait for slab 1
    squeezed = [e for i, e in enumerate(order) if i == 0 or e != order[i - 1]]
    assert squeezed == ["tl_wgmma_wait<0>()", "tl_wgmma_commit()", "promote", "tl_wgmma_commit()",
                        "tl_wgmma_wait<1>()", "promote", "tl_wgmma_wait<0>()"], squeezed


def test_one_slab_per_iteration_is_unchanged():
    """A gemm whose result the next statement reads gains nothing from a lazy wait: awaited right
    after it is issued, as before (the shipped one-slab kernel's source is what it was)."""
    source, kernel = cuda_source(example_module("fp8/blockscaled_gemm.py").blockscaled_gemm.get_tir(
        1000, 520, 512, num_stages=4, slabs=1))
    assert "awaited right after it is issued (the gemm clears its accumulator every iteration)" in source
    loop = kernel[kernel.index("for (int k = 0;"):]
    assert loop.index("tl_wgmma_wait<0>();") > loop.index("tl_wgmma_commit();")  # no settling wait


def test_the_tensor_cores_do_not_drain_between_the_slabs(tmp_path):
    """ptxas keeps the schedule: no warpgroup wait between slab 0's last QGMMA and slab 1's first
    (without the settling wait at the top of the iteration it inserted one there, C7517), then
    wait_group 1 before slab 0's promotion."""
    from tilelang_cuda import compiler
    from tilelang_cuda.options import CudaOptions
    from tilelang_cuda.pipeline import CudaBackend

    if compiler.find_cuobjdump() is None:
        pytest.skip("cuobjdump missing: pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm")
    backend, options = CudaBackend(Target("sm_90a")), CudaOptions()
    mod = backend.lower(two_slabs(4096, 4096, 4096), options)
    backend.build(mod, backend.codegen(mod, options), options, tmp_path)
    sass = compiler.sass(tmp_path / "kernel.cubin")
    ops = re.findall(r"\b(QGMMA\S*[^;]*?(?:gsb0)?|WARPGROUP\.DEPBAR\.LE gsb0, 0x\d)\s*;", sass)
    first = next(i for i, op in enumerate(ops) if op.startswith("QGMMA"))
    window = ops[first:first + 9]
    assert [op.startswith("QGMMA") for op in window] == [True] * 8 + [False], window
    assert window[-1] == "WARPGROUP.DEPBAR.LE gsb0, 0x1", window


def test_attention_backward_with_stats_read_where_used_is_warp_specialized():
    """examples/attention/flash_attention_bwd.py, stats="global": every pipelined copy is a 16-bit
    2-D tile, so a TMA producer warpgroup feeds it, and dV's gemm runs under the dS computation
    (its result is read only at the end of the iteration). stats="shared" is specialized too: its
    float32 lse and delta runs are linear TMA boxes (test_linear_tma_boxes.py)."""
    bwd = example_module("attention/flash_attention_bwd.py").flash_bwd
    staged, _ = cuda_source(bwd.get_tir(2, 4, 1024, 128, False, block_M=64, block_N=64, num_stages=1, threads=128))
    assert "TMA producer warpgroup" in staged[:staged.find("#ifdef")]
    source, kernel = cuda_source(bwd.get_tir(2, 4, 1024, 128, False, block_M=64, block_N=64, num_stages=1,
                                             threads=128, stats="global"))
    notes = source[:source.find("#ifdef")]
    assert "TMA producer warpgroup" in notes and "awaited where their results are first used" in notes, notes
    loop = kernel[kernel.index("for (int q = 0;"):]
    assert "tl_wgmma_wait<1>();" in loop[:loop.index("tl_red_add_v4")]
