"""``T.annotate_layout`` with ``T.Layout`` on a global tensor (TileLang's FlashAttention-backward
dQ trick): elements live at the layout's offsets, every access goes through it, and a second
kernel annotated alike reads them back. On every reference path, ragged tiles included."""

import numpy as np
import pytest

import tilelang_core as tilelang
import tilelang_core.language as T
from tilelang_core import FrontendError
from tilelang_core.testing.oracle import PATHS, run


def dq_layout(dQ):
    return T.Layout(dQ.shape, lambda b, l, h, d: [b, l // 8, h, d // 8, d % 2, 4 * (l % 8) + (d % 8) // 2])


def kernels(B, L, H, D, bN):
    shape = [B, L, H, D]

    @T.prim_func
    def accumulate(X: T.Tensor(shape, "float32"), dQ: T.Tensor(shape, "float32")):
        with T.Kernel(H, T.ceildiv(L, bN), B, threads=64) as (bx, by, bz):
            dq = T.alloc_fragment((bN, D), "float32")
            T.annotate_layout({dQ: dq_layout(dQ)})
            T.copy(X[bz, by * bN:(by + 1) * bN, bx, :], dq)
            for i, j in T.Parallel(bN, D):
                T.atomic_add(dQ[bz, by * bN + i, bx, j], dq[i, j])

    @T.prim_func
    def unpermute(dQ: T.Tensor(shape, "float32"), Out: T.Tensor(shape, "float16")):
        with T.Kernel(T.ceildiv(L, bN), H, B, threads=64) as (bx, by, bz):
            T.annotate_layout({dQ: dq_layout(dQ)})
            T.copy(dQ[bz, bx * bN:(bx + 1) * bN, by, :], Out[bz, bx * bN:(bx + 1) * bN, by, :])

    return accumulate, unpermute


def physical(layout, flat, shape):
    out = np.empty(shape, flat.dtype)
    for idx in np.ndindex(*shape):
        out[idx] = flat[layout.offset(*idx)]
    return out


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("bN", [16, 24])  # 24: the last tile overhangs L
def test_elements_live_at_the_layouts_offsets_and_read_back(path, bN):
    B, L, H, D = 1, 64, 2, 32
    shape = (B, L, H, D)
    accumulate, unpermute = kernels(B, L, H, D, bN)
    rng = np.random.default_rng(bN)
    x = rng.standard_normal(shape).astype(np.float32)
    dq = np.zeros(shape, np.float32)
    run(path, accumulate, X=x, dQ=dq)
    run(path, accumulate, X=x, dQ=dq)  # atomics: twice is 2x
    layout = dq_layout(type("buf", (), {"shape": shape})())
    np.testing.assert_allclose(physical(layout, dq.reshape(-1), shape), 2 * x, rtol=1e-6)
    assert not np.allclose(dq, 2 * x)  # the storage really is permuted
    out = np.full(shape, np.nan, np.float16)
    run(path, unpermute, dQ=dq, Out=out)
    np.testing.assert_allclose(out.astype(np.float64), 2 * x.astype(np.float64), rtol=2e-3, atol=2e-3)


def test_compiles_for_hopper():
    accumulate, unpermute = kernels(1, 64, 2, 32, 16)
    for f in (accumulate, unpermute):
        assert "__global__" in tilelang.compile(f, target="cuda:sm_90a").get_kernel_source()


def test_layout_that_leaves_the_tensor_is_refused():
    with pytest.raises(FrontendError, match="outside the tensor"):
        kernels(1, 60, 2, 32, 16)  # 60 rows: l // 8 spans 8 row groups, 64 rows' worth


def test_other_tile_ops_on_an_annotated_tensor_are_refused():
    with pytest.raises(FrontendError, match="annotated layout, is not supported"):
        @T.prim_func
        def fill(dQ: T.Tensor((1, 64, 2, 32), "float32")):
            with T.Kernel(1, threads=64):
                T.annotate_layout({dQ: dq_layout(dQ)})
                T.fill(dQ[0, 0:64, 0, 0:32], 1.0)


def test_multi_dimensional_layout_output_shape():
    lay = T.Layout((2, 64, 4, 64), lambda b, l, h, d: [b, l // 8, h, d // 8, d % 2, 4 * (l % 8) + (d % 8) // 2])
    assert lay.output_shape == (2, 8, 4, 8, 2, 32)
    assert lay.is_bijective()


def test_shared_access_past_the_buffer_is_refused():
    # a shared buffer has neighbours: past its end is someone else's data (fragments are grown
    # instead, tests/language/test_fragment_growth.py)
    with pytest.raises(FrontendError, match=r"sinks has 8 elements there"):
        @T.prim_func
        def sinks_overrun(S: T.Tensor((8,), "float16")):
            with T.Kernel(1, 8, threads=128) as (bx, by):
                sinks = T.alloc_shared([8], "float16")
                for i in T.Parallel(64):
                    sinks[i] = S[by]
