"""Fragments indexed by serial loops around a T.Parallel nest (transform/serial_indexed.py):
``db[k, j]`` in ``for k: T.Parallel(j)`` is held by column, the serial dimension in the registers
of the thread running ``j``, as in TileLang. DeepSeek's mHC backward pass writes a reducer so next
to a distributed fragment (refused on CUDA before, "held whole by every thread"). Generated cases
on cpu and every SIMT interpreter against float64, the layouts, and the refusals."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tilelang_core.language as T
from tilelang_core.errors import LayoutError, TileLangError
from tilelang_core.testing.oracle import PATHS, lower, run

THREADS = st.sampled_from([32, 64, 128])


def post_backward(hc, hb, blocks, threads):
    """mHC's post backward, cut down: dc[c] = sum_j d[j] x[c, j] through a legacy reducer written
    in the loop that also accumulates dd[j] = sum_c w[c] x[c, j] (a distributed fragment)."""
    @T.prim_func
    def main(X: T.Tensor((hc, hb * blocks), "float32"), D: T.Tensor((hb * blocks,), "float32"),
             W: T.Tensor((hc,), "float32"), DC: T.Tensor((hc,), "float32"), DD: T.Tensor((hb * blocks,), "float32")):
        with T.Kernel(1, threads=threads):
            x = T.alloc_fragment((hc, hb), "float32")
            d = T.alloc_fragment((hb,), "float32")
            dd = T.alloc_fragment((hb,), "float32")
            w = T.alloc_fragment((hc,), "float32")
            dc = T.alloc_reducer((hc,), "float32", replication="all")
            T.copy(W, w)
            T.clear(dc)
            for b in T.serial(blocks):
                T.copy(X[0, b * hb], x)
                T.copy(D[b * hb], d)
                T.clear(dd)
                for c in T.serial(hc):
                    for j in T.Parallel(hb):
                        dc[c] += d[j] * x[c, j]
                        dd[j] += w[c] * x[c, j]
                T.copy(dd, DD[b * hb])
            T.finalize_reducer(dc)
            T.copy(dc, DC)

    return main


def mixed_rows(hc, hb, threads):
    """out[o, j] = sum_c a[o, c] x[c, j] with every fragment indexed by serial loops (o, c) around
    the nest: nothing in the loop names all of its dims alone, so the default spread decides."""
    @T.prim_func
    def main(A: T.Tensor((hc, hc), "float32"), X: T.Tensor((hc, hb), "float32"), O: T.Tensor((hc, hb), "float32")):
        with T.Kernel(1, threads=threads):
            a = T.alloc_fragment((hc, hc), "float32")
            x = T.alloc_fragment((hc, hb), "float32")
            out = T.alloc_fragment((hc, hb), "float32")
            T.copy(A, a)
            T.copy(X, x)
            T.clear(out)
            for o in T.serial(hc):
                for c in T.serial(hc):
                    for j in T.Parallel(hb):
                        out[o, j] += a[o, c] * x[c, j]
            T.copy(out, O)

    return main


def residual_mix(hc, hb, threads):
    """mHC's multilayer recompute, cut down: new[o, j] = post[o] * y[j] + sum_c comb[c, o] res[c, j],
    the sum a serial loop in the body reading res[c, j] (a read that skips the loop's o)."""
    @T.prim_func
    def main(R: T.Tensor((hc, hb), "float32"), Y: T.Tensor((hb,), "float32"), P: T.Tensor((hc,), "float32"),
             C: T.Tensor((hc, hc), "float32"), N: T.Tensor((hc, hb), "float32")):
        with T.Kernel(1, threads=threads):
            res = T.alloc_fragment((hc, hb), "float32")
            new = T.alloc_fragment((hc, hb), "float32")
            y = T.alloc_fragment((hb,), "float32")
            post = T.alloc_fragment((hc,), "float32")
            comb = T.alloc_fragment((hc, hc), "float32")
            T.copy(R, res)
            T.copy(Y, y)
            T.copy(P, post)
            T.copy(C, comb)
            for o, j in T.Parallel(hc, hb):
                new[o, j] = post[o] * y[j]
                for c in T.serial(hc):
                    new[o, j] += comb[c, o] * res[c, j]
            T.copy(new, N)

    return main


def shifted_serial(hc, hb, threads, extra=1, start=0):
    """y[j] = sum_k x[k - start + extra - 1, j] over start <= k < start + hc: an index of the serial
    loop plus a constant; with extra = 0 the first k reads row -1, before the fragment."""
    @T.prim_func
    def main(X: T.Tensor((hc + 1, hb), "float32"), Y: T.Tensor((hb,), "float32")):
        with T.Kernel(1, threads=threads):
            x = T.alloc_fragment((hc, hb), "float32")
            y = T.alloc_fragment((hb,), "float32")
            T.copy(X[1, 0], x)
            T.clear(y)
            for k in T.serial(start, start + hc):
                for j in T.Parallel(hb):
                    y[j] += x[k - start + extra - 1, j]
            T.copy(y, Y)

    return main


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=3, deadline=None)
@given(hc=st.integers(1, 4), hb=st.sampled_from([32, 64, 96]), blocks=st.integers(1, 3), threads=THREADS,
       seed=st.integers(0, 999))
