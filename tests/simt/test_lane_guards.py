"""Guarded T.Parallel elements become vector runs (simt/transform/lane_guards.py): a ragged tensor's
bounds guards and the author's own ``if row < M and col < N`` no longer keep the loop scalar. A run
whose lanes all pass its guards is one vector access; the run across the tensor's edge is emitted a
lane at a time with each lane's guard; guards the same for every lane stand around the vector.

* ``every_lane`` against brute force over generated affine conditions (the algebra the split rests on);
* which loops vectorize, and that the edge keeps a scalar fallback;
* numerics on every interpreter and the cpu oracle against float64, ragged and size-1 shapes,
  guards that vary over lanes in ways that cannot be bounded (they stay scalar)."""

import numpy as np
import pytest
import tvm
from hypothesis import given, settings
from hypothesis import strategies as st
from tvm import tirx

import tilelang_core.language as T
from tilelang_core.simt.transform.lane_guards import every_lane
from tilelang_core.simt.transform.state import KernelState, substitute
from tilelang_core.testing.oracle import PATHS, lower, run


def flat_scale(N, block):
    """B[i] = A[i] * 2 + 1 over blocks of ``block``: the last block overhangs a ragged N."""
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
            for i in T.Parallel(block):
                B[bx * block + i] = A[bx * block + i] * 2.0 + 1.0

    return main


def guarded_add(M, N, bm, bn, dtype="float32"):
    """The author's own guard, as in scale_add: ``if row < M and col < N``."""
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=64) as (bx, by):
            for i, j in T.Parallel(bm, bn):
                row = by * bm + i
                col = bx * bn + j
                if row < M and col < N:
                    C[row, col] = T.cast(0.5 * T.cast(A[row, col], "float32") + T.cast(B[row, col], "float32"), dtype)

    return main


def flat_guarded(N, block, guard, value):
    """``B[k] = value(A, k)`` where ``guard(A, B, first, k)`` holds, ``k = first + i`` over a block
    starting at ``first``: for guards the lane split cannot bound (below)."""
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
            for i in T.Parallel(block):
                if guard(A, B, bx * block, bx * block + i):
                    B[bx * block + i] = value(A, bx * block + i)

    return main


def odd_lanes(N, block):
    """A guard that varies over the lanes in no affine way (every third element): stays scalar."""
    return flat_guarded(N, block, lambda A, B, first, k: k % 3 != 0, lambda A, k: A[k] + 1.0)


def data_guard(N, block):
    """A guard that reads memory (B only where A is positive): stays scalar."""
    return flat_guarded(N, block, lambda A, B, first, k: A[k] > 0.0, lambda A, k: A[k] * 3.0)


def guard_on_written_memory(N, block):
    """A guard the same for every lane that reads what the run writes (B[bx * block], its first
    element): a lane's store may change the next lane's guard, so the run stays lane by lane."""
    return flat_guarded(N, block, lambda A, B, first, k: B[first] >= 0.0, lambda A, k: A[k])


def _script(func) -> str:
    return lower("cuda:sm_80", func).script()


def _vectorized(func) -> bool:
    return "T.vectorized" in _script(func)


@pytest.mark.parametrize("N", [1024, 1001, 130])
def test_a_ragged_tensor_vectorizes(N):
    script = _script(flat_scale(N, 128))
    assert "T.vectorized" in script
    # a divisible N needs no scalar edge; a ragged one keeps it for the run across the end
    assert ("vs" in script) == (N % 4 != 0 or N % 128 != 0), script


@pytest.mark.parametrize("M, N", [(256, 256), (100, 96), (37, 100)])
def test_an_authors_guard_vectorizes(M, N):
    assert _vectorized(guarded_add(M, N, 16, 64))


@pytest.mark.parametrize("M, N", [(37, 99), (5, 7)])
def test_unaligned_rows_stay_scalar(M, N):
    assert not _vectorized(guarded_add(M, N, 16, 64))


