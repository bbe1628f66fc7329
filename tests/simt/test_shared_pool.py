"""Shared memory pooling with reuse (simt/transform/shared_pool.py): buffers whose lifetimes do not
overlap share bytes, across dtypes (TileLang fits its MLA decoding and GQA backward kernels in the
H200's 227 KB so), with a barrier where bytes change hands; the reductions' cross-warp
workspaces share bytes with one another. Generated kernels on cpu and every SIMT interpreter
against float64, and the placement itself."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from tvm import tirx

import tilelang_core.language as T
from tilelang_core.simt.transform.shared_pool import pool_shared
from tilelang_core.testing.oracle import PATHS, lower, run

DTYPES = ("float16", "float32", "int32")


def phases(shapes, dtypes, threads):
    """Phase k copies X_k into a shared tile of its own dtype, then adds it (as float32) into an
    accumulator: the tiles of different phases are never live together."""
    rows, cols = shapes[0]

    @T.prim_func
    def main(X0: T.Tensor(shapes[0], dtypes[0]), X1: T.Tensor(shapes[1], dtypes[1]),
             X2: T.Tensor(shapes[2], dtypes[2]), Out: T.Tensor((rows, cols), "float32")):
        with T.Kernel(1, threads=threads):
            acc = T.alloc_fragment((rows, cols), "float32")
            s0 = T.alloc_shared(shapes[0], dtypes[0])
            s1 = T.alloc_shared(shapes[1], dtypes[1])
            s2 = T.alloc_shared(shapes[2], dtypes[2])
            T.clear(acc)
            T.copy(X0, s0)
            for i, j in T.Parallel(rows, cols):
                acc[i, j] += T.cast(s0[i, j], "float32")
            T.copy(X1, s1)
            for i, j in T.Parallel(rows, cols):
                acc[i, j] += T.cast(s1[i % shapes[1][0], j % shapes[1][1]], "float32") * 2.0
            T.copy(X2, s2)
            for i, j in T.Parallel(rows, cols):
                acc[i, j] += T.cast(s2[i % shapes[2][0], j % shapes[2][1]], "float32") * 3.0
            T.copy(acc, Out)

    return main


def _array(rng, shape, dtype):
    if dtype == "int32":
        return rng.integers(-50, 50, shape).astype(np.int32)
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=3, deadline=None)
@given(rows=st.sampled_from([4, 8, 16]), cols=st.sampled_from([8, 32]),
       dtypes=st.tuples(*[st.sampled_from(DTYPES)] * 3), small=st.booleans(),
       threads=st.sampled_from([32, 64]), seed=st.integers(0, 999))
def test_tiles_of_successive_phases_share_bytes_and_compute_right(path, rows, cols, dtypes, small, threads, seed):
    shapes = [(rows, cols), (max(1, rows // 2), cols) if small else (rows, cols), (rows, max(1, cols // 4))]
    rng = np.random.default_rng(seed)
    xs = [_array(rng, s, d) for s, d in zip(shapes, dtypes)]
    out = run(path, phases(shapes, dtypes, threads), X0=xs[0], X1=xs[1], X2=xs[2],
              Out=np.full((rows, cols), np.nan, np.float32))
    i, j = np.indices((rows, cols))
    ref = xs[0].astype(np.float64) + 2 * xs[1].astype(np.float64)[i % shapes[1][0], j % shapes[1][1]] \
        + 3 * xs[2].astype(np.float64)[i % shapes[2][0], j % shapes[2][1]]
    np.testing.assert_allclose(out["Out"], ref, rtol=1e-5, atol=1e-5)
    if path != "cpu":
        pools = [str(line) for line in lower(path, phases(shapes, dtypes, threads)).script().splitlines()
                 if '"uint8"' in line and "alloc" in line]
        biggest = max(int(np.prod(s)) * np.dtype(d).itemsize for s, d in zip(shapes, dtypes))
        assert len(pools) == 1 and f"(({(biggest + 15) // 16 * 16},)" in pools[0].replace(" ", ""), pools


def _shared(name, n, dtype="float32"):
    return tirx.decl_buffer((n,), dtype, name=name, scope="shared.dyn")


def _use(buf):
    return tirx.BufferStore(buf, tirx.const(0, str(buf.ty.dtype)), [0])


def _layout(buf):
    from tilelang_core.layout import Layout

    return Layout.row_major(tuple(int(s) for s in buf.ty.shape)), int(buf.ty.shape[0])


def test_placement_reuses_dead_bytes_and_puts_a_barrier_where_they_change_hands():
    a, b, c = _shared("a", 256), _shared("b", 64, "float16"), _shared("c", 128)
    body = tirx.SeqStmt([_use(a), _use(b), _use(a), _use(c)])  # a, b live together; c after both
    placed, new_body, pool, decls = pool_shared([a, b, c], body, _layout, {})
    bytes_of = {buf: placed[buf][1] * (4 if str(buf.ty.dtype) == "float32" else 2) for buf in (a, b, c)}
    assert bytes_of[a] != bytes_of[b]  # live together
    assert int(pool.ty.shape[0]) == 1024 + 128  # c fits in a's dead bytes
    seq = list(new_body.seq)
    assert len(seq) == 5 and "tvm_storage_sync" in str(seq[3]) and seq[4].same_as(body.seq[3])
    assert {str(d.buffer.ty.dtype) for d in decls} == {"float32", "float16"}


def test_buffers_live_together_never_share_bytes():
    bufs = [_shared(f"s{k}", 32 * (k + 1)) for k in range(4)]
    body = tirx.SeqStmt([_use(b) for b in bufs] * 2)  # all live until the end
    placed, new_body, pool, _ = pool_shared(bufs, body, _layout, {})
    spans = sorted((placed[b][1] * 4, placed[b][1] * 4 + 128 * (k + 1)) for k, b in enumerate(bufs))
    assert all(hi <= lo for (_, hi), (lo, _) in zip(spans, spans[1:]))
    assert "tvm_storage_sync" not in new_body.script()


def test_reduction_workspaces_share_bytes_inside_one_loop():
    """Two reductions per loop iteration (softmax's max and sum): their cross-warp workspaces take
    the same bytes (each use is written, barrier, read, barrier)."""
    @T.prim_func
    def main(X: T.Tensor((2, 256), "float32"), M: T.Tensor((2,), "float32"), S: T.Tensor((2,), "float32")):
        with T.Kernel(1, threads=128):
            x = T.alloc_fragment((2, 256), "float32")  # a row spans two warps
            mx = T.alloc_fragment((2,), "float32")
            sm = T.alloc_fragment((2,), "float32")
            for _ in T.serial(2):
                T.copy(X, x)
                T.reduce_max(x, mx, dim=1)
                T.reduce_sum(x, sm, dim=1)
            T.copy(mx, M)
            T.copy(sm, S)

    text = lower("cuda:sm_80", main).script()
    x = np.random.default_rng(0).standard_normal((2, 256)).astype(np.float32)
    for path in PATHS:
        out = run(path, main, X=x, M=np.zeros(2, np.float32), S=np.zeros(2, np.float32))
        np.testing.assert_allclose(out["M"], x.max(1), rtol=1e-6)
        np.testing.assert_allclose(out["S"], x.astype(np.float64).sum(1), rtol=1e-5, atol=1e-5)
    (pool,) = [ln for ln in text.splitlines() if '"uint8"' in ln]
    assert "(512," in pool, pool  # one 128-float workspace, not two


def test_a_buffer_never_used_takes_no_bytes_and_no_barrier():
    """TileLang's mxfp4 GEMM example allocates a bias tile it uses only with a bias; counted for the
    whole kernel it pushed the kernel past the H200's 227 KB per block."""
    a, b, unused = _shared("a", 256), _shared("b", 128), _shared("unused", 4096)
    body = tirx.SeqStmt([_use(a), _use(b)])  # b may take a's bytes after it; unused never appears
    placed, new_body, pool, _ = pool_shared([a, b, unused], body, _layout, {})
    assert int(pool.ty.shape[0]) == 1024  # a's bytes, which b takes after it
    assert "tvm_storage_sync" in new_body.script()  # (between a and b; none for the unused tile)
    assert new_body.script().count("tvm_storage_sync") == 1


def test_an_unused_tile_does_not_count_against_the_shared_memory_limit():
    """A 128 KB tile the kernel uses and a 128 KB one it never touches compile for sm_90a (227 KB)."""
    from tilelang_core.jit import compile as compile_kernel

    @T.prim_func
    def main(A: T.Tensor((256, 256), "float16"), B: T.Tensor((256, 256), "float16")):
        with T.Kernel(1, threads=128):
            used = T.alloc_shared((256, 256), "float16")
            spare = T.alloc_shared((256, 256), "float16")  # noqa: F841 - allocated, never used
            T.copy(A, used)
            T.copy(used, B)

    kernel = compile_kernel(main, target="cuda:sm_90a")  # was: needs 262144 bytes, more than 232448
    assert "extern __shared__" in kernel.get_kernel_source()


def test_no_buffer_ever_used_means_no_pool():
    """TVM's CUDA printer refuses a dynamic shared array of 0 bytes (TileKernels' sf_only per-token
    cast allocates its output tile and never touches it)."""
    unused = _shared("unused", 4096)
    placed, new_body, pool, decls = pool_shared([unused], _use(_shared("other", 4)), _layout, {})
    assert pool is None and decls == [] and unused in placed


def unused_output_tile(rows=8, cols=64):
    """Row absmax with an output staging tile the kernel allocates and never touches (TileKernels'
    per_token_cast with sf_only=True)."""
    @T.prim_func
    def main(X: T.Tensor((rows, cols), "float32"), S: T.Tensor((rows,), "float32")):
        with T.Kernel(1, threads=128):
            x = T.alloc_fragment((rows, cols), "float32")
            amax = T.alloc_fragment((rows,), "float32")
            staged = T.alloc_shared((rows, cols), "float16")  # noqa: F841 - never used
            T.copy(X, x)
            T.reduce_absmax(x, amax, dim=1)
            T.copy(amax, S)

    return main


@pytest.mark.parametrize("path", PATHS)
def test_a_kernel_whose_only_shared_tile_is_unused_computes_right(path):
    x = np.random.default_rng(3).standard_normal((8, 64)).astype(np.float32)
    out = run(path, unused_output_tile(), X=x, S=np.full(8, np.nan, np.float32))
    np.testing.assert_allclose(out["S"], np.abs(x.astype(np.float64)).max(1), rtol=0)
    if path != "cpu":
        assert '"uint8"' not in lower(path, unused_output_tile()).script()
