"""Atomic adds into consecutive global elements as one vector atomic (AtomicAddx2 / AtomicAddx4,
tilelang_core/simt/vector_atomic_adds.py; TileLang's names): a fragment's tile add (split-K's
epilogue), a T.Parallel body that adds per element, a tile add from global or shared memory with
a memory order, and T.atomic_addx2/x4's lanes. Which types take them where: float16 on every arch,
bfloat16 and float32 on sm_90 (vector_atomics.vector_atomic_adds).

Numerics: the cuda interpreter (which runs the helpers lane by lane) for sm_80 and sm_90a against
numpy in float64, ragged tiles included, and the cpu backend beside it; the sources compile with
nvcc for sm_80 and sm_90a. The runs that must stay scalar (a shared destination, a value that
reads the destination, a start one element off the vector) are checked by their source and
their numbers."""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tilelang_core.language as T
from tilelang_core.testing.oracle import run

pytest.importorskip("tilelang_cuda")
from test_language_fidelity_build import compiles, needs_nvcc  # noqa: E402
from test_paired_folds import source  # noqa: E402

NP = {"float16": np.float16, "float32": np.float32, "bfloat16": np.float32}


def fragment_add(M, N, K, bm, bn, src="float32", dst="float32", threads=128):
    """Split-K's epilogue: K slices of A each added into B from a fragment."""
    @T.prim_func
    def main(A: T.Tensor((K, M, N), src), B: T.Tensor((M, N), dst)):
        with T.Kernel(T.ceildiv(M, bm), T.ceildiv(N, bn), K, threads=threads) as (bx, by, bz):
            acc = T.alloc_fragment((bm, bn), src)
            T.copy(A[bz, bx * bm, by * bn], acc)
            T.atomic_add(B[bx * bm, by * bn], acc)

    return main


def parallel_add(M, N, K, bm, bn, dtype="float32", offset=0):
    """A T.Parallel body adding a shared tile element by element, the value bound first;
    ``offset`` shifts the destination's columns (1: no run starts aligned)."""
    @T.prim_func
    def main(A: T.Tensor((K, M, N), dtype), B: T.Tensor((M, N + offset), dtype)):
        with T.Kernel(T.ceildiv(M, bm), T.ceildiv(N, bn), K, threads=32) as (bx, by, bz):
            s = T.alloc_shared((bm, bn), dtype)
            T.copy(A[bz, bx * bm, by * bn], s)
            for i, j in T.Parallel(bm, bn):
                value = s[i, j]
                T.atomic_add(B[bx * bm + i, by * bn + j + offset], value)

    return main


def tile_add(N, threads, order, dtype="float16"):
    """A tile add from global memory with a memory order (TileLang's memory-order test's kernel)."""
    @T.prim_func
    def main(X: T.Tensor((N,), dtype), Out: T.Tensor((N,), dtype)):
        with T.Kernel(1, threads=threads):
            T.atomic_add(Out[0:N], X[0:N], memory_order=order)

    return main