@pytest.mark.parametrize("kernel", [odd_lanes, data_guard, guard_on_written_memory])
def test_guards_that_cannot_be_bounded_stay_scalar(kernel):
    assert not _vectorized(kernel(256, 128))


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("N", [1, 3, 130, 1001])
def test_flat_numerics(path, N):
    a = np.random.default_rng(N).standard_normal(N).astype(np.float32)
    got = run(path, flat_scale(N, 128), A=a, B=np.full(N, np.nan, np.float32))["B"]
    np.testing.assert_allclose(got, a.astype(np.float64) * 2 + 1, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("kernel, want", [(odd_lanes, lambda a, b, i: np.where(i % 3 != 0, a + 1, b)),
                                          (data_guard, lambda a, b, i: np.where(a > 0, a * 3, b))])
def test_unbounded_guard_numerics(path, kernel, want):
    a = np.random.default_rng(2).standard_normal(301).astype(np.float32)
    b = np.random.default_rng(3).standard_normal(301).astype(np.float32)
    got = run(path, kernel(301, 64), A=a, B=b.copy())["B"]
    np.testing.assert_allclose(got, want(a.astype(np.float64), b, np.arange(301)), rtol=1e-6)


@settings(max_examples=10, deadline=None)
@given(M=st.integers(1, 40), N=st.sampled_from([1, 4, 8, 12, 64, 70, 96]), dtype=st.sampled_from(["float32", "float16"]),
       path=st.sampled_from(PATHS), seed=st.integers(0, 99))
def test_guarded_add_numerics(M, N, dtype, path, seed):
    rng = np.random.default_rng(seed)
    a, b = (rng.standard_normal((M, N)).astype(dtype) for _ in range(2))
    c = np.full((M, N), np.nan, dtype)
    got = run(path, guarded_add(M, N, 16, 32, dtype), A=a, B=b, C=c)["C"]
    tol = 1e-6 if dtype == "float32" else 2e-3
    np.testing.assert_allclose(got, 0.5 * a.astype(np.float64) + b, rtol=tol, atol=tol)


# every_lane: a conjunction of affine comparisons holds on lanes 0..vec-1 exactly when the
# returned condition does, checked by evaluating both at every value of x in a window
_CMP = {"<": tirx.LT, "<=": tirx.LE, ">": tirx.GT, ">=": tirx.GE, "==": tirx.EQ}


def _evaluate(expr, x, vi, xv, lane):
    value = tvm.sym.Analyzer().simplify(substitute(expr, {x: tirx.const(xv, "int32"), vi: tirx.const(lane, "int32")}))
    return bool(value.value)


@settings(max_examples=40, deadline=None)
@given(terms=st.lists(st.tuples(st.integers(-3, 3), st.integers(-3, 3), st.integers(-20, 20),
                                st.sampled_from(sorted(_CMP))), min_size=1, max_size=2),
       vec=st.sampled_from([2, 4, 8]))
def test_every_lane_matches_brute_force(terms, vec):
    x, vi = tirx.Var("x", "int32"), tirx.Var("vi", "int32")
    state = KernelState.__new__(KernelState)
    state.analyzer = tvm.sym.Analyzer()
    state.analyzer.bind(vi, tvm.ir.Range.from_min_extent(0, vec))
    cond = None
    for a, b, c, op in terms:  # a * vi + b * x  <op>  c
        term = _CMP[op](a * vi + b * x, tirx.const(c, "int32"))
        cond = term if cond is None else tirx.And(cond, term)
    every = every_lane(cond, vi, vec, state)
    assert every is not None
    for xv in range(-12, 13):
        want = all(_evaluate(cond, x, vi, xv, lane) for lane in range(vec))
        assert _evaluate(every, x, vi, xv, 0) == want, (cond, every, xv)


def test_every_lane_refuses_what_it_cannot_bound():
    x, vi = tirx.Var("x", "int32"), tirx.Var("vi", "int32")
    state = KernelState.__new__(KernelState)
    state.analyzer = tvm.sym.Analyzer()
    state.analyzer.bind(vi, tvm.ir.Range.from_min_extent(0, 4))
    assert every_lane(tirx.NE(x + vi, 3), vi, 4, state) is None          # holds on all but one lane
    assert every_lane(tirx.Or(x + vi < 3, x > 5), vi, 4, state) is None  # not one interval
    assert every_lane(tirx.floormod(x + vi, 3) < 2, vi, 4, state) is None  # not affine
