"""4-bit tensors (``T.float4_e2m1fn``, ``T.int4``) bound to their bytes, two elements a byte, as in
TileLang (transform/packed_subbyte.py): shapes and strides from uint8 / int8 / float4_e2m1fn_x2
tensors, element copies, decoding by T.cast, encoding by T.cast into the 4-bit dtype (round to
nearest even, saturating), on every reference path against numpy; CUDA source built by nvcc."""

import numpy as np
import pytest
import torch

import tilelang_core as tilelang
import tilelang_core.language as T
from tilelang_core.errors import FrontendError
from tilelang_core.testing.oracle import PATHS, run

RNG = np.random.default_rng(17)
E2M1 = np.array([0, .5, 1, 1.5, 2, 3, 4, 6, -0., -.5, -1, -1.5, -2, -3, -4, -6])


def unpack(raw: np.ndarray, kind: str) -> np.ndarray:
    """Logical values of packed bytes (even element in the low nibble)."""
    u = raw.view(np.uint8).astype(np.int64)
    codes = np.stack([u & 15, u >> 4], -1).reshape(*raw.shape[:-1], 2 * raw.shape[-1])
    return E2M1[codes] if kind == "float4_e2m1fn" else ((codes ^ 8) - 8).astype(np.float64)


def encode_e2m1(x: np.ndarray) -> np.ndarray:
    """Nearest e2m1 code, ties to the even code, saturating at 6."""
    a = np.abs(x)
    bounds = [(0.25, True), (0.75, False), (1.25, True), (1.75, False), (2.5, True), (3.5, False), (5.0, True)]
    code = np.full(x.shape, 7)
    for c, (b, inclusive) in reversed(list(enumerate(bounds))):
        code = np.where(a <= b if inclusive else a < b, c, code)
    return code | np.where(np.signbit(x) & ~np.isnan(x), 8, 0)  # (-0.0 keeps its sign, as CUDA's conversion)


def roundtrip(M, N, kind):
    """dst = src (nibble copies), out = float(src), q = kind(out * 0.5 + shift)."""
    @T.prim_func
    def kernel(src: T.Tensor((M, N), kind), dst: T.Tensor((M, N), kind), out: T.Tensor((M, N), T.float32),
               q: T.Tensor((M, N), kind), shift: T.float32):
        with T.Kernel(M, threads=32) as i:
            for j in T.serial(N):
                dst[i, j] = src[i, j]
                out[i, j] = T.cast(src[i, j], T.float32)
                q[i, j] = T.cast(out[i, j] * 0.5 + shift, kind)

    return kernel


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("kind", ["float4_e2m1fn", "int4"])
@pytest.mark.parametrize(("M", "N"), [(1, 2), (3, 10)])
def test_copy_decode_encode(path, kind, M, N):
    src = RNG.integers(-128, 128, (M, N // 2)).astype(np.int8)
    dst = np.zeros_like(src)
    q = np.zeros_like(src)
    out = np.zeros((M, N), np.float32)
    shift = 0.25 if kind == "float4_e2m1fn" else 1.0
    run(path, roundtrip(M, N, kind), src=src, dst=dst, out=out, q=q, shift=shift)
    np.testing.assert_array_equal(dst, src)
    logical = unpack(src, kind)
    np.testing.assert_array_equal(out, logical)
    x = logical * 0.5 + shift
    codes = encode_e2m1(x) if kind == "float4_e2m1fn" else (np.trunc(x).astype(np.int64) & 15)
    expect = (codes[..., 0::2] | (codes[..., 1::2] << 4)).astype(np.uint8).view(np.int8)
    np.testing.assert_array_equal(q, expect)


def test_encoding_ties_and_saturation():
    xs = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 7.0, -0.3, -100.0, -0.0, 4.9], np.float32)

    @T.prim_func
    def enc(X: T.Tensor((12,), T.float32), Q: T.Tensor((12,), T.float4_e2m1fn)):
        with T.Kernel(1, threads=1):
            for j in T.serial(12):
                Q[j] = T.cast(X[j], T.float4_e2m1fn)

    q = torch.zeros(6, dtype=torch.uint8)
    tilelang.compile(enc, target="cpu")(torch.from_numpy(xs), q)
    got = unpack(q.numpy(), "float4_e2m1fn")
    np.testing.assert_array_equal(got, [0, 1, 1, 2, 2, 4, 4, 6, -0.5, -6, -0.0, 4])
    assert q.numpy()[5] & 15 == 8  # -0.0 is the negative zero code (TileKernels' fp4 casts compare bytes)