def explicit_lanes(M, N, bm, bn, lanes, dtype="float32"):
    """T.atomic_addx2 / x4 in a T.Parallel body, one call per ``lanes`` columns."""
    addx = T.atomic_addx2 if lanes == 2 else T.atomic_addx4

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, bm), T.ceildiv(N, bn), threads=32) as (bx, by):
            for i, j in T.Parallel(bm, bn // lanes):
                addx(B[bx * bm + i, by * bn + j * lanes], A[bx * bm + i, by * bn + j * lanes])

    return main


def scatter_rows(n, m, dtype="float32"):
    """Each thread adds a row of 4 into the row of ``dst`` its index names (repeats collide)."""
    @T.prim_func
    def main(idx: T.Tensor((n,), "int32"), val: T.Tensor((n, 4), dtype), dst: T.Tensor((m, 4), dtype)):
        with T.Kernel(1, threads=n):
            t = T.get_thread_binding()
            T.atomic_addx4(dst[idx[t], 0:4], val[t, 0:4])

    return main


def body(src: str) -> str:
    return src[src.find("__global__"):]


def _split_k(rng, M, N, K, dtype):
    a = rng.standard_normal((K, M, N)).astype(NP[dtype])
    b = rng.standard_normal((M, N)).astype(NP[dtype])
    return a, b, b.astype(np.float64) + a.astype(np.float64).sum(0)


def _tol(dtype, K):
    return 2e-2 * K if dtype == "float16" else (2e-2 * K if dtype == "bfloat16" else 1e-5 * K)


# -- which runs become vector atomics ------------------------------------------------------------
@pytest.mark.parametrize("dtype, arch, want", [("float32", "sm_90a", "AtomicAddx4("), ("float16", "sm_90a", "AtomicAddx4("),
                                               ("bfloat16", "sm_90a", "AtomicAddx4("), ("float16", "sm_80", "AtomicAddx4("),
                                               ("float32", "sm_80", None), ("bfloat16", "sm_80", None)])
def test_fragment_tile_add_takes_vectors_where_the_arch_has_them(dtype, arch, want):
    src = body(source(fragment_add(128, 128, 2, 64, 64, dtype, dtype), arch))
    if want is None:
        assert "AtomicAddx" not in src and "tl_atomic_add(" in src, src
    else:
        assert want in src and "tl_atomic_add(" not in src, src


def test_parallel_body_takes_the_vector_layout_on_sm90():
    src = body(source(parallel_add(128, 128, 2, 32, 32), "sm_90a"))
    assert src.count("AtomicAddx4(") == 8 and "tl_atomic_add(" not in src, src  # 32x32 / (32 threads x 4)
    assert "AtomicAddx" not in body(source(parallel_add(128, 128, 2, 32, 32), "sm_80"))


@pytest.mark.parametrize("order, order_id", [("relaxed", None), ("acquire", 2), ("release", 3), ("acq_rel", 4),
                                             ("seq_cst", 5)])
def test_tile_add_keeps_its_memory_order(order, order_id):
    src = body(source(tile_add(64, 32, order), "sm_90a"))
    calls = [line.strip() for line in src.splitlines() if "AtomicAddx" in line]
    assert calls, src
    for call in calls:
        if order_id is None:
            assert not re.search(r", \d\);$", call), call
        else:
            assert call.endswith(f", {order_id});"), call


def test_tile_add_leaves_no_thread_idle():
    """64 float32 over 32 threads: pairs (quads would idle half the threads)."""
    assert "AtomicAddx2(" in body(source(tile_add(64, 32, "relaxed", "float32"), "sm_90a"))
    assert "AtomicAddx4(" in body(source(tile_add(256, 32, "relaxed", "float32"), "sm_90a"))


@pytest.mark.parametrize("lanes", [2, 4])
def test_explicit_lanes_merge(lanes):
    src = body(source(explicit_lanes(64, 64, 16, 32, lanes), "sm_90a"))
    assert f"AtomicAddx{lanes}(" in src and "tl_atomic_add(" not in src, src


def test_scatter_rows_merge_under_one_guard():
    src = body(source(scatter_rows(32, 8), "sm_90a"))
    assert src.count("AtomicAddx4(") == 1 and "tl_atomic_add(" not in src, src


def test_unaligned_runs_stay_scalar():
    """Columns shifted by one: no run of 4 (or 2) starts at a multiple of its width."""
    src = body(source(parallel_add(64, 64, 2, 32, 32, offset=1), "sm_90a"))
    assert "AtomicAddx" not in src and "tl_atomic_add(" in src, src


def test_shared_destination_stays_scalar():
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            s = T.alloc_shared((64, 64), "float32")
            acc = T.alloc_fragment((64, 64), "float32")
            T.clear(s)
            T.copy(A, acc)
            T.atomic_add(s, acc)
            T.copy(s, B)

    src = body(source(main, "sm_90a"))
    assert "AtomicAddx" not in src and "tl_atomic_add(" in src


def test_value_reading_the_destination_stays_scalar():
    @T.prim_func
    def main(B: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=32):
            for i, j in T.Parallel(64, 64):
                T.atomic_add(B[i, j], B[i, j] * 2)

    assert "AtomicAddx" not in body(source(main, "sm_90a"))


def test_a_value_reading_another_adds_destination_stays_scalar():
    """Two adds per element, the second's value read from the first's tensor: vectorized, each
    add's run would go out whole before the next add's values are read."""
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=32):
            for i, j in T.Parallel(64, 64):
                T.atomic_add(B[i, j], A[i, j])
                T.atomic_add(C[i, j], B[i, j] * 2)

    assert "AtomicAddx" not in body(source(main, "sm_90a"))


# -- numerics ------------------------------------------------------------------------------------
@settings(max_examples=6, deadline=None)
@given(M=st.integers(1, 90), N=st.integers(1, 100), K=st.integers(1, 3), seed=st.integers(0, 99),
       dtype=st.sampled_from(["float32", "float16", "bfloat16"]), arch=st.sampled_from(["sm_80", "sm_90a"]))
