"""T.tma_copy's leader scopes (simt/transform/leader_scopes.py): each group of
``leader_scope_threads`` threads issues its own copy with its first thread's regions, and without
it the threads that reach the copy issue one, with the first one's regions (TileLang's elected
leader). Before, every thread used its own regions for its share of the tile, so a region that
depended on the thread index copied pieces of several rows. Numerics on the cuda interpreter (the
reference path with mbarriers) against numpy; refusals of what cannot be evaluated at the leader."""

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core.errors import FrontendError, LoweringError
from tilelang_core.ir import TileOp
from tilelang_core.testing.oracle import lower, run

pytest.importorskip("tilelang_cuda")

WARPS, K = 4, 64


def per_warp(scope=32, rows_from=None, M=8):
    """Warp w of block pid copies row pid * WARPS + w of A (or row ``rows[...]``) into s[w]; then
    each lane writes its warp's row to B. ``rows_from``: None, "warp" (rows[tid // 32]) or
    "thread" (rows[tid], the same for a warp's lanes only if the caller makes it so)."""
    @T.prim_func
    def main(A: T.Tensor((M, K), "float32"), rows: T.Tensor((WARPS * 32,), "int32"),
             B: T.Tensor((M, K), "float32")):
        with T.Kernel(T.ceildiv(M, WARPS), threads=WARPS * 32) as pid:
            tid = T.get_thread_binding()
            warp = tid // 32
            s = T.alloc_shared((WARPS, K), "float32")
            bars = T.alloc_barrier([32] * WARPS)
            if rows_from == "warp":
                row = rows[warp]
            elif rows_from == "thread":
                row = rows[tid]
            else:
                row = pid * WARPS + warp
            T.tma_copy(A[row, 0:K], s[warp, 0:K], barrier=bars[warp], leader_scope_threads=scope)
            T.mbarrier_arrive(bars[warp])
            T.mbarrier_wait_parity(bars[warp], 0)
            if pid * WARPS + warp < M:
                for c in T.serial(K // 32):
                    B[pid * WARPS + warp, c * 32 + tid % 32] = s[warp, c * 32 + tid % 32]

    return main


def block_wide(M=5, N=512):
    """No scope: one copy for the block, of the row its first thread names (tid // 32 is 0
    there); N long enough that every warp takes a share of it."""
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=128):
            tid = T.get_thread_binding()
            s = T.alloc_shared((N,), "float32")
            bar = T.alloc_barrier(128)
            T.tma_copy(A[tid // 32 + 1, 0:N], s[0:N], barrier=bar)
            T.mbarrier_arrive(bar)
            T.mbarrier_wait_parity(bar, 0)
            for c in T.serial(N // 128):
                B[c * 128 + tid] = s[c * 128 + tid]

    return main


def _inputs(M=8, rows=None):
    a = np.random.default_rng(M).standard_normal((M, K)).astype(np.float32)
    r = np.zeros(WARPS * 32, np.int32) if rows is None else rows
    return dict(A=a, rows=r, B=np.full((M, K), np.nan, np.float32))


def test_each_warp_copies_its_own_row():
    arrays = _inputs()
    out = run("cuda:sm_80", per_warp(), **arrays)
    np.testing.assert_array_equal(out["B"], arrays["A"])


def test_a_ragged_last_block_reads_padding_past_the_end():
    arrays = _inputs(M=6)
    out = run("cuda:sm_80", per_warp(M=6), **arrays)
    np.testing.assert_array_equal(out["B"], arrays["A"])


def test_rows_read_from_memory_the_same_for_a_warp():
    rows = np.zeros(WARPS * 32, np.int32)
    rows[:WARPS] = [5, 0, 7, 2]  # (rows[tid // 32]: one per warp)
    arrays = _inputs(rows=rows)
    out = run("cuda:sm_80", per_warp(rows_from="warp"), **arrays)
    np.testing.assert_array_equal(out["B"], arrays["A"][[5, 0, 7, 2, 5, 0, 7, 2]])


def test_a_block_wide_copy_uses_its_first_threads_region():
    a = np.random.default_rng(0).standard_normal((5, 512)).astype(np.float32)
    out = run("cuda:sm_80", block_wide(), A=a, B=np.zeros(512, np.float32))
    np.testing.assert_array_equal(out["B"], a[1])


def per_pair(M=5):
    """Scopes of 64 threads (two warps): pair p of block pid copies row pid * 2 + p, counted on
    its own barrier, and its 64 threads write the row out."""
    @T.prim_func
    def main(A: T.Tensor((M, K), "float32"), B: T.Tensor((M, K), "float32")):
        with T.Kernel(T.ceildiv(M, 2), threads=128) as pid:
            tid = T.get_thread_binding()
            s = T.alloc_shared((2, K), "float32")
            bars = T.alloc_barrier([64, 64])
            T.tma_copy(A[pid * 2 + tid // 64, 0:K], s[tid // 64, 0:K], barrier=bars[tid // 64],
                       leader_scope_threads=64)
            T.mbarrier_arrive(bars[tid // 64])
            T.mbarrier_wait_parity(bars[tid // 64], 0)
            if pid * 2 + tid // 64 < M:
                B[pid * 2 + tid // 64, tid % 64] = s[tid // 64, tid % 64]

    return main


def test_scopes_of_two_warps():
    a = np.random.default_rng(1).standard_normal((5, K)).astype(np.float32)
    out = run("cuda:sm_80", per_pair(), A=a, B=np.full((5, K), np.nan, np.float32))
    np.testing.assert_array_equal(out["B"], a)


def from_a_register(scope, step=False):
    """The row from a per-thread variable: ``w = tid // 32`` (the same within a warp), or with
    ``step`` a counter every thread sets and steps alike (the same for the block)."""
    @T.prim_func
    def main(A: T.Tensor((8, K), "float32"), B: T.Tensor((8, K), "float32")):
        with T.Kernel(1, threads=WARPS * 32):
            tid = T.get_thread_binding()
            w = T.alloc_var("int32")
            if step:
                w = 2
                w = w + 1
            else:
                w = tid // 32
            s = T.alloc_shared((WARPS, K), "float32")
            bars = T.alloc_barrier([32] * WARPS)
            T.tma_copy(A[w, 0:K], s[tid // 32, 0:K], barrier=bars[tid // 32], leader_scope_threads=scope)
            T.mbarrier_arrive(bars[tid // 32])
            T.mbarrier_wait_parity(bars[tid // 32], 0)
            for c in T.serial(K // 32):
                B[tid // 32, c * 32 + tid % 32] = s[tid // 32, c * 32 + tid % 32]

    return main


def test_a_register_the_same_within_each_warp():
    a = np.random.default_rng(3).standard_normal((8, K)).astype(np.float32)
    out = run("cuda:sm_80", from_a_register(32), A=a, B=np.zeros((8, K), np.float32))
    np.testing.assert_array_equal(out["B"][:WARPS], a[:WARPS])


def test_a_register_every_thread_steps_alike():
    a = np.random.default_rng(4).standard_normal((8, K)).astype(np.float32)
    out = run("cuda:sm_80", from_a_register(32, step=True), A=a, B=np.zeros((8, K), np.float32))
    np.testing.assert_array_equal(out["B"][:WARPS], np.repeat(a[3:4], WARPS, 0))


def test_a_register_that_differs_between_warps_is_refused_for_the_block():
    with pytest.raises(LoweringError, match=r"regions use w, per-thread values"):
        lower("cuda:sm_80", from_a_register(128))


def test_a_region_that_may_differ_within_a_scope_is_refused():
    with pytest.raises(LoweringError, match=r"regions use row, per-thread values .* which may differ between the 32 threads"):
        lower("cuda:sm_80", per_warp(rows_from="thread"))


@pytest.mark.parametrize("scope", [48, 0, -32, True, 32.0])
def test_leader_scope_threads_must_be_a_multiple_of_the_warp_size(scope):
    with pytest.raises(FrontendError, match="leader_scope_threads must be a positive multiple of the warp size"):
        per_warp(scope=scope)


def test_a_scope_that_does_not_divide_the_threads_is_refused():
    with pytest.raises(LoweringError, match=r"leader_scope_threads=96 does not divide the 128 threads"):
        lower("cuda:sm_80", per_warp(scope=96))


def test_the_scope_survives_the_ir():
    calls = []

    import tvm_ffi
    from tvm import tirx
    tvm_ffi.structural_walk(per_warp().body, [(tirx.TilePrimitiveCall, calls.append)])
    (op,) = [TileOp.from_stmt(c) for c in calls if "tma_copy" in str(c.op.name)]
    assert op.leader_scope == 32


def in_a_warpgroup_branch():
    """A T.ws branch (threads 128..255) whose copy names the block's thread index: its first
    thread, 128, names row 1."""
    @T.prim_func
    def main(A: T.Tensor((8, K), "float32"), B: T.Tensor((8, K), "float32")):
        with T.Kernel(1, threads=256):
            tid = T.get_thread_binding()
            s = T.alloc_shared((K,), "float32")
            bar = T.alloc_barrier(128)
            with T.ws(1):
                T.tma_copy(A[tid // 128, 0:K], s[0:K], barrier=bar)
                T.mbarrier_arrive(bar)
                T.mbarrier_wait_parity(bar, 0)
                T.copy(s, B[1, 0:K])

    return main


def test_a_branch_copies_its_first_threads_row():
    a = np.random.default_rng(5).standard_normal((8, K)).astype(np.float32)
    out = run("cuda:sm_80", in_a_warpgroup_branch(), A=a, B=np.zeros((8, K), np.float32))
    np.testing.assert_array_equal(out["B"][1], a[1])


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("make", [per_warp, per_pair, block_wide, lambda: from_a_register(32), in_a_warpgroup_branch],
                         ids=["per_warp", "per_pair", "block_wide", "register", "warpgroup_branch"])
def test_nvcc_builds(make, arch, tmp_path):
    import sys
    from pathlib import Path

    sys.path.append(str(Path(__file__).parents[2] / "backends" / "cuda" / "tests"))
    from test_language_fidelity_build import compiles, needs_nvcc

    if needs_nvcc.args[0]:
        pytest.skip("nvcc (CUDA toolkit) is not installed")
    source = compiles(make(), arch, tmp_path)
    assert "tl_mbarrier_track" in source