def encoder(n):
    @T.prim_func
    def enc(X: T.Tensor((n,), T.float32), Q: T.Tensor((n,), T.float4_e2m1fn)):
        with T.Kernel(n // 64, threads=32) as b:
            q = T.alloc_fragment((64,), T.float4_e2m1fn)
            for t in T.Parallel(64):
                q[t] = T.cast(X[b * 64 + t], T.float4_e2m1fn)
            T.copy(q, Q[b * 64])

    return enc


def float_cases(n: int, seed: int) -> np.ndarray:
    """Every midpoint of the e2m1 grid and its float32 neighbours, both signs, zeros, infinities,
    NaNs, denormals, and random floats over the exponents around the grid."""
    mids = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 6.0, 0.5, 1.0, 1.5, 2, 3, 4], np.float32)
    near = np.concatenate([mids, np.nextafter(mids, np.float32(0)), np.nextafter(mids, np.float32(np.inf))])
    special = np.array([0.0, np.inf, np.nan, 1e-45, 1e-39, 7.0, 6.5, 1e30], np.float32)
    rng = np.random.default_rng(seed)
    rand = (rng.standard_normal(n) * np.exp2(rng.integers(-6, 5, n))).astype(np.float32)
    out = np.concatenate([near, -near, special, -special, rand])[:n]
    return out


@pytest.mark.parametrize("path", PATHS)
def test_encoding_matches_round_to_nearest_even_on_generated_floats(path):
    n = 512
    x = float_cases(n, seed=len(path))
    q = np.zeros(n // 2, np.int8)
    run(path, encoder(n), X=x, Q=q)
    u = q.view(np.uint8).astype(np.int64)
    got = np.stack([u & 15, u >> 4], -1).reshape(n)
    np.testing.assert_array_equal(got, encode_e2m1(x))


def test_shapes_and_strides_bind_from_bytes():
    """TileLang's binding rules: logical last dim = 2 x bytes, other strides = 2 x byte strides,
    from uint8, int8 and float4_e2m1fn_x2 tensors alike."""
    @tilelang.jit(target="cpu")
    def first_column(x):
        m = T.dynamic("m")
        n = T.dynamic("n")
        s = T.dynamic("s")
        x: T.StridedTensor[[m, n], [s, 1], T.float4_e2m1fn]
        y = T.empty([m, 2], T.float32)
        with T.Kernel(m, threads=1) as i:
            y[i, 0] = T.cast(x[i, n - 1], T.float32)
            y[i, 1] = T.cast(s + n, T.float32)
        return y

    raw = torch.randint(0, 256, (8, 6), dtype=torch.uint8)
    logical = unpack(raw.numpy(), "float4_e2m1fn")
    for t, rows in ((raw, slice(None)), (raw.view(torch.int8), slice(None)),
                    (raw.view(torch.float4_e2m1fn_x2), slice(None)), (raw[::2], slice(None, None, 2))):
        y = first_column(t).numpy()
        np.testing.assert_array_equal(y[:, 0], logical[rows, -1])
        stride = t.stride(0) * 2
        assert (y[:, 1] == stride + 12).all()


def test_a_float4_output_comes_back_as_float4_pairs():
    @T.prim_func
    def halves(A):
        A: T.Tensor[[4, 8], T.float32]
        B = T.empty([4, 8], T.float4_e2m1fn)
        with T.Kernel(4, threads=1) as i:
            for j in T.serial(8):
                B[i, j] = T.cast(A[i, j], T.float4_e2m1fn)
        return B

    a = torch.tensor([[0.5 * j for j in range(8)]] * 4)
    b = tilelang.compile(halves, target="cpu")(a)
    assert b.dtype == torch.float4_e2m1fn_x2 and b.shape == (4, 4)
    np.testing.assert_array_equal(unpack(b.view(torch.uint8).numpy(), "float4_e2m1fn"),
                                  E2M1[encode_e2m1(a.numpy())])  # 2.5 -> 2, 3.5 -> 4


def test_what_cannot_be_packed_is_refused():
    with pytest.raises(FrontendError, match="odd"):
        @T.prim_func
        def odd(A: T.Tensor((4, 7), T.float4_e2m1fn), B: T.Tensor((4,), T.float32)):
            with T.Kernel(4, threads=1) as i:
                B[i] = T.cast(A[i, 0], T.float32)

    with pytest.raises(FrontendError, match="two of them would write the two halves"):
        @T.prim_func
        def racing(A: T.Tensor((64,), T.float32), B: T.Tensor((64,), T.float4_e2m1fn)):
            with T.Kernel(1, threads=64):
                tx = T.get_thread_binding()
                B[tx] = T.cast(A[tx], T.float4_e2m1fn)

    with pytest.raises(FrontendError, match="is used as a value"):
        @T.prim_func
        def arithmetic(A: T.Tensor((2, 4), T.float4_e2m1fn), B: T.Tensor((2,), T.float4_e2m1fn)):
            with T.Kernel(1, threads=1):
                v = A[0, 1]
                B[0] = T.cast(T.cast(v, T.float32) * 2.0, T.float4_e2m1fn)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_packed_kernels_compile_for_cuda(arch, tmp_path):
    from test_printer_limits import _cuda_source

    _cuda_source(roundtrip(3, 10, "float4_e2m1fn"), arch, tmp_path)