def test_a_reducer_indexed_by_a_serial_loop_next_to_a_distributed_fragment(path, hc, hb, blocks, threads, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((hc, hb * blocks)).astype(np.float32)
    d = rng.standard_normal(hb * blocks).astype(np.float32)
    w = rng.standard_normal(hc).astype(np.float32)
    out = run(path, post_backward(hc, hb, blocks, threads), X=x, D=d, W=w,
              DC=np.full(hc, np.nan, np.float32), DD=np.full(hb * blocks, np.nan, np.float32))
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(out["DC"], x64 @ d, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(out["DD"], w.astype(np.float64) @ x64, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=3, deadline=None)
@given(hc=st.integers(1, 4), hb=st.sampled_from([16, 64, 128]), threads=THREADS, seed=st.integers(0, 999))
def test_fragments_indexed_only_by_serial_loops_and_the_nest(path, hc, hb, threads, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((hc, hc)).astype(np.float32)
    x = rng.standard_normal((hc, hb)).astype(np.float32)
    out = run(path, mixed_rows(hc, hb, threads), A=a, X=x, O=np.full((hc, hb), np.nan, np.float32))
    np.testing.assert_allclose(out["O"], a.astype(np.float64) @ x, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=3, deadline=None)
@given(hc=st.integers(1, 4), hb=st.sampled_from([32, 64, 512]), threads=THREADS, seed=st.integers(0, 999))
def test_a_read_by_a_serial_loop_of_the_body_that_skips_a_loop_variable(path, hc, hb, threads, seed):
    rng = np.random.default_rng(seed)
    r, y = rng.standard_normal((hc, hb)).astype(np.float32), rng.standard_normal(hb).astype(np.float32)
    p, c = rng.standard_normal(hc).astype(np.float32), rng.standard_normal((hc, hc)).astype(np.float32)
    out = run(path, residual_mix(hc, hb, threads), R=r, Y=y, P=p, C=c, N=np.full((hc, hb), np.nan, np.float32))
    want = np.outer(p, y).astype(np.float64) + c.astype(np.float64).T @ r.astype(np.float64)
    np.testing.assert_allclose(out["N"], want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("start", [0, 2])
def test_a_serial_index_with_a_constant(path, start):
    x = np.random.default_rng(3).standard_normal((4, 64)).astype(np.float32)
    out = run(path, shifted_serial(3, 64, 64, start=start), X=x, Y=np.full(64, np.nan, np.float32))
    np.testing.assert_allclose(out["Y"], x[1:].astype(np.float64).sum(0), rtol=1e-5, atol=1e-5)


def test_the_serial_dimension_stays_in_registers():
    """Each thread holds its columns of x and dc's staging (4 rows x 2 columns of 256 over 128
    threads: 8 registers), not the whole 4 x 256 tile (1024), and no register of a fragment is
    shared."""
    from tilelang_core.transform.layout_inference import infer_layouts

    layouts = {b.name: f for b, f in infer_layouts(post_backward(4, 256, 2, 128), 128).items()}
    assert layouts["x"].local_size == 8 and layouts["x"].replicas == 1
    assert layouts["dc_part0"].local_size == 8
    assert layouts["d"].local_size == 2
    # column j of x lives where d[j] does
    assert all(layouts["x"].thread_of(c, j) == layouts["d"].thread_of(j) for c in range(4) for j in range(0, 256, 7))


def test_a_residual_mix_keeps_columns_in_registers():
    """res and new of the multilayer recompute (4 x 512 over 64 threads) hold 32 registers per
    thread, not 2048 each (a 93 s nvcc compile of a 1.2 MB kernel, likely the H100 run's hang)."""
    from tilelang_core.transform.layout_inference import infer_layouts

    layouts = {b.name: f for b, f in infer_layouts(residual_mix(4, 512, 64), 64).items()}
    assert layouts["res"].local_size == layouts["new"].local_size == 32
    assert all(layouts["res"].thread_of(c, j) == layouts["new"].thread_of(o, j)
               for c in range(4) for o in range(4) for j in range(0, 512, 5))


@pytest.mark.parametrize("path", PATHS[1:])
def test_a_serial_index_before_the_fragment_is_refused(path):
    with pytest.raises((LayoutError, TileLangError), match=r"x\[k - 1, j\].*-1\.\.1"):
        lower(path, shifted_serial(3, 64, 64, extra=0))
