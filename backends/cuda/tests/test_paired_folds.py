"""Register reductions of float16/bfloat16 fold two values per half2 instruction (simt/paired_fold.py,
paired_folds.py): a thread's own tile along its rows ("lanes": T.alloc_local rows, a fragment's
row max) or across adjacent outputs ("outputs": a column reduction of a per-thread tile); the
helpers are TileLang's names (tl::add2, tl::max2, tl::min2, tl::max2_nan, tl::min2_nan). Numerics:
the cuda interpreter (which runs the helpers from their definitions) against numpy in float64, NaN
rows included; the source compiles with nvcc for sm_80 and sm_90a."""

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core.testing.oracle import run

pytest.importorskip("tilelang_cuda")
from test_language_fidelity_build import compiles, needs_nvcc  # noqa: E402
from tilelang_cuda.paired_folds import FOLDS  # noqa: E402

KINDS = ("sum", "max", "min", "absmax", "abssum")


def local_reduce(kind, rows, cols, dim, dtype="float16", nan_propagate=False, clear=True):
    """Each thread reduces its own (rows, cols) copy of A along ``dim``; thread 0 stores it."""
    out = cols if dim == 0 else rows

    @T.prim_func
    def main(A: T.Tensor((rows, cols), dtype), B: T.Tensor((out,), dtype)):
        with T.Kernel(1, threads=32) as _:
            src = T.alloc_local((rows, cols), dtype)
            dst = T.alloc_local((out,), dtype)
            for i, j in T.grid(rows, cols):
                src[i, j] = A[i, j]
            for i in T.serial(out):
                dst[i] = B[i]
            getattr(T, f"reduce_{kind}")(src, dst, dim=dim, clear=clear,
                                         **({"nan_propagate": True} if nan_propagate else {}))
            tx = T.get_thread_binding()
            if tx == 0:
                for i in T.serial(out):
                    B[i] = dst[i]

    return main


def fragment_reduce(kind, M, N, dtype="float16", threads=64, nan_propagate=False):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M,), dtype)):
        with T.Kernel(1, threads=threads):
            src = T.alloc_fragment((M, N), dtype)
            dst = T.alloc_fragment((M,), dtype)
            T.copy(A, src)
            getattr(T, f"reduce_{kind}")(src, dst, dim=1, **({"nan_propagate": True} if nan_propagate else {}))
            T.copy(dst, B)

    return main


def source(func, arch="sm_80") -> str:
    from tilelang_cuda.pipeline import CudaBackend

    class Target:
        def __init__(self, arch):
            self.arch = arch

    backend = CudaBackend(Target(arch))
    return backend.codegen(backend.lower(func))


def reference(kind, a, dim, b=None):
    x = np.abs(a) if kind.startswith("abs") else a
    fold = {"sum": np.sum, "abssum": np.sum, "max": np.max, "absmax": np.max, "min": np.min}[kind]
    r = fold(x, axis=dim)
    if b is not None:
        r = fold(np.stack([r, b]), axis=0)
    return r


def helper_of(kind, nan=False):
    fold = {"sum": "sum", "abssum": "sum", "max": "max", "absmax": "max", "min": "min"}[kind]
    return FOLDS[fold + ("_nan" if nan and fold != "sum" else "")] + ("<true>" if kind.startswith("abs") else "")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("rows, cols, dim", [(1, 8, 1), (3, 6, 1), (1, 7, 1), (8, 4, 0), (5, 6, 0)])
def test_per_thread_reduction_folds_pairs(kind, rows, cols, dim):
    """Rows (dim 1, an odd length: the last value alone) and columns (dim 0: adjacent outputs)."""
    src = source(local_reduce(kind, rows, cols, dim))
    assert f"{helper_of(kind)}((&(" in src, src[src.find("__global__"):]


@pytest.mark.parametrize("rows, cols, dim", [(2, 7, 1), (3, 5, 0), (4, 1, 1)])
def test_pairs_that_would_straddle_a_word_fold_one_at_a_time(rows, cols, dim):
    """Rows of odd length start at odd elements (row 1 of 2 x 7); odd columns leave an output alone."""
    assert "tl::" not in source(local_reduce("sum", rows, cols, dim))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("rows, cols, dim, clear", [(1, 8, 1, True), (3, 7, 1, False), (1, 7, 1, False),
                                                    (8, 4, 0, True), (5, 6, 0, False), (1, 1, 1, True)])
