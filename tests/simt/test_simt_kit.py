"""The SIMT kit (tilelang_core.simt) serves a backend other than cuda: its rules register under a
made-up kind and lower a kernel to thread-level TIRX, with the warp size as a knob; and
`import tilelang_core` does not load it."""

import json
import re
import subprocess
import sys

import pytest

import tilelang_core.language as T
from tilelang_core.errors import LoweringError
from tilelang_core.lowering import registered_ops
from tilelang_core.simt import SimtDialect, register_simt_rules
from tilelang_core.simt.pipeline import lower_simt

KIND = "simt-test"


def make_row_sum_of_squares(M=256, N=256, bm=2, threads=128):
    """Each row of the tile spans 64 threads: one warp of 64, or two warps of 32."""

    @T.prim_func
    def row_sum_sq(X: T.Tensor((M, N), T.float32), Y: T.Tensor((M,), T.float32)):
        with T.Kernel(T.ceildiv(M, bm), threads=threads) as bx:
            x_s = T.alloc_shared((bm, N), T.float32)
            x = T.alloc_fragment((bm, N), T.float32)
            total = T.alloc_fragment((bm,), T.float32)
            T.copy(X[bx * bm, 0], x_s)
            T.copy(x_s, x)
            for i, j in T.Parallel(bm, N):
                x[i, j] = x[i, j] * x[i, j]
            T.reduce_sum(x, total, dim=1)
            T.copy(total, Y[bx * bm])

    return row_sum_sq


def lowered(warp_size: int) -> str:
    register_simt_rules(KIND)
    func = lower_simt(make_row_sum_of_squares(), SimtDialect(kind=KIND, warp_size=warp_size, async_copy=False))
    return func.script()


def shuffle_offsets(text: str) -> list[int]:
    return [int(x) for x in re.findall(r'call_extern\("float32", "tl_shfl_xor", \w+, (\d+)\)', text)]


def test_rules_register_for_another_kind_idempotently():
    register_simt_rules(KIND)
    register_simt_rules(KIND)
    assert registered_ops(KIND) == ["atomic", "copy", "cumsum", "fill", "gemm", "reduce", "tma_copy"]


def test_another_gemm_rule_for_a_kind_that_has_one_is_refused():
    register_simt_rules(KIND)
    with pytest.raises(LoweringError, match="already registered"):
        register_simt_rules(KIND, gemm=lambda call, ctx: None)


def test_kernel_lowers_to_thread_level_tirx_with_no_tile_ops_left():
    text = lowered(32)
    assert "tl.tile." not in text and "TilePrimitiveCall" not in text
    assert 'launch_thread("threadIdx.x", 128)' in text
    assert 'call_extern("void", "tl_copy_16"' in text  # global -> shared, synchronous (no async)
    assert "tl_cp_async" not in text


def test_warp_size_32_shuffles_inside_warps_and_combines_warps_in_shared_memory():
    text = lowered(32)
    assert shuffle_offsets(text) == [1, 2, 4, 8, 16]
    # the two warps of a row exchange partials through a workspace that reuses the bytes of the
    # 512-float tile (dead once every thread has its elements in registers): one 2048-byte pool, a
    # barrier before the workspace's first write (the reuse), one between its write and read, one
    # after; the first barrier is the copy's
    assert 'alloc_buffer((2048,), "uint8", scope="shared.dyn")' in text
    assert text.count("tvm_storage_sync") == 4


def test_warp_size_64_shuffles_across_the_whole_row_without_shared_memory():
    text = lowered(64)
    assert shuffle_offsets(text) == [1, 2, 4, 8, 16, 32]
    assert 'alloc_buffer((2048,), "uint8", scope="shared.dyn")' in text  # the tile only
    assert text.count("tvm_storage_sync") == 1


def test_shuffle_helper_name_is_a_knob():
    register_simt_rules(KIND)
    dialect = SimtDialect(kind=KIND, warp_size=64, async_copy=False, shuffle_xor="tl_simd_xor")
    text = lower_simt(make_row_sum_of_squares(), dialect).script()
    assert "tl_simd_xor" in text and "tl_shfl_xor" not in text


def test_whole_warp_reductions_use_the_warp_reduce_helper_instead_of_shuffles():
    register_simt_rules(KIND)
    dialect = SimtDialect(kind=KIND, warp_size=32, async_copy=False, warp_reduce={"sum": "tl_warp_sum"})
    text = lower_simt(make_row_sum_of_squares(), dialect).script()
    assert text.count('call_extern("float32", "tl_warp_sum"') == 1 and shuffle_offsets(text) == []
    # the two warps of a row still meet in shared memory (in the bytes of the tile: one barrier more)
    assert text.count("tvm_storage_sync") == 4
    # a row of 16 lanes is not a whole warp: butterflies over its lanes only
    text = lower_simt(make_row_sum_of_squares(N=64, bm=8), dialect).script()
    assert "tl_warp_sum" not in text and shuffle_offsets(text) == [1, 2, 4, 8]
    with pytest.raises(ValueError, match="sum, max, min"):
        SimtDialect(kind=KIND, warp_reduce={"mean": "f"})


def test_dialect_is_frozen_and_checks_the_warp_size():
    dialect = SimtDialect(kind=KIND)
    with pytest.raises(AttributeError):
        dialect.warp_size = 64
    with pytest.raises(ValueError, match="power of two"):
        SimtDialect(kind=KIND, warp_size=48)


def test_import_tilelang_core_does_not_import_the_kit():
    code = ("import json, sys, tilelang_core; "
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('tilelang_core.simt'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []
