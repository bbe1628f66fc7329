"""4-bit tiles (shared / fragment of T.float4_e2m1fn, T.int4), one element per byte
(transform/subbyte_tiles.py): TileLang's act_quant pattern (floats stored into an fp4 fragment in
T.Parallel, copied to shared, copied to a packed tensor), copies from packed tensors into 4-bit
tiles and out to float tiles, T.fill, ragged rows; every reference path against numpy's
round-to-nearest-even codes; CUDA source built by nvcc; what is not supported refused by name."""

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core.errors import FrontendError
from tilelang_core.testing.oracle import PATHS, run
from test_packed_subbyte import E2M1, encode_e2m1, unpack

RNG = np.random.default_rng(42)


def quantize(M, N, bm=32, group=32, kind="float4_e2m1fn", via_shared=True):
    """Per (row, group) power-of-two scale; q = clamp(x / scale, -6, 6) stored into a 4-bit fragment,
    then (through a shared tile, or straight from the fragment's copy) to the packed tensor."""
    @T.prim_func
    def act_quant(X: T.Tensor((M, N), "float32"), Q: T.Tensor((M, N), kind), S: T.Tensor((M, N // group), "float32")):
        with T.Kernel(T.ceildiv(M, bm), N // group, threads=128) as (bx, by):
            x_s = T.alloc_shared((bm, group), "float32")
            x_f = T.alloc_fragment((bm, group), "float32")
            amax = T.alloc_fragment((bm,), "float32")
            s = T.alloc_fragment((bm,), "float32")
            y_f = T.alloc_fragment((bm, group), kind)
            y_s = T.alloc_shared((bm, group), kind)
            T.copy(X[bx * bm, by * group], x_s)
            T.copy(x_s, x_f)
            T.reduce_absmax(x_f, amax, dim=1)
            for i in T.Parallel(bm):
                s[i] = T.exp2(T.ceil(T.log2(T.max(amax[i], 1e-30) / 6.0)))
            for i, j in T.Parallel(bm, group):
                y_f[i, j] = T.clamp(x_f[i, j] / s[i], -6.0, 6.0)
            for i in T.Parallel(bm):
                S[bx * bm + i, by] = s[i]
            if via_shared:
                T.copy(y_f, y_s)
                T.copy(y_s, Q[bx * bm, by * group])
            else:
                T.copy(y_f, y_s)
                T.copy(y_s[0:bm, 0:group], Q[bx * bm:bx * bm + bm, by * group:by * group + group])

    return act_quant


def reference_codes(x, group):
    M, N = x.shape
    xg = x.astype(np.float64).reshape(M, N // group, group)
    scale = np.exp2(np.ceil(np.log2(np.maximum(np.abs(xg).max(-1), 1e-30) / 6.0)))
    y = np.clip(xg / scale[..., None], -6, 6).reshape(M, N)
    return encode_e2m1(y), scale


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("M,N,group", [(64, 64, 32), (45, 96, 32), (1, 32, 16)])
def test_act_quant_into_a_packed_tensor(path, M, N, group):
    """45 rows: the second row block runs past the tensor (its copy is guarded, byte by byte)."""
    x = RNG.standard_normal((M, N)).astype(np.float32) * 3
    q = np.full((M, N // 2), 0x77, np.int8)  # bytes the kernel must overwrite entirely
    s = np.full((M, N // group), np.nan, np.float32)
    run(path, quantize(M, N, group=group), X=x, Q=q, S=s)
    codes, scale = reference_codes(x, group)
    np.testing.assert_array_equal(s, scale)
    got = q.view(np.uint8).astype(np.int64)
    np.testing.assert_array_equal(np.stack([got & 15, got >> 4], -1).reshape(M, N), codes)


def through_tiles(M, N, kind):
    """A packed tensor into a 4-bit shared tile, to a 4-bit fragment, decoded into a float tile;
    a T.fill'd 4-bit tile written back."""
    @T.prim_func
    def k(P: T.Tensor((M, N), kind), F: T.Tensor((M, N), "float32"), Z: T.Tensor((M, N), kind)):
        with T.Kernel(1, threads=64):
            p_s = T.alloc_shared((M, N), kind)
            p_f = T.alloc_fragment((M, N), kind)
            f = T.alloc_fragment((M, N), "float32")
            z = T.alloc_shared((M, N), kind)
            T.copy(P, p_s)
            T.copy(p_s, p_f)
            T.copy(p_f, f)
            for i, j in T.Parallel(M, N):
                f[i, j] = f[i, j] * 2.0 + T.cast(p_s[i, j], "float32")
            T.copy(f, F)
            T.fill(z, -1.5)
            T.copy(z, Z)

    return k


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("kind", ["float4_e2m1fn", "int4"])
def test_packed_tensor_through_4bit_tiles(path, kind):
    M, N = 16, 32
    p = RNG.integers(-128, 128, (M, N // 2)).astype(np.int8)
    f = np.full((M, N), np.nan, np.float32)
    z = np.zeros((M, N // 2), np.int8)
    run(path, through_tiles(M, N, kind), P=p, F=f, Z=z)
    np.testing.assert_array_equal(f, 3 * unpack(p, kind))
    fill = E2M1[encode_e2m1(np.array([-1.5]))][0] if kind == "float4_e2m1fn" else -1.0
    np.testing.assert_array_equal(unpack(z, kind), np.full((M, N), fill))


def grouped_absmax(M, N, group, kind, dst_dtype="float16"):
    """TileKernels' per-token cast of fp4 input: the 4-bit tile seen through T.reshape as groups,
    reduced with T.reduce_absmax into a float16 tile and with T.reduce_sum into a float32 one."""
    @T.prim_func
    def k(P: T.Tensor((M, N), kind), A: T.Tensor((M, N // group), dst_dtype), S: T.Tensor((M, N // group), "float32")):
        with T.Kernel(1, threads=64):
            p_f = T.alloc_fragment((M, N), kind)
            amax = T.alloc_fragment((M, N // group), dst_dtype)
            total = T.alloc_fragment((M, N // group), "float32")
            T.copy(P, p_f)
            groups = T.reshape(p_f, [M, N // group, group])
            T.reduce_absmax(groups, amax, dim=-1)
            T.reduce_sum(groups, total, dim=2)
            T.copy(amax, A)
            T.copy(total, S)

    return k


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("kind", ["float4_e2m1fn", "int4"])
@pytest.mark.parametrize("M,N,group", [(4, 64, 32), (1, 32, 8)])
def test_a_4bit_tile_reduces_into_a_wider_one(path, kind, M, N, group):
    p = RNG.integers(-128, 128, (M, N // 2)).astype(np.int8)
    a = np.full((M, N // group), np.nan, np.float16)
    s = np.full((M, N // group), np.nan, np.float32)
    run(path, grouped_absmax(M, N, group, kind), P=p, A=a, S=s)
    values = unpack(p, kind).reshape(M, N // group, group)
    np.testing.assert_array_equal(a, np.abs(values).max(-1))  # (exact: every value is a float16)
    np.testing.assert_allclose(s, values.sum(-1), rtol=0, atol=1e-5)


def test_what_4bit_tiles_cannot_do_is_refused():
    with pytest.raises(FrontendError, match="T.gemm on 4-bit tile 'a'"):
        @T.prim_func
        def gemm(A: T.Tensor((16, 16), "float4_e2m1fn"), C: T.Tensor((16, 16), "float32")):
            with T.Kernel(1, threads=128):
                a = T.alloc_shared((16, 16), "float4_e2m1fn")
                b = T.alloc_shared((16, 16), "float4_e2m1fn")
                c = T.alloc_fragment((16, 16), "float32")
                T.copy(A, a)
                T.copy(A, b)
                T.gemm(a, b, c)
                T.copy(c, C)

    with pytest.raises(FrontendError, match="start provably even"):
        @T.prim_func
        def odd_start(A: T.Tensor((4, 16), "float32"), Q: T.Tensor((4, 16), "float4_e2m1fn")):
            with T.Kernel(1, threads=32):
                y = T.alloc_shared((4, 8), "float4_e2m1fn")
                for i, j in T.Parallel(4, 8):
                    y[i, j] = A[i, j]
                T.copy(y, Q[0, 1])

    with pytest.raises(FrontendError, match="is used as a value"):
        @T.prim_func
        def bare(A: T.Tensor((4, 16), "float32")):
            with T.Kernel(1, threads=32):
                y = T.alloc_shared((4, 16), "float4_e2m1fn")
                v = T.alloc_var("float32")
                T.fill(y, 1.0)
                v = y[0, 0] + 1.0
                A[0, 0] = v


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_4bit_tile_kernels_compile_for_cuda(arch, tmp_path):
    from test_printer_limits import _cuda_source

    source = _cuda_source(quantize(70, 128), arch, tmp_path)
    assert "Q" in source
    assert "A" in _cuda_source(grouped_absmax(4, 64, 32, "float4_e2m1fn"), arch, tmp_path / "r")
