"""TileLang's explicit vector accesses (T.ldg32/64/128/256, T.stg*, T.lds*, T.sts*) on every
reference path: the bits they move, predicated loads reading zeros and predicated stores writing
nothing, element types narrower than the access, 2-D tensors, and the checks the GPU backends add
(alignment of indices bound earlier in the kernel, Metal's 16-byte vectors)."""

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core.errors import LoweringError
from tilelang_core.testing.oracle import PATHS, lower, run

RNG = np.random.default_rng(11)


def global_roundtrip(dtype, N=128):
    per16 = 16 // np.dtype(dtype).itemsize  # elements in 16 bytes

    @T.prim_func
    def kernel(X: T.Tensor((N,), dtype), Y: T.Tensor((N,), dtype), B: T.Tensor((N // per16 * 4,), "int32")):
        with T.Kernel(N // (4 * per16), threads=4) as b:
            tx = T.get_thread_binding()
            base = (b * 4 + tx) * per16  # a name bound in the kernel: its alignment is proved at lowering
            bits = T.ldg128(X[base:base + per16], pred=(b + tx) % 3 != 0)
            T.stg128(Y[base:base + per16], bits, pred=tx != 2)
            B[(b * 4 + tx) * 4] = T.reinterpret(T.ldg32(X[base]), "int32")

    return kernel


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_global_loads_and_stores_move_bits(path, dtype):
    N = 128
    per16 = 16 // np.dtype(dtype).itemsize
    x = RNG.standard_normal(N).astype(dtype)
    y = np.full(N, 7, dtype)
    out = run(path, global_roundtrip(dtype), X=x, Y=y, B=np.zeros(N // per16 * 4, np.int32))
    expected = np.full(N, 7, dtype)
    for chunk in range(N // per16):
        b, tx = divmod(chunk, 4)
        if tx != 2:
            part = slice(chunk * per16, (chunk + 1) * per16)
            expected[part] = x[part] if (b + tx) % 3 else 0
    np.testing.assert_array_equal(out["Y"], expected)
    words = out["B"][::4]
    np.testing.assert_array_equal(words, [x[c * per16:].view(np.int32)[0] for c in range(N // per16)])


@pytest.mark.parametrize("path", PATHS)
def test_shared_loads_and_stores(path):
    N = 64

    @T.prim_func
    def kernel(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=16):
            tx = T.get_thread_binding()
            S = T.alloc_shared((N,), "float32")
            T.sts128(S[tx * 4:tx * 4 + 4], T.ldg128(X[tx * 4:tx * 4 + 4]))
            T.sync_threads()
            # read back a neighbour's words: a race-free exchange through shared memory
            other = (tx + 5) % 16
            T.stg64(Y[tx * 4:tx * 4 + 2], T.lds64(S[other * 4:other * 4 + 2]))
            T.stg32(Y[tx * 4 + 2], T.lds32(S[other * 4 + 2]))
            T.stg32(Y[tx * 4 + 3], T.lds32(S[other * 4 + 3]))

    x = RNG.standard_normal(N).astype(np.float32)
    out = run(path, kernel, X=x, Y=np.zeros(N, np.float32))
    np.testing.assert_array_equal(out["Y"], x.reshape(16, 4)[(np.arange(16) + 5) % 16].reshape(-1))


@pytest.mark.parametrize("path", [p for p in PATHS if not p.startswith("metal")])
def test_256_bit_accesses_of_a_2d_tensor(path):
    @T.prim_func
    def kernel(X: T.Tensor((3, 32), "float32"), Y: T.Tensor((3, 32), "float32")):
        with T.Kernel(3, threads=4) as b:
            tx = T.get_thread_binding()
            T.stg256(Y[b, tx * 8:tx * 8 + 8], T.ldg256(X[b, tx * 8:tx * 8 + 8], pred=(b + tx) % 3 != 0))

    x = RNG.standard_normal((3, 32)).astype(np.float32)
    out = run(path, kernel, X=x, Y=np.full((3, 32), 9, np.float32))
    expected = x.copy()
    for b in range(3):
        for tx in range(4):
            if (b + tx) % 3 == 0:
                expected[b, tx * 8:tx * 8 + 8] = 0
    np.testing.assert_array_equal(out["Y"], expected)


def test_256_bit_accesses_are_refused_on_metal():
    @T.prim_func
    def kernel(X: T.Tensor((32,), "float32"), Y: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=4):
            tx = T.get_thread_binding()
            T.stg256(Y[tx * 8:tx * 8 + 8], T.ldg256(X[tx * 8:tx * 8 + 8]))

    with pytest.raises(LoweringError, match=r"(?s)32-byte vector access .*metal backend's vectors \(16 bytes\).*"
                                            r"test_vector_access.py:\d+"):
        lower("metal:apple7", kernel)


def test_an_offset_bound_in_the_kernel_that_is_not_aligned_is_refused_at_lowering():
    @T.prim_func
    def kernel(X: T.Tensor((64,), "float32"), Y: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=8):
            tx = T.get_thread_binding()
            base = tx * 6  # 24 bytes apart: not 16-byte aligned
            T.stg128(Y[base:base + 4], T.ldg128(X[base:base + 4]))

    with pytest.raises(LoweringError, match=r"16-byte vector access of [XY]\[base\].*cannot be proved aligned"):
        lower("cuda:sm_80", kernel)


def test_cuda_prints_one_vector_access():
    import tilelang_core as tilelang

    source = tilelang.compile(global_roundtrip("float32"), target="cuda:sm_80").get_kernel_source()
    assert "*(float4*)(X" in source and "*(float4*)(Y" in source and "(*(uint4 *)(&(" in source


@pytest.mark.parametrize("path", PATHS)
def test_tilelangs_slice_store_of_reinterpreted_bits(path):
    """TileLang's own form: ``Y[i:i + 4] = T.reinterpret(T.ldg128(X[i:i + 4], pred=...), T.float32x4)``."""
    @T.prim_func
    def kernel(X: T.Tensor((128,), "float32"), Y: T.Tensor((128,), "float32")):
        with T.Kernel(32, threads=32) as pid:
            Y[pid * 4:pid * 4 + 4] = T.reinterpret(T.ldg128(X[pid * 4:pid * 4 + 4], pred=pid < 16), T.float32x4)

    x = RNG.standard_normal(128).astype(np.float32)
    out = run(path, kernel, X=x, Y=np.full(128, 5, np.float32))
    np.testing.assert_array_equal(out["Y"], np.where(np.arange(128) < 64, x, 0))
