"""Mistakes in kernel code raise FrontendError at the user's file and line, with a caret."""

import traceback

import pytest

import tilelang_core.language as T
from tilelang_core.errors import FrontendError

n_dyn = T.dynamic("n")


def _line_of(snippet: str) -> int:
    with open(__file__) as f:
        for i, line in enumerate(f, 1):
            if snippet in line and "_line_of" not in line and "snippet" not in line:
                return i
    raise AssertionError(snippet)


def _raises(build, snippet: str, *needles: str) -> FrontendError:
    with pytest.raises(FrontendError) as info:
        build()
    err = info.value
    text = str(err)
    assert f"test_language_errors.py:{_line_of(snippet)}" in text, text
    assert snippet in text and "^" in text, text
    for needle in needles:
        assert needle in text, text
    assert err.filename == __file__ and err.lineno == _line_of(snippet)
    # No TVM frames and no chained TVM exception in what the user sees.
    assert err.__cause__ is None and err.__suppress_context__
    frames = traceback.extract_tb(err.__traceback__)
    assert not any("/tvm/" in fr.filename for fr in frames), frames
    return err


def test_unknown_name():
    def build():
        @T.prim_func
        def k(A: T.Tensor((128,), T.float32)):
            with T.Kernel(1, threads=128):
                T.copy(A, undefined_buffer)  # noqa: F821

    _raises(build, "T.copy(A, undefined_buffer)", "unknown name 'undefined_buffer'")


def test_unknown_language_function():
    def build():
        @T.prim_func
        def k(A: T.Tensor((128,), T.float32)):
            with T.Kernel(1, threads=128):
                T.copy_async(A, A)

    _raises(build, "T.copy_async(A, A)", "unknown name T.copy_async")


def test_copy_shape_mismatch():
    def build():
        @T.prim_func
        def k(A: T.Tensor((128, 64), T.float32)):
            with T.Kernel(1, threads=128):
                S = T.alloc_shared((64, 64), T.float32)
                T.copy(A[0:128, 0:64], S)

    _raises(build, "T.copy(A[0:128, 0:64], S)", "T.copy shape mismatch", "[128, 64]", "[64, 64]")


def test_gemm_shape_mismatch():
    def build():
        @T.prim_func
        def k(A: T.Tensor((128,), T.float32)):
            with T.Kernel(1, threads=128):
                a = T.alloc_shared((64, 32), T.float16)
                b = T.alloc_shared((16, 64), T.float16)
                c = T.alloc_fragment((64, 64), T.float32)
                T.gemm(a, b, c)

    _raises(build, "T.gemm(a, b, c)", "T.gemm shape mismatch", "K of A is 32 but K of B is 16")


def test_gemm_accumulator_must_be_fragment():
    def build():
        @T.prim_func
        def k(A: T.Tensor((128,), T.float32)):
            with T.Kernel(1, threads=128):
                a = T.alloc_shared((64, 32), T.float16)
                b = T.alloc_shared((32, 64), T.float16)
                c_shared = T.alloc_shared((64, 64), T.float32)
                T.gemm(a, b, c_shared)

    _raises(build, "T.gemm(a, b, c_shared)", "accumulator C ('c_shared')", "'local.fragment'",
            "T.alloc_fragment")


def test_reduce_dst_shape_mismatch():
    def build():
        @T.prim_func
        def k(A: T.Tensor((128,), T.float32)):
            with T.Kernel(1, threads=128):
                f = T.alloc_fragment((64, 32), T.float32)
                r = T.alloc_fragment((32,), T.float32)
                T.reduce_sum(f, r, dim=1)

    _raises(build, "T.reduce_sum(f, r, dim=1)", "T.reduce_sum shape mismatch")


def test_threads_must_be_constant():
    def build():
        @T.prim_func
        def k(A: T.Tensor((n_dyn,), T.float32)):
            with T.Kernel(1, threads=n_dyn):
                A[0] = 1.0

    _raises(build, "with T.Kernel(1, threads=n_dyn):", "threads must be a compile-time constant")


def test_shared_shape_must_be_constant():
    def build():
        @T.prim_func
        def k(A: T.Tensor((n_dyn,), T.float32)):
            with T.Kernel(1, threads=128):
                s = T.alloc_shared((n_dyn,), T.float32)

    _raises(build, "s = T.alloc_shared((n_dyn,), T.float32)", "must be compile-time constants")


def test_num_stages_must_be_constant():
    def build():
        @T.prim_func
        def k(A: T.Tensor((n_dyn,), T.float32), s: T.int32):
            with T.Kernel(1, threads=128):
                for i in T.Pipelined(4, num_stages=s):
                    A[i] = 1.0

    _raises(build, "for i in T.Pipelined(4, num_stages=s):", "num_stages must be a non-negative "
                                                             "constant integer")


def test_allocation_outside_kernel():
    def build():
        @T.prim_func
        def k(A: T.Tensor((128,), T.float32)):
            s = T.alloc_shared((128,), T.float32)

    _raises(build, "s = T.alloc_shared((128,), T.float32)", "inside 'with T.Kernel(...)'")


def test_parameter_without_annotation():
    def build():
        @T.prim_func
        def k(A):
            with T.Kernel(1, threads=128):
                pass

    _raises(build, "def k(A):", "parameter 'A' needs an annotation")