def test_per_thread_reduction_numerics(kind, dtype, rows, cols, dim, clear):
    rng = np.random.default_rng(rows * 100 + cols)
    a = rng.standard_normal((rows, cols)).astype(np.float32)
    out = cols if dim == 0 else rows
    b = rng.standard_normal(out).astype(np.float32)
    np_dtype = np.float16 if dtype == "float16" else np.float32
    a, b = a.astype(np_dtype), b.astype(np_dtype)
    got = run("cuda:sm_80", local_reduce(kind, rows, cols, dim, dtype, clear=clear), A=a, B=b.copy())["B"]
    want = reference(kind, a.astype(np.float64), dim, None if clear else b.astype(np.float64))
    tol = 2e-3 * (rows * cols) if dtype == "float16" else 1e-5 * (rows * cols)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("kind", ["max", "min", "absmax"])
@pytest.mark.parametrize("where", ["per_thread", "fragment"])
def test_nan_propagate_uses_the_nan_folds(kind, where):
    rng = np.random.default_rng(3)
    if where == "per_thread":
        func, a = local_reduce(kind, 4, 8, 1, nan_propagate=True), rng.standard_normal((4, 8))
        b = np.zeros(4, np.float16)
    else:
        func, a = fragment_reduce(kind, 8, 64, nan_propagate=True), rng.standard_normal((8, 64))
        b = np.zeros(8, np.float16)
    assert helper_of(kind, nan=True) in source(func)
    a = a.astype(np.float16)
    a[1, 5] = np.nan
    got = run("cuda:sm_80", func, A=a, B=b)["B"]
    assert np.isnan(got[1])
    keep = [r for r in range(len(got)) if r != 1]
    np.testing.assert_array_equal(got[keep], reference(kind, a, 1)[keep])


def test_without_nan_propagate_a_nan_loses_as_in_the_scalar_fold():
    """__hmax2 returns the other operand where one is NaN, like the scalar max of a half."""
    a = np.arange(8, dtype=np.float16).reshape(1, 8)
    a[0, 3] = np.nan
    got = run("cuda:sm_80", local_reduce("max", 1, 8, 1), A=a, B=np.zeros(1, np.float16))["B"]
    assert got[0] == 7


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("M, N, threads", [(8, 64, 64), (16, 48, 128), (4, 10, 32)])
def test_fragment_reduction_numerics(kind, dtype, M, N, threads):
    rng = np.random.default_rng(M + N)
    np_dtype = np.float16 if dtype == "float16" else np.float32
    a = rng.standard_normal((M, N)).astype(np_dtype)
    func = fragment_reduce(kind, M, N, dtype, threads)
    got = run("cuda:sm_80", func, A=a, B=np.zeros(M, np_dtype))["B"]
    tol = 3e-3 * N if dtype == "float16" else 1e-5 * N
    np.testing.assert_allclose(got.astype(np.float64), reference(kind, a.astype(np.float64), 1), rtol=tol, atol=tol)


def test_fragment_row_reduction_pairs_a_threads_registers():
    """8 x 64 over 64 threads: each thread holds 8 values of one row, paired into lanes."""
    src = source(fragment_reduce("max", 8, 64))
    assert "tl::max2((&(" in src


def test_float32_and_mixed_types_fold_one_value_at_a_time():
    assert "tl::" not in source(fragment_reduce("max", 8, 64, dtype="float32"))
    assert "tl::" not in source(local_reduce("sum", 2, 8, 1, dtype="float32"))


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_paired_folds_compile(arch, tmp_path):
    """Every helper, float16 and bfloat16, abs and not, through nvcc."""
    for i, (kind, dtype, nan) in enumerate([("sum", "float16", False), ("absmax", "bfloat16", True),
                                            ("min", "bfloat16", False), ("abssum", "float16", False),
                                            ("max", "float16", True), ("min", "float16", True)]):
        func = fragment_reduce(kind, 8, 64, dtype, nan_propagate=nan) if i % 2 else \
            local_reduce(kind, 4, 8, 1, dtype, nan_propagate=nan)
        src = compiles(func, arch, tmp_path / str(i))
        assert helper_of(kind, nan) in src
