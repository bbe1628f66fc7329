"""TileLang's warp intrinsics (T.ballot_sync, T.shfl_*, T.warp_reduce_*, T.match_*_sync,
T.syncthreads_*, T.shuffle_elect, lane queries, T.__ffs/T.__fns, T.__ldg) on the SIMT
interpreters of cuda (sm_80, 32-lane warps), hip (gfx942 wave64, gfx1100 wave32) and metal
(apple7 simdgroups) and on the cpu backend (collective ops emulated through block memory where
every lane executes them, refused elsewhere), against references written here from CUDA's
documented semantics."""

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core.errors import LoweringError
from tilelang_core.ir.intrinsics import fns_reference
from tilelang_core.testing.oracle import lower, run

GPU = ("cuda:sm_80", "hip:gfx942", "hip:gfx1100", "metal:apple7")
ALL = ("cpu",) + GPU
WARP = {"cpu": 32, "cuda:sm_80": 32, "hip:gfx942": 64, "hip:gfx1100": 32, "metal:apple7": 32}
RNG = np.random.default_rng(7)


def warps(n, ws):
    return [np.arange(s, min(s + ws, n)) for s in range(0, n, ws)]


def ballot_ref(pred, ws, lanes_mask=None):
    out = np.zeros(len(pred), np.uint64)
    for lanes in warps(len(pred), ws):
        bits = sum(1 << int(l - lanes[0]) for l in lanes if pred[l] and (lanes_mask is None or lanes_mask >> int(l - lanes[0]) & 1))
        out[lanes] = bits
    return out


# -- votes -------------------------------------------------------------------------------------
def votes(n, partial_mask):
    @T.prim_func
    def kernel(A: T.Tensor((n,), "int32"), B: T.Tensor((n,), "int64"), Any: T.Tensor((n,), "int32"),
               All: T.Tensor((n,), "int32"), Low: T.Tensor((n,), "int64"), First: T.Tensor((n,), "int32")):
        with T.Kernel(1, threads=n):
            tx = T.get_thread_binding()
            B[tx] = T.cast(T.ballot_sync(A[tx] > 0), "int64")
            Any[tx] = T.any_sync(A[tx] == 3)
            All[tx] = T.all_sync(A[tx] >= 0)
            if partial_mask:  # only the mask's lanes vote (a 32-bit mask: 32-lane warps only)
                Low[tx] = T.cast(T.ballot_sync(A[tx] > 0, 0xFFFF), "int64")
            First[tx] = T.__ffs(T.ballot(A[tx] > 1)) - 1

    return kernel


@pytest.mark.parametrize("path", ALL)
@pytest.mark.parametrize("n", [64, 48])  # 48: the last warp is partial (its missing lanes never vote)
def test_votes_match_cuda_semantics(path, n):
    ws = WARP[path]
    if n == 48 and ws == 64:
        n = 96  # a partial second wave
    a = RNG.integers(-1, 5, n).astype(np.int32)
    a[:3] = [3, -1, 0]
    out = run(path, votes(n, ws == 32), A=a, B=np.zeros(n, np.int64), Any=np.zeros(n, np.int32), All=np.zeros(n, np.int32),
              Low=np.zeros(n, np.int64), First=np.zeros(n, np.int32))
    ballot = ballot_ref(a > 0, ws)
    np.testing.assert_array_equal(out["B"].view(np.uint64), ballot)
    for lanes in warps(n, ws):
        assert (out["Any"][lanes] != 0).all() == (a[lanes] == 3).any()
        assert ((out["All"][lanes] != 0) == (a[lanes] >= 0).all()).all()
    if ws == 32:
        np.testing.assert_array_equal(out["Low"].view(np.uint64), ballot_ref(a > 0, ws, 0xFFFF))
    first = ballot_ref(a > 1, ws)
    np.testing.assert_array_equal(out["First"], [int(b & -b).bit_length() - 1 for b in first.astype(object)])


@pytest.mark.parametrize("path", GPU)
def test_activemask_under_divergence(path):
    n, ws = 64, WARP[path]

    @T.prim_func
    def kernel(M: T.Tensor((n,), "int64")):
        with T.Kernel(1, threads=n):
            tx = T.get_thread_binding()
            if tx % 3 != 0:
                M[tx] = T.cast(T.activemask(), "int64")

    out = run(path, kernel, M=np.full(n, -1, np.int64))
    t = np.arange(n)
    active = ballot_ref(t % 3 != 0, ws)
    np.testing.assert_array_equal(out["M"][t % 3 != 0].view(np.uint64), active[t % 3 != 0])
    assert (out["M"][t % 3 == 0] == -1).all()


