"""StageEpilogue (transform/stage_epilogue.py): off the warp-specialized path, attention's O
leaves through Q's shared tile, dead after the loop, as 16-byte row stores, except after causal
attention's loop, whose trip count depends on the row block (numerics: the interpreted example
test and tests/gpu)."""

import pytest

import kernels
from test_hopper_lowering import cuda_source, example_module
from tilelang_core.ir import Copy, TileOp, is_tile_op

AMPERE = dict(disable_wgmma=True, disable_warp_specialized=True)


def _attention(causal=False, block_n=64):
    return example_module("attention/flash_attention.py").flash_attention.get_tir(
        2, 4, 1000, 128, causal, block_M=128, block_N=block_n, num_stages=2, threads=128)


def _copies(func):
    import tvm_ffi
    from tvm import tirx

    found = []
    tvm_ffi.structural_walk(func.body, [(tirx.TilePrimitiveCall, lambda c: found.append(TileOp.from_stmt(c))
                                         if is_tile_op(c) and isinstance(TileOp.from_stmt(c), Copy) else None)])
    return [(str(op.src.source.name), str(op.dst.source.name)) for op in found]


def test_o_goes_through_the_dead_q_tile():
    """acc_o -> O becomes acc_o -> Q_shared -> O: Q is written before the loop and only read in
    it; K and V (written in the loop, one of them O's shape at 128x128 tiles) are not taken."""
    from tilelang_cuda.transform.stage_epilogue import stage_epilogue

    for block_n in (64, 128):
        copies = _copies(stage_epilogue(_attention(block_n=block_n)))
        assert copies[-2:] == [("acc_o", "Q_shared"), ("Q_shared", "O")], copies


def test_causal_attention_keeps_per_thread_stores_unless_asked():
    """Causal attention's loop runs min(S / block_N, (bx + 1) * block_M / block_N) iterations,
    bound to a name before the loop: a trip count per row block, so O keeps its per-thread stores
    (staged, that loop measured 3% slower on the H200); triangular=True stages it all the same."""
    from tilelang_cuda.transform.stage_epilogue import stage_epilogue

    causal = _attention(causal=True)
    assert _copies(stage_epilogue(causal)) == _copies(causal)
    assert _copies(stage_epilogue(causal, triangular=True))[-2:] == [("acc_o", "Q_shared"), ("Q_shared", "O")]


def test_enable_and_disable_staged_epilogue_contradict():
    from tilelang_core.errors import ConfigError
    from tilelang_cuda.options import CudaOptions

    with pytest.raises(ConfigError, match="tl.enable_staged_epilogue and tl.disable_staged_epilogue"):
        CudaOptions(enable_staged_epilogue=True, disable_staged_epilogue=True)


def test_mma_sync_attention_stores_o_in_16_byte_rows():
    """On sm_80 and on sm_90a's cp.async path the kernel stores O with 16-byte vectors from shared
    memory; tl.disable_staged_epilogue keeps each thread's half2 stores, as causal attention does
    unless tl.enable_staged_epilogue; the warp-specialized sm_90a kernel keeps its TMA-store
    epilogue."""
    staged, direct = "tl_store_16((&(O_ptr", "tl_cvt_floatx2_to_halfx2((&(O_ptr["  # a pair converted and stored
    for arch, options in (("sm_80", {}), ("sm_90a", AMPERE)):
        for func, extra, expect in ((_attention(), {}, staged),
                                    (_attention(), dict(disable_staged_epilogue=True), direct),
                                    (_attention(causal=True), {}, direct),
                                    (_attention(causal=True), dict(enable_staged_epilogue=True), staged)):
            _, kernel = cuda_source(func, arch=arch, **options, **extra)
            other = direct if expect == staged else staged
            assert expect in kernel and other not in kernel and "*(half2*)(O_ptr" not in kernel, (arch, extra)
    _, hopper = cuda_source(example_module("attention/flash_attention.py").flash_attention.get_tir(
        2, 4, 1000, 128, True, block_M=128, block_N=128, threads=256))
    assert "tl_tma_store" in hopper and "tl_store_16((&(O_ptr" not in hopper


def test_gemm_without_a_dead_tile_of_cs_shape_keeps_its_stores():
    """A GEMM's shared tiles are all written in the loop (and none has C's shape): C keeps its
    per-thread stores."""
    from tilelang_cuda.transform.stage_epilogue import stage_epilogue

    func = kernels.make_gemm(256, 256, 256)
    assert _copies(stage_epilogue(func)) == _copies(func)
