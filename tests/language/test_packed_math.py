"""TileLang's packed two-lane math (T.add2 .. T.abs2; DeepSeek's quantization kernels take the
absolute maximum of bfloat16 pairs with them) and the scalar T.copysign family, against numpy in
float64 on every reference path; wrong dtypes are refused."""

import numpy as np
import pytest

import tilelang_core.language as T
from tilelang_core.testing.oracle import PATHS, run

OPS = {
    "add2": (lambda x, y, z: T.add2(x, y), lambda x, y, z: x + y),
    "sub2": (lambda x, y, z: T.sub2(x, y), lambda x, y, z: x - y),
    "mul2": (lambda x, y, z: T.mul2(x, y), lambda x, y, z: x * y),
    "fma2": (lambda x, y, z: T.fma2(x, y, z), lambda x, y, z: x * y + z),
    "max2": (lambda x, y, z: T.max2(x, y), lambda x, y, z: np.maximum(x, y)),
    "min2": (lambda x, y, z: T.min2(x, y), lambda x, y, z: np.minimum(x, y)),
    "abs2": (lambda x, y, z: T.abs2(x), lambda x, y, z: np.abs(x)),
}


def packed(op, dtype, n=8):
    build = OPS[op][0]
    pair = f"{dtype}x2"

    @T.prim_func
    def main(X: T.Tensor((n, 2), dtype), Y: T.Tensor((n, 2), dtype), Z: T.Tensor((n, 2), dtype),
             O: T.Tensor((n, 2), dtype)):
        with T.Kernel(1, threads=n):
            t = T.get_thread_binding()
            x = T.dtype(pair)(X[t, 0], X[t, 1])
            y = T.dtype(pair)(Y[t, 0], Y[t, 1])
            z = T.dtype(pair)(Z[t, 0], Z[t, 1])
            r = build(x, y, z)
            O[t, 0] = T.extract_lane(r, 0)
            O[t, 1] = T.extract_lane(r, 1)

    return main


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("op", sorted(OPS))
def test_packed_ops_work_lane_by_lane(path, op):
    rng = np.random.default_rng(len(op))
    x, y, z = (rng.standard_normal((8, 2)).astype(np.float32) for _ in range(3))
    out = run(path, packed(op, "float32"), X=x, Y=y, Z=z, O=np.zeros((8, 2), np.float32))["O"]
    want = OPS[op][1](x.astype(np.float64), y.astype(np.float64), z.astype(np.float64))
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("path", ["cpu", "cuda:sm_80"])
def test_half_pairs(path):
    x = np.random.default_rng(2).standard_normal((8, 2)).astype(np.float16)
    out = run(path, packed("abs2", "float16"), X=x, Y=x, Z=x, O=np.zeros((8, 2), np.float16))["O"]
    np.testing.assert_array_equal(out, np.abs(x))


def test_unpacked_values_are_refused():
    with pytest.raises(Exception, match="float32x2, bfloat16x2, float16x2"):
        @T.prim_func
        def main(A: T.Tensor((2,), T.float32)):
            with T.Kernel(1, threads=1):
                A[0] = T.max2(A[0], A[1])


@pytest.mark.parametrize("path", PATHS)
def test_copysign_hypot_ldexp(path):
    @T.prim_func
    def main(A: T.Tensor((8,), T.float32), B: T.Tensor((8,), T.float32), O: T.Tensor((3, 8), T.float32)):
        with T.Kernel(1, threads=8):
            t = T.get_thread_binding()
            O[0, t] = T.copysign(A[t], B[t])
            O[1, t] = T.hypot(A[t], B[t])
            O[2, t] = T.ldexp(A[t], 3)

    rng = np.random.default_rng(4)
    a, b = rng.standard_normal(8).astype(np.float32), rng.standard_normal(8).astype(np.float32)
    out = run(path, main, A=a, B=b, O=np.zeros((3, 8), np.float32))["O"]
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    np.testing.assert_allclose(out, [np.copysign(a64, b64), np.hypot(a64, b64), a64 * 8], rtol=1e-6)