@pytest.mark.parametrize("path", ALL)
@pytest.mark.parametrize("n", [64, 40])
def test_activemask_and_elect(path, n):
    ws = WARP[path]

    @T.prim_func
    def kernel(M: T.Tensor((n,), "int64"), E: T.Tensor((n,), "int32"), G: T.Tensor((n,), "int32")):
        with T.Kernel(1, threads=n):
            tx = T.get_thread_binding()
            M[tx] = T.cast(T.activemask(), "int64")
            E[tx] = T.shuffle_elect(ws)
            G[tx] = T.shuffle_elect(0)

    out = run(path, kernel, M=np.zeros(n, np.int64), E=np.full(n, -1, np.int32), G=np.full(n, -1, np.int32))
    t = np.arange(n)
    np.testing.assert_array_equal(out["M"].view(np.uint64), ballot_ref(np.ones(n, bool), ws))
    np.testing.assert_array_equal(out["E"], (t % ws == 0).astype(np.int32))
    np.testing.assert_array_equal(out["G"], (t == 0).astype(np.int32))


@pytest.mark.parametrize("path", ["cpu", "cuda:sm_80", "hip:gfx1100", "metal:apple7"])
def test_match_any_and_all(path):
    n = 64

    @T.prim_func
    def kernel(A: T.Tensor((n,), "int32"), F: T.Tensor((n,), "float32"), P: T.Tensor((n,), "int64"),
               Q: T.Tensor((n,), "int64"), R: T.Tensor((n,), "int64")):
        with T.Kernel(1, threads=n):
            tx = T.get_thread_binding()
            P[tx] = T.cast(T.match_any_sync(A[tx]), "int64")
            Q[tx] = T.cast(T.match_all_sync(A[tx] // 100), "int64")
            R[tx] = T.cast(T.match_any_sync(F[tx], 0x0F0F0F0F), "int64")

    a = (np.arange(n) % 5).astype(np.int32)
    a[32:] = 7  # the second warp agrees on A // 100 and on A
    f = np.where(np.arange(n) % 2 == 0, 0.0, -0.0).astype(np.float32)  # bit patterns differ
    out = run(path, kernel, A=a, F=f, P=np.zeros(n, np.int64), Q=np.zeros(n, np.int64), R=np.zeros(n, np.int64))
    for lanes in warps(n, 32):
        for lane in lanes:
            peers = sum(1 << int(p - lanes[0]) for p in lanes if a[p] == a[lane])
            assert out["P"][lane] == peers
            sign = sum(1 << int(p - lanes[0]) for p in lanes
                       if (0x0F0F0F0F >> int(p - lanes[0])) & 1 and (p % 2) == (lane % 2))
            if (0x0F0F0F0F >> int(lane - lanes[0])) & 1:
                assert out["R"][lane] == sign
    assert (out["Q"] == 0xFFFFFFFF).all()  # A // 100 == 0 everywhere: every lane agrees


@pytest.mark.parametrize("path", ["hip:gfx942"])
def test_match_is_refused_on_64_lane_waves(path):
    @T.prim_func
    def kernel(A: T.Tensor((64,), "int32")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            A[tx] = T.cast(T.match_any_sync(A[tx]), "int32")

    with pytest.raises(LoweringError, match=r"match_any_sync .*uint32 result cannot hold the 64 lanes"):
        lower(path, kernel)


def test_partial_mask_is_refused_on_64_lane_waves():
    @T.prim_func
    def kernel(A: T.Tensor((64,), "int64")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            A[tx] = T.cast(T.ballot_sync(tx < 3, 0xFFFF), "int64")

    with pytest.raises(LoweringError, match=r"cannot name the 64 lanes"):
        lower("hip:gfx942", kernel)


@pytest.mark.parametrize("path", GPU)
def test_vote_in_a_branch_missing_mask_lanes_is_an_error(path):
    """CUDA: every lane the mask names must execute __ballot_sync; the interpreter refuses."""
    @T.prim_func
    def kernel(A: T.Tensor((64,), "int64")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            if tx < 16:
                A[tx] = T.cast(T.ballot_sync(1), "int64")

    with pytest.raises(RuntimeError, match="do not execute it"):
        run(path, kernel, A=np.zeros(64, np.int64))


@pytest.mark.parametrize("path", ["cuda:sm_80", "metal:apple7"])
def test_vote_of_a_branch_with_its_own_mask(path):
    @T.prim_func
    def kernel(A: T.Tensor((64,), "int64")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            if tx % 32 < 16:
                A[tx] = T.cast(T.ballot_sync(tx % 2 == 1, 0xFFFF), "int64")

    out = run(path, kernel, A=np.full(64, -1, np.int64))
    t = np.arange(64)
    np.testing.assert_array_equal(out["A"], np.where(t % 32 < 16, 0xAAAA, -1))


# -- shuffles ----------------------------------------------------------------------------------
def shuffle_ref(kind, v, operand, width, ws):
    n, out = len(v), v.copy()
    for lane_id in range(n):
        base, lane = lane_id - lane_id % ws, lane_id % ws
        if kind == "shfl_sync":
            src = lane - lane % width + operand % width
        elif kind == "shfl_xor":
            src = lane ^ operand
            src = lane if src // width > lane // width else src
        elif kind == "shfl_down":
            src = lane + operand if lane % width + operand < width else lane
        else:
            src = lane - operand if lane % width >= operand else lane
        out[lane_id] = v[base + src]
    return out


def shuffles(n, dtype, kind, operand, width):
    fn = getattr(T, kind)

    @T.prim_func
    def kernel(V: T.Tensor((n,), dtype), O: T.Tensor((n,), dtype)):
        with T.Kernel(1, threads=n):
            tx = T.get_thread_binding()
            O[tx] = fn(V[tx], operand, width)

    return kernel


@pytest.mark.parametrize("path", ALL)
@pytest.mark.parametrize("kind,operand,width", [("shfl_sync", 31, 32), ("shfl_sync", 5, 8), ("shfl_sync", -1, 16),
                                                ("shfl_xor", 1, 32), ("shfl_xor", 12, 8), ("shfl_down", 3, 32),
                                                ("shfl_down", 1, 4), ("shfl_up", 2, 16), ("shfl_up", 1, 1)])
def test_shuffles_follow_cudas_lane_rules(path, kind, operand, width):
    n, ws = 64, WARP[path]
    v = RNG.standard_normal(n).astype(np.float32)
    out = run(path, shuffles(n, "float32", kind, operand, width), V=v, O=np.zeros(n, np.float32))
    np.testing.assert_array_equal(out["O"], shuffle_ref(kind, v, operand, width, ws))


@pytest.mark.parametrize("path", ["cpu", "cuda:sm_80", "hip:gfx942", "metal:apple7"])
@pytest.mark.parametrize("dtype", ["int32", "int64", "float16"])
def test_shuffle_dtypes(path, dtype):
    n = 64
    if dtype == "float16" and path.startswith("hip"):
        pytest.skip("hip: float16 tensors are covered by the float32 cases (same 32-bit words)")
    v = (RNG.integers(-(2**40), 2**40, n) if dtype == "int64" else RNG.integers(-500, 500, n)).astype(dtype)
    out = run(path, shuffles(n, dtype, "shfl_xor", 3, 32), V=v, O=np.zeros(n, dtype))
    np.testing.assert_array_equal(out["O"], shuffle_ref("shfl_xor", v, 3, 32, WARP[path]))


def test_the_shuffle_lane_is_computed_in_the_kernel():
    """TileLang's test: every lane reads lane 31's tx * 10 (CUDA source keeps __shfl_sync)."""
    @T.prim_func
    def kernel(A: T.Tensor((32,), "int32")):
        with T.Kernel(1, threads=32):
            tx = T.get_thread_binding()
            A[tx] = T.shfl_sync(tx * 10, 31)

    for path in ("cpu", "cuda:sm_80"):
        out = run(path, kernel, A=np.zeros(32, np.int32))
        assert (out["A"] == 310).all(), path


def test_shuffle_from_a_lane_that_does_not_exist_is_an_error():
    with pytest.raises(RuntimeError, match="does not execute the shuffle"):
        run("cuda:sm_80", shuffles(48, "float32", "shfl_sync", 31, 32), V=np.zeros(48, np.float32),
            O=np.zeros(48, np.float32))


def test_shuffle_width_above_the_warp_is_refused():
    with pytest.raises(LoweringError, match=r"width=64 is more than the 32 lanes"):
        lower("cuda:sm_80", shuffles(64, "float32", "shfl_sync", 0, 64))


# -- warp reductions ---------------------------------------------------------------------------
def reduction(n, dtype, kind):
    fn = getattr(T, f"warp_reduce_{kind}")

    @T.prim_func
    def kernel(X: T.Tensor((n,), dtype)):
        with T.Kernel(1, threads=n):
            tx = T.get_thread_binding()
            v = T.alloc_local([1], dtype)
            v[0] = X[tx]
            X[tx] = fn(v[0])

    return kernel


REDUCE = {"sum": np.sum, "max": np.max, "min": np.min, "bitand": np.bitwise_and.reduce,
          "bitor": np.bitwise_or.reduce}


@pytest.mark.parametrize("path", ALL)
@pytest.mark.parametrize("kind,dtype", [("sum", "float32"), ("max", "float32"), ("min", "float16"), ("sum", "int32"),
                                        ("bitand", "int32"), ("bitor", "int64"), ("max", "int64"), ("sum", "int64")])
def test_warp_reductions(path, kind, dtype):
    n, ws = 128, WARP[path]
    if dtype == "float16" and path.startswith("hip"):
        pytest.skip("hip: float16 min is covered on cuda and metal")
    if dtype == "int64":
        x = RNG.integers(1 << 32, (1 << 62), n).astype(np.int64)  # TileLang's 64-bit case (sums wrap)
    elif dtype.startswith("int"):
        x = RNG.integers(0, 100, n).astype(dtype)
    else:
        x = RNG.integers(-64, 64, n).astype(dtype)  # integers: every summation order is exact
    expected = x.copy()
    for lanes in warps(n, ws):
        with np.errstate(over="ignore"):
            expected[lanes] = REDUCE[kind](x[lanes])
    out = run(path, reduction(n, dtype, kind), X=x)
    np.testing.assert_array_equal(out["X"], expected)


@pytest.mark.parametrize("path", ALL)
def test_warp_max_and_min_ignore_nan_lanes(path):
    n = 64
    x = RNG.standard_normal(n).astype(np.float32)
    x[[3, 40, 41]] = np.nan
    for kind, ref in (("max", np.fmax.reduce), ("min", np.fmin.reduce)):
        out = run(path, reduction(n, "float32", kind), X=x.copy())
        expected = np.concatenate([np.full(len(l), ref(x[l])) for l in warps(n, WARP[path])])
        np.testing.assert_array_equal(out["X"], expected.astype(np.float32))


def test_warp_reduction_of_a_partial_warp_is_refused():
    with pytest.raises(LoweringError, match=r"warp_reduce_sum .*48 threads are not a multiple of that"):
        lower("cuda:sm_80", reduction(48, "float32", "sum"))


def test_warp_reduction_of_a_32_thread_block_on_a_64_lane_wave_is_refused():
    with pytest.raises(LoweringError, match=r"whole warps of 64 lanes"):
        lower("hip:gfx942", reduction(32, "float32", "max"))


# -- block votes, sync_warp --------------------------------------------------------------------
@pytest.mark.parametrize("path", ["cpu", "cuda:sm_80", "hip:gfx942", "hip:gfx1100"])
def test_block_votes(path):
    n = 96

    @T.prim_func
    def kernel(A: T.Tensor((n,), "int32"), C: T.Tensor((2, n), "int32"), D: T.Tensor((2, n), "int32"),
               E: T.Tensor((2, n), "int32")):
        with T.Kernel(2, threads=n) as b:
            tx = T.get_thread_binding()
            C[b, tx] = T.syncthreads_count(A[tx] > b)
            D[b, tx] = T.syncthreads_and(A[tx] >= b)
            E[b, tx] = T.syncthreads_or(A[tx] > 5 + b)

    a = RNG.integers(0, 6, n).astype(np.int32)
    a[0] = 6
    out = run(path, kernel, A=a, C=np.zeros((2, n), np.int32), D=np.zeros((2, n), np.int32),
              E=np.zeros((2, n), np.int32))
    # each block's own row (the blocks may run in any order, or at once on the cpu backend)
    for b in range(2):
        assert (out["C"][b] == (a > b).sum()).all()
        assert ((out["D"][b] != 0) == (a >= b).all()).all()
        assert ((out["E"][b] != 0) == (a > 5 + b).any()).all()


def test_block_vote_under_a_thread_dependent_if_is_refused():
    @T.prim_func
    def kernel(A: T.Tensor((64,), "int32")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            if tx < 32:
                A[tx] = T.syncthreads_count(A[tx] > 0)

    with pytest.raises(LoweringError, match=r"syncthreads_count .*under an 'if' on the thread index"):
        lower("cuda:sm_80", kernel)


def test_block_votes_are_refused_on_metal_at_the_line():
    @T.prim_func
    def kernel(A: T.Tensor((64,), "int32")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            A[tx] = T.syncthreads_or(A[tx] > 0)

    with pytest.raises(LoweringError, match=r"(?s)metal backend has no block-wide vote.*test_warp_intrinsics.py:\d+"):
        lower("metal:apple7", kernel)


@pytest.mark.parametrize("path", ALL)
def test_sync_warp_orders_a_lanes_write_before_anothers_read(path):
    @T.prim_func
    def kernel(A: T.Tensor((1,), "int32"), B: T.Tensor((1,), "int32")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            if tx == 0:
                A[0] = -1
            T.sync_warp()
            if tx == 1:
                B[0] = A[0]

    out = run(path, kernel, A=np.zeros(1, np.int32), B=np.zeros(1, np.int32))
    assert out["B"][0] == -1


def test_collective_in_a_parallel_loop_is_refused():
    @T.prim_func
    def kernel(A: T.Tensor((64,), "int32")):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(64):
                A[i] = T.any_sync(A[i])

    with pytest.raises(LoweringError, match=r"any_sync .*inside a T.Parallel loop"):
        lower("cuda:sm_80", kernel)


# -- per-thread intrinsics: the cpu backend runs them too -----------------------------------------
PER_THREAD = ("cpu",) + GPU


@pytest.mark.parametrize("path", PER_THREAD)
def test_lane_and_warp_indices(path):
    n = 160

    @T.prim_func
    def kernel(L: T.Tensor((n,), "int32"), W: T.Tensor((n,), "int32"), G: T.Tensor((n,), "int32"),
               C: T.Tensor((n,), "int32")):
        with T.Kernel(1, threads=n):
            tx = T.get_thread_binding()
            L[tx] = T.get_lane_idx()
            W[tx] = T.get_warp_idx_sync()
            G[tx] = T.get_warp_group_idx()
            C[tx] = T.get_lane_idx(20) + 1000 * T.get_warp_idx(16) + 100000 * T.get_warp_group_idx(32, 5)

    out = run(path, kernel, **{k: np.zeros(n, np.int32) for k in "LWGC"})
    t, ws = np.arange(n), WARP.get(path, 32)
    np.testing.assert_array_equal(out["L"], t % ws)
    np.testing.assert_array_equal(out["W"], t // ws)
    np.testing.assert_array_equal(out["G"], t // (4 * ws))
    np.testing.assert_array_equal(out["C"], t % 20 + 1000 * (t // 16) + 100000 * (t // 160))


@pytest.mark.parametrize("path", PER_THREAD)
def test_ffs_and_fns(path):
    n = 64

    @T.prim_func
    def kernel(A: T.Tensor((n,), "int32"), B: T.Tensor((n,), "int64"), F: T.Tensor((n,), "int32"),
               G: T.Tensor((n,), "int32"), H: T.Tensor((n,), "int64")):
        with T.Kernel(1, threads=n):
            tx = T.get_thread_binding()
            F[tx] = T.__ffs(A[tx])
            G[tx] = T.__ffs(B[tx])
            H[tx] = T.cast(T.__fns(A[tx], tx % 32, tx % 9 - 4), "int64")

    a = RNG.integers(-(2**31), 2**31, n).astype(np.int32)
    a[:4] = [0, 1, -(2**31), 0x10]
    b = RNG.integers(-(2**63), 2**63, n, dtype=np.int64) & ~((1 << RNG.integers(0, 63, n)) - 1)
    b[:2] = [0, -(2**63)]
    out = run(path, kernel, A=a, B=b, F=np.zeros(n, np.int32), G=np.zeros(n, np.int32), H=np.zeros(n, np.int64))

    def ffs(v, bits):
        v &= (1 << bits) - 1
        return (v & -v).bit_length()

    np.testing.assert_array_equal(out["F"], [ffs(int(v), 32) for v in a])
    np.testing.assert_array_equal(out["G"], [ffs(int(v), 64) for v in b])
    np.testing.assert_array_equal(out["H"], [fns_reference(int(v), i % 32, i % 9 - 4) for i, v in enumerate(a)])


def test_fns_reference_follows_the_ptx_definition():
    mask = 0b1011_0000_0000_0000_0000_0000_1000_0000  # bits 7, 28, 29, 31
    assert fns_reference(mask, 0, 1) == 7 and fns_reference(mask, 0, 3) == 29 and fns_reference(mask, 0, 5) == 0xFFFFFFFF
    assert fns_reference(mask, 30, -1) == 29 and fns_reference(mask, 30, -3) == 7 and fns_reference(mask, 6, -1) == 0xFFFFFFFF
    assert fns_reference(mask, 28, 0) == 28 and fns_reference(mask, 27, 0) == 0xFFFFFFFF
    assert fns_reference(0xFFFFFF80, 0, 3) == 9  # TileLang's example: ballot(tx >= 7), third lane


@pytest.mark.parametrize("path", PER_THREAD)
def test_ldg_reads_the_element(path):
    n = 40

    @T.prim_func
    def kernel(X: T.Tensor((n,), "float16"), Y: T.Tensor((n,), "float16")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            if tx < n:
                Y[tx] = T.__ldg(X[tx]) + T.__ldg(X, n - 1 - tx)

    x = RNG.standard_normal(n).astype(np.float16)
    out = run(path, kernel, X=x, Y=np.zeros(n, np.float16))
    np.testing.assert_array_equal(out["Y"], x + x[::-1])


def test_ldg_of_a_tensor_the_kernel_writes_is_a_plain_load():
    @T.prim_func
    def kernel(X: T.Tensor((32,), "float32"), Y: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32):
            tx = T.get_thread_binding()
            X[tx] = X[tx] * 2.0
            Y[tx] = T.__ldg(X[tx])

    @T.prim_func
    def read_only(X: T.Tensor((32,), "float32"), Y: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32):
            tx = T.get_thread_binding()
            Y[tx] = T.__ldg(X[tx])

    assert "tl_ldg" not in str(lower("cuda:sm_80", kernel))
    assert "tl_ldg" in str(lower("cuda:sm_80", read_only))


# -- the cpu backend refuses what it cannot emulate ---------------------------------------------
def cpu_refusal(kernel, n=32):
    with pytest.raises(LoweringError) as info:
        run("cpu", kernel, A=np.zeros(n, np.int64))
    message = str(info.value)
    assert "cannot run on the cpu backend" in message and "needs a GPU backend" in message, message
    assert "test_warp_intrinsics.py:" in message, message
    return message


def test_cpu_refuses_a_vote_only_some_lanes_execute():
    @T.prim_func
    def kernel(A: T.Tensor((32,), "int64")):
        with T.Kernel(1, threads=32):
            tx = T.get_thread_binding()
            v = A[tx]
            if v > 0:
                A[tx] = T.cast(T.ballot_sync(1), "int64")

    assert "depends on the thread index" in cpu_refusal(kernel)


def test_cpu_refuses_a_shuffle_in_a_partial_warp():
    @T.prim_func
    def kernel(A: T.Tensor((40,), "int64")):
        with T.Kernel(1, threads=40):
            tx = T.get_thread_binding()
            A[tx] = T.shfl_down(A[tx], 1)

    assert "not whole 32-lane warps" in cpu_refusal(kernel, n=40)


def test_cpu_refuses_a_collective_in_a_lazy_branch():
    @T.prim_func
    def kernel(A: T.Tensor((32,), "int64")):
        with T.Kernel(1, threads=32):
            tx = T.get_thread_binding()
            A[tx] = T.if_then_else(tx < 4, T.cast(T.any_sync(tx), "int64"), T.int64(0))

    assert "branch of T.if_then_else" in cpu_refusal(kernel)


def test_cpu_refuses_a_collective_in_a_collectives_operand():
    @T.prim_func
    def kernel(A: T.Tensor((32,), "int64")):
        with T.Kernel(1, threads=32):
            tx = T.get_thread_binding()
            A[tx] = T.cast(T.shfl_sync(T.ballot(tx < 3), 0), "int64")

    assert "in an operand of T.shfl_sync" in cpu_refusal(kernel)


def test_cpu_refuses_a_collective_in_a_condition():
    @T.prim_func
    def kernel(A: T.Tensor((32,), "int64")):
        with T.Kernel(1, threads=32):
            tx = T.get_thread_binding()
            if T.any_sync(tx == 3):
                A[tx] = 1

    assert "in an 'if' condition" in cpu_refusal(kernel)
