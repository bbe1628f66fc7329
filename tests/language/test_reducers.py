"""Reducers (``T.alloc_reducer`` / ``T.reducer_init`` / ``T.reducer_update`` / ``T.finalize_reducer``,
and TileLang's legacy ``replication=`` form) on every reference path against numpy in float64."""

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core import FrontendError
from tilelang_core.testing.oracle import PATHS, run

RNG = np.random.default_rng(5)
REF = {"sum": np.sum, "max": np.max, "min": np.min}


def row_reduce(M, K, bK, op, seed=None, dtype="float32"):
    """Out[i] = A[i, 0] op A[i, 1] op ... with a reducer fed over K // bK tiles."""
    @T.prim_func
    def rows(A: T.Tensor((M, K), dtype), Out: T.Tensor((M,), dtype)):
        with T.Kernel(1, threads=128):
            acc = T.alloc_reducer((M,), dtype, op=op)
            a = T.alloc_fragment((M, bK), dtype)
            out = T.alloc_fragment((M,), dtype)
            if seed is None:
                T.reducer_init(acc)
            else:
                T.reducer_init(acc, seed)
            for k in T.serial(K // bK):  # contributions deferred across tiles
                T.copy(A[0, k * bK], a)
                for i, j in T.Parallel(M, bK):
                    T.reducer_update(acc[i], a[i, j])
            T.finalize_reducer(acc, out)
            T.copy(out, Out)

    return rows


def scalar_two_sites(N1, N2):
    @T.prim_func
    def two(X: T.Tensor((N1,), "float32"), Y: T.Tensor((N2,), "float32"), Out: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=64):
            acc = T.alloc_reducer((1,), "float32", op="sum")
            x = T.alloc_fragment((N1,), "float32")
            y = T.alloc_fragment((N2,), "float32")
            out = T.alloc_fragment((1,), "float32")
            T.copy(X, x)
            T.copy(Y, y)
            T.reducer_init(acc)
            for i in T.Parallel(N1):
                T.reducer_update(acc[0], x[i])
            for j in T.Parallel(N2):
                T.reducer_update(acc[0], y[j] * 2.0)
            T.finalize_reducer(acc, out)
            T.copy(out, Out)

    return two


def legacy_gemv(N, K, bN, bK):
    @T.prim_func
    def gemv(A: T.Tensor((K,), "float32"), B: T.Tensor((N, K), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, bN), threads=128) as bn:
            red = T.alloc_reducer(bN, "float32", replication="all")
            T.clear(red)
            for k in T.serial(T.ceildiv(K, bK)):
                for n, kk in T.Parallel(bN, bK):
                    red[n] += A[k * bK + kk] * B[bn * bN + n, k * bK + kk]
            T.finalize_reducer(red)
            for n in T.Parallel(bN):
                C[bn * bN + n] = red[n]

    return gemv


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("op", ["sum", "max", "min"])
def test_row_reduction_deferred_across_tiles(path, op):
    M, K, bK = 16, 96, 32
    a = RNG.standard_normal((M, K)).astype(np.float32)
    out = np.full(M, np.nan, np.float32)
    run(path, row_reduce(M, K, bK, op), A=a, Out=out)
    np.testing.assert_allclose(out, REF[op](a.astype(np.float64), axis=1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("path", PATHS)
def test_seed_is_combined_exactly_once(path):
    M, K, bK = 16, 64, 32
    a = RNG.standard_normal((M, K)).astype(np.float32)
    out = np.full(M, np.nan, np.float32)
    run(path, row_reduce(M, K, bK, "sum", seed=3.0), A=a, Out=out)
    np.testing.assert_allclose(out, 3.0 + a.astype(np.float64).sum(1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("path", PATHS)
def test_scalar_reducer_with_two_update_sites(path):
    x = RNG.standard_normal(37).astype(np.float32)
    y = RNG.standard_normal(100).astype(np.float32)
    out = np.full(1, np.nan, np.float32)
    run(path, scalar_two_sites(37, 100), X=x, Y=y, Out=out)
    np.testing.assert_allclose(out[0], x.astype(np.float64).sum() + 2 * y.astype(np.float64).sum(), rtol=1e-5)


@pytest.mark.parametrize("path", PATHS)
def test_legacy_replicated_reducer_gemv(path):
    N, K = 100, 200  # ragged against the 32 x 64 tiles
    a = RNG.standard_normal(K).astype(np.float32)
    b = RNG.standard_normal((N, K)).astype(np.float32)
    c = np.full(N, np.nan, np.float32)
    run(path, legacy_gemv(N, K, 32, 64), A=a, B=b, C=c)
    np.testing.assert_allclose(c, b.astype(np.float64) @ a.astype(np.float64), rtol=1e-4, atol=1e-4)


def test_update_outside_parallel_is_refused():
    with pytest.raises(FrontendError, match="outside any T.Parallel loop"):
        @T.prim_func
        def outside(A: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=32):
                acc = T.alloc_reducer((1,), "float32")
                out = T.alloc_fragment((1,), "float32")
                T.reducer_init(acc)
                for i in T.serial(8):
                    T.reducer_update(acc[0], A[i])
                T.finalize_reducer(acc, out)


def protocol_kernel(case):
    """A scalar sum reducer used against its protocol in one way (``case``); "ok" keeps it."""
    @T.prim_func
    def kernel(A: T.Tensor((8,), "float32"), B: T.Tensor((2,), "float32")):
        with T.Kernel(1, threads=32):
            src = T.alloc_fragment((8,), "float32")
            T.copy(A, src)
            acc = T.alloc_reducer((1,), "float32", op="sum")
            out = T.alloc_fragment((1,), "float32")
            if case == "init dtype":
                T.reducer_init(acc, T.float16(1.0))
            elif case == "clear":
                T.clear(acc)
            elif case not in ("update before init", "init per iteration"):
                T.reducer_init(acc)
            if case == "double init":
                T.reducer_init(acc)
            if case == "init per iteration":
                for _ in T.serial(2):
                    T.reducer_init(acc)
                    for i in T.Parallel(8):
                        T.reducer_update(acc[0], src[i])
            else:
                for i in T.Parallel(8):
                    T.reducer_update(acc[0], src[i])
            if case == "store":
                acc[0] = 1.0
            if case == "read before finalize":
                B[1] = acc[0]
            if case == "finalize per iteration":
                for _ in T.serial(2):
                    T.finalize_reducer(acc, out)
            elif case == "finalize in a branch":
                if A[0] > 0:
                    T.finalize_reducer(acc, out)
            elif case != "no finalize":
                T.finalize_reducer(acc, out)
            B[0] = out[0]
            if case == "ok":
                B[1] = acc[0]  # after the finalize the reducer holds the result

    return kernel


@pytest.mark.parametrize("case,message", [
    ("init dtype", "dtype float16 does not match reducer acc's dtype float32"),
    ("clear", "illegal store to reducer acc .T.clear"),
    ("update before init", "T.reducer_update of reducer acc before T.reducer_init"),
    ("double init", "double T.reducer_init of reducer acc"),
    ("store", "illegal store to reducer acc"),
    ("read before finalize", "illegal read of reducer acc before T.finalize_reducer"),
    ("no finalize", "reducer acc is never finalized"),
    ("init per iteration", "not in the scope of its T.reducer_init"),
    ("finalize per iteration", "not in the scope of its T.reducer_init"),
])
def test_reducer_protocol_violations_are_refused(case, message):
    with pytest.raises(FrontendError, match=message):
        protocol_kernel(case)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("case", ["ok", "finalize in a branch"])
def test_reducer_used_by_its_protocol(path, case):
    a = RNG.standard_normal(8).astype(np.float32)
    a[0] = abs(a[0])  # the branch is taken
    b = np.zeros(2, np.float32)
    run(path, protocol_kernel(case), A=a, B=b)
    np.testing.assert_allclose(b[0], a.astype(np.float64).sum(), rtol=1e-5)
    if case == "ok":
        np.testing.assert_allclose(b[1], b[0])


def test_index_that_is_not_a_loop_variable_is_refused():
    """An expression of the loop over more than 16 reducer elements (an update per value would
    not pay) is refused; over fewer it is taken (test_an_update_at_an_index_computed_from_the_loop)."""
    with pytest.raises(FrontendError, match="must be a loop variable"):
        @T.prim_func
        def folded(A: T.Tensor((64, 8), "float32")):
            with T.Kernel(1, threads=32):
                acc = T.alloc_reducer((32,), "float32")
                out = T.alloc_fragment((32,), "float32")
                T.reducer_init(acc)
                for i, j in T.Parallel(64, 8):
                    T.reducer_update(acc[i // 2], A[i, j])
                T.finalize_reducer(acc, out)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("op", ["bitand", "bitor", "bitxor"])
@pytest.mark.parametrize("dtype", ["int32", "uint32", "int64"])
def test_bitwise_reducers(path, op, dtype):
    M, K, bK = 8, 96, 32
    a = RNG.integers(0, 2**31 - 1, (M, K)).astype(dtype)
    if op == "bitand":  # keep some bits set in every element so the answer is not 0
        a |= np.array(0x5A, dtype=dtype)
    b = np.zeros(M, dtype)
    run(path, row_reduce(M, K, bK, op, dtype=dtype), A=a, Out=b)
    ufunc = {"bitand": np.bitwise_and, "bitor": np.bitwise_or, "bitxor": np.bitwise_xor}[op]
    np.testing.assert_array_equal(b, ufunc.reduce(a, axis=1))


def test_bitwise_reducer_of_a_float_dtype_is_refused():
    with pytest.raises(AssertionError, match="needs an integer dtype"):
        @T.prim_func
        def bits(A: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=32):
                T.alloc_reducer((1,), "float32", op="bitor")


@pytest.mark.parametrize("batch, error, message", [(0, ValueError, "batch must be >= 1"),
                                                    (-2, ValueError, "batch must be >= 1"),
                                                    (16, FrontendError, "exceeds total output elements"),
                                                    (3, FrontendError, "must evenly divide")])
def test_bad_batch_is_refused(batch, error, message):
    with pytest.raises(error, match=message):
        @T.prim_func
        def batched(A: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=32):
                acc = T.alloc_reducer((8,), "float32")
                out = T.alloc_fragment((8,), "float32")
                T.reducer_init(acc)
                T.finalize_reducer(acc, out, batch=batch)


@pytest.mark.parametrize("path", ["cpu", "cuda:sm_80"])
def test_reduce_batch_is_a_schedule_hint(path):
    @T.prim_func
    def batched(A: T.Tensor((16, 32), "float32"), Out: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=64):
            a = T.alloc_fragment((16, 32), "float32")
            s = T.alloc_fragment((16,), "float32")
            T.copy(A, a)
            T.reduce_max(a, s, dim=1, batch=4)
            T.copy(s, Out)

    a = RNG.standard_normal((16, 32)).astype(np.float32)
    out = np.full(16, np.nan, np.float32)
    run(path, batched, A=a, Out=out)
    np.testing.assert_array_equal(out, a.max(1))


def test_nan_propagation_of_a_sum_is_refused():
    """(max/min/absmax propagate NaNs: tests/language/test_reduce_nan.py.)"""
    with pytest.raises(FrontendError, match="nan_propagate=True.*only max, min and absmax"):
        @T.prim_func
        def nan(A: T.Tensor((16, 32), "float16")):
            with T.Kernel(1, threads=64):
                a = T.alloc_fragment((16, 32), "float16")
                s = T.alloc_fragment((16,), "float16")
                T.copy(A, a)
                T.reduce_sum(a, s, dim=1, nan_propagate=True)



@pytest.mark.parametrize("op", ["max", "min"])
def test_bfloat16_max_and_min_reducers_start_from_infinity(op):
    """TVM's infinity() has no bfloat16 (the reducer failed to build: "Cannot decide infinity");
    rows all negative (max) or all positive (min), so a finite starting value would show."""
    import torch

    import tilelang_core as tilelang

    sign = -1.0 if op == "max" else 1.0
    a = (torch.rand(16, 96) * 100 + 1).mul(sign).bfloat16()
    out = torch.full((16,), float("nan")).bfloat16()
    tilelang.compile(row_reduce(16, 96, 32, op, dtype="bfloat16"), target="cpu")(a, out)
    want = a.double().amax(1) if op == "max" else a.double().amin(1)
    assert torch.equal(out.double(), want)


def inner_serial(M, K, op, dtype="float32"):
    """TileLang's Parallel(M) { serial(K) }: the serial loop repeats updates of one logical
    iteration; Out[i] = op over A[i, :]."""
    @T.prim_func
    def rows(A: T.Tensor((M, K), dtype), Out: T.Tensor((M,), dtype)):
        with T.Kernel(1, threads=128):
            src = T.alloc_fragment((M, K), dtype)
            T.copy(A, src)
            acc = T.alloc_reducer((M,), dtype, op=op)
            T.reducer_init(acc)
            for i in T.Parallel(M):
                for k in T.serial(K):
                    T.reducer_update(acc[i], src[i, k])
            out = T.alloc_fragment((M,), dtype)
            T.finalize_reducer(acc, out)
            T.copy(out, Out)

    return rows


def permuted(shape, order, keep, op):
    """A 3-D T.Parallel nest over ``shape``; the reducer indexed by the loop variables ``keep``
    (positions in the nest) in that order, a 0 first when ``order`` says so: Out = op of A over the
    dimensions not kept, transposed to the reducer's order."""
    names = "ijk"
    target_shape = ([1] if order == "unit" else []) + [shape[d] for d in keep]

    @T.prim_func
    def fold(A: T.Tensor(shape, "float32"), Out: T.Tensor(target_shape, "float32")):
        with T.Kernel(1, threads=128):
            src = T.alloc_fragment(shape, "float32")
            T.copy(A, src)
            acc = T.alloc_reducer(target_shape, "float32", op=op)
            T.reducer_init(acc)
            for i, j, k in T.Parallel(*shape):
                loop = {"i": i, "j": j, "k": k}
                index = ([0] if order == "unit" else []) + [loop[names[d]] for d in keep]
                T.reducer_update(acc[tuple(index)], src[i, j, k])
            out = T.alloc_fragment(target_shape, "float32")
            T.finalize_reducer(acc, out)
            T.copy(out, Out)

    return fold


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("op", ["sum", "max"])
def test_serial_loop_inside_the_parallel_nest_accumulates_per_iteration(path, op):
    a = RNG.standard_normal((12, 20)).astype(np.float32)
    out = np.full(12, np.nan, np.float32)
    run(path, inner_serial(12, 20, op), A=a, Out=out)
    np.testing.assert_allclose(out, REF[op](a.astype(np.float64), axis=1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("keep, order, op", [((1, 0), "plain", "sum"),     # acc[j, i]: a transpose, nothing folded
                                             ((2, 0), "plain", "max"),     # acc[k, i]: j folded, then transposed
                                             ((0,), "unit", "sum"),        # acc[0, i]: a unit dim beside a loop
                                             ((2, 1), "unit", "min")])     # acc[0, k, j]
def test_reducer_indices_may_name_the_loops_in_any_order(path, keep, order, op):
    shape = (4, 6, 8)
    a = RNG.standard_normal(shape).astype(np.float32)
    drop = tuple(d for d in range(3) if d not in keep)
    want = REF[op](a.astype(np.float64), axis=drop) if drop else a.astype(np.float64)
    want = np.transpose(want, np.argsort(np.argsort(keep)))  # the kept dims, in the reducer's order
    if order == "unit":
        want = want[None]
    out = np.full(want.shape, np.nan, np.float32)
    run(path, permuted(shape, order, keep, op), A=a, Out=out)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


def test_an_index_naming_a_loop_twice_or_an_expression_is_refused():
    with pytest.raises(FrontendError, match="names a loop variable twice"):
        @T.prim_func
        def diagonal(A: T.Tensor((8, 8), "float32")):
            with T.Kernel(1, threads=32):
                acc = T.alloc_reducer((8, 8), "float32")
                out = T.alloc_fragment((8, 8), "float32")
                T.reducer_init(acc)
                for i, j in T.Parallel(8, 8):
                    T.reducer_update(acc[i, i], A[i, j])
                T.finalize_reducer(acc, out)
    with pytest.raises(FrontendError, match="must be a loop variable of the enclosing T.Parallel nest"):
        @T.prim_func
        def shifted(A: T.Tensor((4, 64), "float32")):
            with T.Kernel(1, threads=32):
                acc = T.alloc_reducer((8,), "float32")
                out = T.alloc_fragment((8,), "float32")
                T.reducer_init(acc)
                for r in T.serial(4):
                    for k in T.Parallel(64):
                        T.reducer_update(acc[r + 1], A[r, k])
                T.finalize_reducer(acc, out)


def wide_plan(R, C, K, start, op, legacy=False):
    """TileLang's wide plan: the reducer's index names serial loops around the T.Parallel nest:
    Out[r, c] = op over k of A[start + r, k] * B[c, k]."""
    @T.prim_func
    def wide(A: T.Tensor((start + R, K), "float32"), B: T.Tensor((C, K), "float32"),
             Out: T.Tensor((R, C), "float32")):
        with T.Kernel(1, threads=64):
            a = T.alloc_fragment((start + R, K), "float32")
            b = T.alloc_fragment((C, K), "float32")
            T.copy(A, a)
            T.copy(B, b)
            if legacy:  # acc[r - start]: the serial loop r starts at `start`
                acc = T.alloc_reducer((R, C), "float32", op="sum", replication="all")
                T.clear(acc)
                for r in T.serial(start, start + R):
                    for c in T.serial(C):
                        for k in T.Parallel(K):
                            acc[r - start, c] += a[r, k] * b[c, k]
                T.finalize_reducer(acc)
                T.copy(acc, Out)
            else:
                acc = T.alloc_reducer((R, C), "float32", op=op)
                out = T.alloc_fragment((R, C), "float32")
                T.reducer_init(acc)
                for r in T.serial(R):
                    for c in T.serial(C):
                        for k in T.Parallel(K):
                            T.reducer_update(acc[r, c], a[start + r, k] * b[c, k])
                T.finalize_reducer(acc, out)
                T.copy(out, Out)

    return wide


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("R, C, K, start, op", [(4, 4, 256, 0, "sum"), (3, 1, 40, 2, "max"), (1, 5, 7, 0, "sum")])
def test_wide_plan_index_names_serial_loops_around_the_nest(path, R, C, K, start, op):
    a = RNG.standard_normal((start + R, K)).astype(np.float32)
    b = RNG.standard_normal((C, K)).astype(np.float32)
    prod = a[start:, None, :].astype(np.float64) * b[None].astype(np.float64)
    want = REF[op](prod, axis=2)
    out = np.full((R, C), np.nan, np.float32)
    run(path, wide_plan(R, C, K, start, op), A=a, B=b, Out=out)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("path", ["cpu", "cuda:sm_80"])
def test_wide_plan_of_a_legacy_reducer(path):
    R, C, K, start = 4, 3, 64, 1
    a = RNG.standard_normal((start + R, K)).astype(np.float32)
    b = RNG.standard_normal((C, K)).astype(np.float32)
    out = np.full((R, C), np.nan, np.float32)
    run(path, wide_plan(R, C, K, start, "sum", legacy=True), A=a, B=b, Out=out)
    np.testing.assert_allclose(out, a[start:].astype(np.float64) @ b.T.astype(np.float64), rtol=1e-4, atol=1e-4)


def v1_syntax_on_a_default_reducer(M, K):
    @T.prim_func
    def v1(G: T.Tensor((M, K), "float32"), Y: T.Tensor((M, K), "float32"), O: T.Tensor((M, K), "float32")):
        with T.Kernel(1, threads=128):
            g = T.alloc_fragment((M, K), "float32")
            y = T.alloc_fragment((M, K), "float32")
            o = T.alloc_fragment((M, K), "float32")
            red = T.alloc_reducer((M,), "float32")  # no replication=, used with the v1 syntax
            T.copy(G, g)
            T.copy(Y, y)
            T.clear(red)
            for i, j in T.Parallel(M, K):
                red[i] += g[i, j] * y[i, j]
            T.finalize_reducer(red)
            for i, j in T.Parallel(M, K):
                o[i, j] = g[i, j] - red[i]
            T.copy(o, O)

    return v1


@pytest.mark.parametrize("path", PATHS)
def test_default_reducer_used_with_the_v1_syntax_is_legacy(path):
    M, K = 64, 8
    g = RNG.standard_normal((M, K)).astype(np.float32)
    y = RNG.standard_normal((M, K)).astype(np.float32)
    out = np.full((M, K), np.nan, np.float32)
    run(path, v1_syntax_on_a_default_reducer(M, K), G=g, Y=y, O=out)
    g64 = g.astype(np.float64)
    np.testing.assert_allclose(out, g64 - (g64 * y).sum(1, keepdims=True), rtol=1e-5, atol=1e-5)


def test_in_place_finalize_of_a_reducer_opened_with_reducer_init_is_refused():
    with pytest.raises(FrontendError, match="was opened with T.reducer_init"):
        @T.prim_func
        def mixed(A: T.Tensor((8, 8), "float32")):
            with T.Kernel(1, threads=32):
                acc = T.alloc_reducer((8,), "float32")
                T.reducer_init(acc)
                for i, j in T.Parallel(8, 8):
                    T.reducer_update(acc[i], A[i, j])
                T.finalize_reducer(acc)


def computed_index(m, n, group, op, constant=None):
    """TileKernels' mHC backward: ``acc[T.min(2, j // group)] += ...`` over T.Parallel(i, j), a
    legacy reducer of 3 elements whose index is an expression of the loop (or ``constant``)."""
    @T.prim_func
    def main(A: T.Tensor((m, n), "float32"), O: T.Tensor((3,), "float32")):
        with T.Kernel(1, threads=32):
            a = T.alloc_fragment((m, n), "float32")
            acc = T.alloc_reducer(3, "float32", op=op, replication="all")
            T.copy(A, a)
            T.fill(acc, 0.0 if op == "sum" else -1e30)
            for i, j in T.Parallel(m, n):
                if constant is None:
                    if op == "sum":
                        acc[T.min(2, j // group)] += a[i, j]
                    else:
                        acc[T.min(2, j // group)] = T.max(acc[T.min(2, j // group)], a[i, j])
                else:
                    acc[constant] += a[i, j]
            T.finalize_reducer(acc)
            T.copy(acc, O)

    return main


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("m,n,group,op", [(8, 12, 4, "sum"), (4, 20, 3, "sum"), (16, 8, 2, "max"), (1, 5, 2, "sum")])
def test_an_update_at_an_index_computed_from_the_loop(path, m, n, group, op):
    a = np.random.default_rng(m * n + group).standard_normal((m, n)).astype(np.float32)
    out = run(path, computed_index(m, n, group, op), A=a, O=np.zeros(3, np.float32))["O"]
    which = np.minimum(2, np.arange(n) // group)
    reduce = np.sum if op == "sum" else np.max
    expected = [reduce(a[:, which == r].astype(np.float64)) if (which == r).any() else (0.0 if op == "sum" else -1e30)
                for r in range(3)]
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("path", PATHS)
def test_an_update_at_a_constant_index_other_than_0(path):
    a = np.random.default_rng(1).standard_normal((4, 8)).astype(np.float32)
    out = run(path, computed_index(4, 8, 4, "sum", constant=1), A=a, O=np.zeros(3, np.float32))["O"]
    np.testing.assert_allclose(out, [0.0, a.astype(np.float64).sum(), 0.0], rtol=1e-5, atol=1e-5)