def test_fragment_tile_add_numerics(M, N, K, seed, dtype, arch):
    """Ragged M and N: the runs at a tile's edge go lane by lane, and the guard keeps every
    element past the tensor's end untouched."""
    rng = np.random.default_rng(seed)
    a, b, want = _split_k(rng, M, N, K, dtype)
    func = fragment_add(M, N, K, 32, 64, dtype, dtype)
    got = run(f"cuda:{arch}", func, A=a, B=b.copy())["B"]
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=_tol(dtype, K), atol=_tol(dtype, K))
    if dtype != "bfloat16":  # (the cpu backend takes bfloat16 as torch tensors only)
        oracle = run("cpu", func, A=a, B=b.copy())["B"]
        np.testing.assert_allclose(got.astype(np.float64), oracle.astype(np.float64), rtol=_tol(dtype, K),
                                   atol=_tol(dtype, K))


@pytest.mark.parametrize("src_dtype, dst_dtype", [("float32", "float16"), ("float16", "float32")])
def test_mixed_types_cast_each_lane(src_dtype, dst_dtype):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, 64, 64)).astype(NP[src_dtype])
    b = np.zeros((64, 64), NP[dst_dtype])
    func = fragment_add(64, 64, 2, 64, 64, src_dtype, dst_dtype)
    assert "AtomicAddx" in body(source(func, "sm_90a"))
    got = run("cuda:sm_90a", func, A=a, B=b)["B"]
    np.testing.assert_allclose(got.astype(np.float64), a.astype(np.float64).sum(0), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("offset", [0, 1])
@pytest.mark.parametrize("M, N", [(64, 64), (45, 70)])
def test_parallel_add_numerics(M, N, offset):
    rng = np.random.default_rng(M + N + offset)
    a = rng.standard_normal((3, M, N)).astype(np.float32)
    b = rng.standard_normal((M, N + offset)).astype(np.float32)
    want = b.astype(np.float64)
    want[:, offset:] += a.astype(np.float64).sum(0)
    func = parallel_add(M, N, 3, 32, 32, offset=offset)
    got = run("cuda:sm_90a", func, A=a, B=b.copy())["B"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(run("cpu", func, A=a, B=b.copy())["B"], want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("order", ["relaxed", "release", "seq_cst"])
@pytest.mark.parametrize("dtype, N", [("float16", 64), ("float32", 256), ("float32", 40)])
def test_tile_add_numerics(order, dtype, N):
    rng = np.random.default_rng(N)
    x = rng.standard_normal(N).astype(NP[dtype])
    out = rng.standard_normal(N).astype(NP[dtype])
    got = run("cuda:sm_90a", tile_add(N, 32, order, dtype), X=x, Out=out.copy())["Out"]
    np.testing.assert_allclose(got.astype(np.float64), out.astype(np.float64) + x, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("lanes", [2, 4])
@pytest.mark.parametrize("M, N", [(64, 64), (50, 60)])
def test_explicit_lanes_numerics(lanes, M, N):
    rng = np.random.default_rng(lanes + M)
    a = rng.standard_normal((M, N)).astype(np.float32)
    b = rng.standard_normal((M, N)).astype(np.float32)
    got = run("cuda:sm_90a", explicit_lanes(M, N, 16, 32, lanes), A=a, B=b.copy())["B"]
    np.testing.assert_allclose(got, b.astype(np.float64) + a, rtol=1e-6, atol=1e-6)


def test_scatter_rows_numerics():
    """32 threads into 8 rows: every row's adds collide, each lane's still counted once."""
    rng = np.random.default_rng(5)
    idx = rng.integers(0, 8, 32).astype(np.int32)
    idx[3] = 9  # past the end: skipped
    val = rng.standard_normal((32, 4)).astype(np.float32)
    want = np.zeros((8, 4))
    np.add.at(want, idx[idx < 8], val[idx < 8].astype(np.float64))
    got = run("cuda:sm_90a", scatter_rows(32, 8), idx=idx, val=val, dst=np.zeros((8, 4), np.float32))["dst"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_vector_atomic_adds_compile(arch, tmp_path):
    """Every helper (x2 and x4; float16, bfloat16, float32; with and without an order) through nvcc."""
    kernels = [fragment_add(64, 64, 2, 64, 64, t, t) for t in ("float32", "float16", "bfloat16")]
    kernels += [tile_add(64, 32, "release", "float16"), tile_add(256, 32, "acq_rel", "float32"),
                tile_add(64, 32, "relaxed", "float32"), tile_add(64, 16, "relaxed", "bfloat16"),
                explicit_lanes(64, 64, 16, 32, 2, "float16")]
    found = set()
    for i, func in enumerate(kernels):
        src = compiles(func, arch, tmp_path / str(i))
        found |= {name for name in ("AtomicAddx2(", "AtomicAddx4(") if name in body(src)}
    assert found == {"AtomicAddx2(", "AtomicAddx4("}, found