def test_loop_over_unsupported_iterable():
    def build():
        @T.prim_func
        def k(A: T.Tensor((128,), T.float32)):
            with T.Kernel(1, threads=128):
                for i in [1, 2]:
                    A[i] = 1.0

    _raises(build, "for i in [1, 2]:", "a kernel loop must iterate over")


def test_wrong_number_of_indices():
    def build():
        @T.prim_func
        def k(A: T.Tensor((128, 4), T.float32)):
            with T.Kernel(1, threads=128):
                A[3] = 2.5

    _raises(build, "A[3] = 2.5", "buffer A has 2 dimensions but 1 indices")


def test_tvm_error_is_reported_at_user_line():
    def build():
        @T.prim_func
        def k(A: T.Tensor((128,), T.float32)):
            with T.Kernel(1, threads=128):
                A[0] = T.exp("x")

    _raises(build, 'A[0] = T.exp("x")', "T.exp expects a number or a scalar expression")


def test_nested_kernels_are_rejected():
    def build():
        @T.prim_func
        def k(A: T.Tensor((128,), T.float32)):
            with T.Kernel(1, threads=128):
                with T.Kernel(1, threads=128):
                    A[0] = 1.0

    _raises(build, "                with T.Kernel(1, threads=128):", "cannot be nested")


def test_returning_a_value_from_prim_func():
    def build():
        @T.prim_func
        def k(A: T.Tensor((128,), T.float32)):
            with T.Kernel(1, threads=128):
                A[0] = 1.0
            return A

    _raises(build, "return A", "returns nothing")


def test_error_state_does_not_leak_into_next_kernel():
    def bad():
        @T.prim_func
        def k(A: T.Tensor((128,), T.float32)):
            with T.Kernel(1, threads=128):
                T.copy(A, missing)  # noqa: F821

    with pytest.raises(FrontendError):
        bad()

    @T.prim_func
    def ok(A: T.Tensor((128,), T.float32)):
        with T.Kernel(1, threads=128):
            A[0] = 1.0

    assert ok.script().count("launch_thread") == 2


def test_error_inside_a_macro_points_into_the_macro():
    @T.macro
    def broken(buf):
        T.copy(buf, not_defined_anywhere)  # noqa: F821

    def build():
        @T.prim_func
        def k(A: T.Tensor((128,), T.float32)):
            with T.Kernel(1, threads=128):
                broken(A)

    _raises(build, "T.copy(buf, not_defined_anywhere)", "unknown name 'not_defined_anywhere'")


def test_assert_checks_compile_time_conditions_at_their_line():
    def mk(n):
        @T.prim_func
        def k(A: T.Tensor((n,), "float32")):
            assert n % 4 == 0
            with T.Kernel(1, threads=32):
                assert n <= 64, "n too big"
                for i in T.Parallel(n):
                    A[i] = 1.0
        return k

    mk(16)
    with pytest.raises(FrontendError, match=r"assertion failed: assert n % 4 == 0"):
        mk(6)
    with pytest.raises(FrontendError, match="assertion failed: n too big"):
        mk(128)


def test_assert_on_size_variables_that_simplifies_is_decided():
    """TileLang's eager copy macro asserts ``M == M_`` on two tensors of one symbolic size."""
    n = T.dynamic("n")

    @T.prim_func
    def same(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        (m,), (m_,) = A.shape, B.shape
        assert m == m_, "sizes differ"
        assert (m * 2) % 2 == 0
        with T.Kernel(1, threads=32):
            B[0] = A[0]

    with pytest.raises(FrontendError, match="sizes differ"):
        @T.prim_func
        def different(A: T.Tensor((n,), "float32"), B: T.Tensor((n + 1,), "float32")):
            (m,), (m_,) = A.shape, B.shape
            assert m == m_, "sizes differ"
            with T.Kernel(1, threads=32):
                B[0] = A[0]

    with pytest.raises(FrontendError, match="known only when the kernel runs"):
        @T.prim_func
        def unknown(A: T.Tensor((n,), "float32")):
            (m,) = A.shape
            assert m > 4
            with T.Kernel(1, threads=32):
                A[0] = 0.0


def test_assert_on_a_run_time_value_is_refused():
    with pytest.raises(FrontendError, match="known only when the kernel runs"):
        @T.prim_func
        def k(A: T.Tensor((8,), "int32")):
            with T.Kernel(1, threads=32):
                assert A[0] > 0


def test_the_traceback_of_a_kernel_mistake_shows_no_parser_frames():
    """Issue 24: three frames of the parser printed before the user's line."""
    with pytest.raises(FrontendError) as info:
        @T.prim_func
        def bad(A: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=32):
                T.copy(A, undefined_name)  # noqa: F821
    frames = traceback.extract_tb(info.value.__traceback__)
    ours = [f for f in frames if "tilelang_core" in f.filename]
    assert len(ours) == 1 and ours[0].name == "prim_func"  # the decorator's own raise, nothing deeper
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_too_few_indices_name_the_buffer_and_both_ranks():
    """Issue 25: 'unsupported operand type(s) for +: TensorRegion and float' said nothing useful."""
    def build():
        @T.prim_func
        def k(A: T.Tensor((8, 4), T.float32)):
            with T.Kernel(1, threads=32):
                for i in T.Parallel(8):
                    A[i, 0] = A[i] * 2.0

    _raises(build, "A[i, 0] = A[i] * 2.0", "'A' has 2 dimensions (shape [8, 4]) but is indexed with 1",
            "A[i0, i1]")
