"""A T.Parallel loop that reads an element another of its iterations writes is refused
(transform/parallel_races.py): the iterations run at once on different threads, so the value read
is undefined. Before, every backend returned garbage without a word (a fragment reversed in one
loop: NaN on the CUDA interpreter, uninitialized memory on cpu). Reads of the iteration's own
elements, of elements no iteration writes, through a gather, and in a later loop stay accepted, and
run right; the check can be switched off with TileLang's `tl.disable_data_race_check`."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tilelang_core as tl
import tilelang_core.language as T
from tilelang_core.errors import FrontendError
from tilelang_core.testing.oracle import PATHS, run


def one_loop(P, read, scope="fragment", threads=64):
    """f[i] = A[i] and B[i] = f[read(i)] in one T.Parallel body (``read`` None: a second loop)."""
    @T.prim_func
    def main(A: T.Tensor((P,), "float32"), B: T.Tensor((P,), "float32")):
        with T.Kernel(1, threads=threads):
            f = T.alloc_fragment((P,), "float32") if scope == "fragment" else T.alloc_shared((P,), "float32")
            for i in T.Parallel(P):
                f[i] = A[i]
                if read is not None:
                    B[i] = f[read(i, P)]
            if read is None:
                for i in T.Parallel(P):
                    B[i] = f[P - 1 - i]

    return main


RACES = {"mirror": lambda i, P: P - 1 - i, "next": lambda i, P: (i + 1) % P, "half": lambda i, P: i // 2}


@pytest.mark.parametrize("scope", ["fragment", "shared"])
@pytest.mark.parametrize("kind", sorted(RACES))
def test_a_read_of_another_iterations_write_is_refused_at_its_line(kind, scope):
    with pytest.raises(FrontendError, match="that another iteration of the same loop writes") as err:
        tl.compile(one_loop(64, RACES[kind], scope), target="cpu")
    assert "B[i] = f[read(i, P)]" in str(err.value) and "test_parallel_races.py" in str(err.value)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("scope", ["fragment", "shared"])
def test_the_same_read_in_a_second_loop_runs(path, scope):
    a = np.random.default_rng(1).standard_normal(64).astype(np.float32)
    out = run(path, one_loop(64, None, scope), A=a, B=np.full(64, np.nan, np.float32))
    np.testing.assert_array_equal(out["B"], a[::-1])


def accepted(P, threads=64):
    """Reads the compiler can prove race free: the iteration's own element (through a bound
    name), the other parity of a doubled index, a half no iteration writes, and a gather."""
    @T.prim_func
    def main(A: T.Tensor((2 * P,), "float32"), idx: T.Tensor((P,), "int32"), B: T.Tensor((P,), "float32")):
        with T.Kernel(1, threads=threads):
            f = T.alloc_fragment((2 * P,), "float32")
            g = T.alloc_fragment((2 * P,), "float32")
            for i in T.Parallel(2 * P):
                g[i] = A[i]
            for i in T.Parallel(P):
                k = i
                f[2 * i] = A[2 * i]
                f[2 * i + 1] = f[2 * k] + 1.0
                g[i] = g[i + P] * 2.0
                B[i] = f[2 * i + 1] + g[k] + g[idx[i] + P]

    return main


@pytest.mark.parametrize("path", PATHS)
def test_reads_proved_race_free_are_accepted_and_run(path):
    P = 32
    rng = np.random.default_rng(2)
    a = rng.standard_normal(2 * P).astype(np.float32)
    idx = rng.integers(0, P, P).astype(np.int32)
    out = run(path, accepted(P), A=a, idx=idx, B=np.full(P, np.nan, np.float32))
    x = a.astype(np.float64)
    want = (x[0::2] + 1.0) + x[P:] * 2.0 + x[P + idx]
    np.testing.assert_allclose(out["B"], want, rtol=1e-6, atol=1e-6)


def nested(R, C, dr, dc):
    """T.Parallel(R, C) writing f[i, j] and reading f[(i + dr) % R, (j + dc) % C]."""
    @T.prim_func
    def main(A: T.Tensor((R, C), "float32"), B: T.Tensor((R, C), "float32")):
        with T.Kernel(1, threads=128):
            f = T.alloc_fragment((R, C), "float32")
            for i, j in T.Parallel(R, C):
                f[i, j] = A[i, j]
                B[i, j] = f[(i + dr) % R, (j + dc) % C]

    return main


@settings(max_examples=20, deadline=None)
@given(R=st.integers(1, 8), C=st.integers(1, 40), dr=st.integers(0, 3), dc=st.integers(0, 3))
def test_generated_shifts_are_refused_exactly_when_they_cross_iterations(R, C, dr, dc):
    crosses = (dr % R, dc % C) != (0, 0)
    if crosses:
        with pytest.raises(FrontendError, match="another iteration"):
            tl.compile(nested(R, C, dr, dc), target="cpu")
    else:
        a = np.random.default_rng(R * C).standard_normal((R, C)).astype(np.float32)
        out = run("cpu", nested(R, C, dr, dc), A=a, B=np.full((R, C), np.nan, np.float32))
        np.testing.assert_array_equal(out["B"], a)


def test_tilelangs_switch_turns_the_check_off():
    tl.compile(one_loop(64, RACES["mirror"]), target="cpu", pass_configs={"tl.disable_data_race_check": True})
