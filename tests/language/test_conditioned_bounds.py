"""On-chip indices under ``if`` conditions on their own variables: the parse-time bounds check
(language/bounds_check.py) refuses exactly when some point of the loop ranges satisfies the
conditions and leaves the buffer. It used to refuse on the unconditioned bound, which TileLang's
topk selector exceeds only where its condition is false (``if tx < R - (1 << i): s[tx + (1 << i)]``),
and an index that does leave the buffer under its condition must still be refused."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tilelang_core.language as T
from tilelang_core.errors import FrontendError
from tilelang_core.testing.oracle import PATHS, run


def shifted_read(R, threads, slack):
    """O[t] = s[t + 2**i] summed over i where t + 2**i < R + slack (slack > 0 overruns s)."""
    @T.prim_func
    def k(H: T.Tensor((R,), "int32"), O: T.Tensor((R,), "int32")):
        with T.Kernel(1, threads=threads):
            tx = T.get_thread_binding()
            s = T.alloc_shared((R,), "int32")
            acc = T.alloc_var("int32")
            if tx < R:
                s[tx] = H[tx]
            T.sync_threads()
            acc = 0
            for i in T.serial(R.bit_length() - 1):
                if tx < R + slack - (1 << i):
                    acc = acc + s[tx + (1 << i)]
            if tx < R:
                O[tx] = acc

    return k


@settings(max_examples=6, deadline=None)
@given(R=st.sampled_from([16, 32, 64]), extra=st.sampled_from([0, 32]), path=st.sampled_from(PATHS))
def test_conditioned_index_inside_the_buffer_is_accepted(R, extra, path):
    h = np.random.default_rng(R).integers(-9, 9, R).astype(np.int32)
    o = np.zeros(R, np.int32)
    run(path, shifted_read(R, R + extra, 0), H=h, O=o)
    want = [sum(h[t + (1 << i)] for i in range(R.bit_length() - 1) if t + (1 << i) < R) for t in range(R)]
    np.testing.assert_array_equal(o, want)


@pytest.mark.parametrize("slack", [1, 5])
def test_conditioned_index_that_leaves_the_buffer_is_refused(slack):
    with pytest.raises(FrontendError, match=f"reaches {32 + slack - 1} where the enclosing conditions hold"):
        shifted_read(32, 64, slack)


def test_else_branch_is_checked_under_the_negated_condition():
    with pytest.raises(FrontendError, match="reaches 64 where the enclosing conditions hold"):
        @T.prim_func
        def k(A: T.Tensor((64,), "float32")):
            with T.Kernel(1, threads=128):
                tx = T.get_thread_binding()
                s = T.alloc_shared((64,), "float32")
                if tx >= 64:
                    A[0] = 1.0
                else:
                    s[tx + 1] = 1.0


def previous_element(guard):
    """B[k] counts loc[k - 1] == loc[k] behind ``guard`` (DeepSeek's top-k writes `k != 0 and
    top[k - 1] == idx`), plus a T.if_then_else read of loc[k - 1]."""
    @T.prim_func
    def main(A: T.Tensor((6,), T.int32), B: T.Tensor((6,), T.int32)):
        with T.Kernel(1, threads=1):
            loc = T.alloc_local((6,), T.int32)
            for k in T.unroll(6):
                loc[k] = A[k]
            for k in T.unroll(6):
                if guard(k) and loc[k - 1] == loc[k]:
                    B[k] = 1
                B[k] = B[k] + T.if_then_else(k > 0, loc[k - 1], 100)

    return main


@pytest.mark.parametrize("path", PATHS)
def test_a_short_circuit_guard_bounds_the_read_behind_it(path):
    a = np.array([1, 1, 2, 3, 3, 3], np.int32)
    out = run(path, previous_element(lambda k: k != 0), A=a, B=np.zeros(6, np.int32))["B"]
    np.testing.assert_array_equal(out, [100, 2, 1, 2, 4, 4])


def test_a_short_circuit_guard_that_does_not_bound_the_read_is_refused():
    with pytest.raises(FrontendError, match=r"reaches -1 where the enclosing conditions hold"):
        previous_element(lambda k: k >= 0)
