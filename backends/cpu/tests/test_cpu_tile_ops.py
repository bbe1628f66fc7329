"""Numerics of each tile op lowered by the cpu backend, against torch in float64."""

from __future__ import annotations

import pytest
import torch

import tilelang_core.language as T
from cpu_harness import assert_close, compile_cpu, rand

REDUCERS = {
    "sum": lambda x, d: x.sum(d),
    "abssum": lambda x, d: x.abs().sum(d),
    "max": lambda x, d: x.amax(d),
    "min": lambda x, d: x.amin(d),
    "absmax": lambda x, d: x.abs().amax(d),
}
COMBINE = {"sum": torch.add, "abssum": torch.add, "max": torch.maximum, "min": torch.minimum,
           "absmax": torch.maximum}


def test_copy_ragged_reads_give_zero_and_writes_are_skipped():
    M, N = 10, 7  # one 16x8 tile overhangs both dims

    @T.prim_func
    def pad_copy(A: T.Tensor((M, N), "float32"), P: T.Tensor((16, 8), "float32"),
                 C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=32) as bx:
            s = T.alloc_shared((16, 8), "float32")
            T.copy(A[bx * 16, 0], s)
            T.copy(s, P)
            for i, j in T.Parallel(16, 8):
                s[i, j] = s[i, j] + 1.0
            T.copy(s, C[bx * 16, 0])

    a = rand((M, N), torch.float32, 1)
    padded, c = torch.full((16, 8), -7.0), torch.zeros(M, N)
    # C is the 10x7 head of a larger allocation: a write past its shape would land in `guard`.
    storage = torch.full((M * N + 64,), -3.0)
    c = storage[: M * N].view(M, N)
    compile_cpu(pad_copy)(a, padded, c)
    expected = torch.zeros(16, 8, dtype=torch.float64)
    expected[:M, :N] = a.double()
    assert_close(padded, expected)
    assert_close(c, a.double() + 1)
    assert torch.all(storage[M * N:] == -3.0)


@pytest.mark.parametrize("src,dst", [(torch.float32, torch.float16), (torch.float16, torch.float32),
                                     (torch.bfloat16, torch.float32), (torch.float32, torch.bfloat16)])
def test_copy_converts_dtype(src, dst):
    names = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}
    s, d = names[src], names[dst]

    @T.prim_func
    def convert(A: T.Tensor((32, 16), s), B: T.Tensor((32, 16), d)):
        with T.Kernel(2, threads=32) as bx:
            f = T.alloc_fragment((16, 16), d)
            T.copy(A[bx * 16, 0], f)
            T.copy(f, B[bx * 16, 0])

    a = rand((32, 16), src, 3, lo=-8, hi=8)
    b = torch.zeros(32, 16, dtype=dst)
    compile_cpu(convert)(a, b)
    assert torch.equal(b, a.to(dst))


def test_copy_row_of_global_to_1d_tile_drops_unit_dim():
    @T.prim_func
    def rows(A: T.Tensor((4, 32), "float32"), B: T.Tensor((32, 4), "float32")):
        with T.Kernel(4, threads=32) as bx:
            r = T.alloc_shared((32,), "float32")
            T.copy(A[bx, 0:32], r)
            T.copy(r, B[0:32, bx])

    a = rand((4, 32), torch.float32, 1)
    b = torch.zeros(32, 4)
    compile_cpu(rows)(a, b)
    assert torch.equal(b, a.T)


def test_fill_writes_only_its_region():
    @T.prim_func
    def fill(C: T.Tensor((8, 8), "float32")):
        with T.Kernel(1, threads=32) as _:
            f = T.alloc_fragment((8, 8), "float32")
            T.fill(f, 1.5)
            T.fill(f[2:4, 1:7], -2.0)
            T.copy(f, C)

    c = torch.zeros(8, 8)
    compile_cpu(fill)(c)
    expected = torch.full((8, 8), 1.5)
    expected[2:4, 1:7] = -2.0
    assert torch.equal(c, expected)


@pytest.mark.parametrize("kind", sorted(REDUCERS))
@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("clear", [True, False])
def test_reduce(kind, dim, clear):
    R, C = 12, 20
    n_out = C if dim == 0 else R

    @T.prim_func
    def reduce(X: T.Tensor((R, C), "float32"), Y: T.Tensor((n_out,), "float32")):
        with T.Kernel(1, threads=128) as _:
            x = T.alloc_fragment((R, C), "float32")
            y = T.alloc_fragment((n_out,), "float32")
            T.copy(X, x)
            T.copy(Y, y)
            T.reduce(x, y, kind, dim=dim, clear=clear)
            T.copy(y, Y)

    x = rand((R, C), torch.float32, 11, lo=-3, hi=3)
    y0 = rand((n_out,), torch.float32, 12, lo=-3, hi=3)
    y = y0.clone()
    compile_cpu(reduce)(x, y)
    expected = REDUCERS[kind](x.double(), dim)
    if not clear:  # TileLang: clear=False folds the reduction into dst's current values
        expected = COMBINE[kind](y0.double(), expected)
    assert_close(y, expected)


def test_reduce_keeps_unit_dim_destination():
    @T.prim_func
    def row_max(X: T.Tensor((8, 16), "float32"), Y: T.Tensor((8, 1), "float32")):
        with T.Kernel(1, threads=32) as _:
            x = T.alloc_fragment((8, 16), "float32")
            y = T.alloc_fragment((8, 1), "float32")
            T.copy(X, x)
            T.reduce_max(x, y, dim=1)
            T.copy(y, Y)

    x = rand((8, 16), torch.float32, 5)
    y = torch.zeros(8, 1)
    compile_cpu(row_max)(x, y)
    assert_close(y, x.double().amax(1, keepdim=True))


@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum(dim, reverse):
    @T.prim_func
    def scan(X: T.Tensor((6, 10), "float32"), Y: T.Tensor((6, 10), "float32")):
        with T.Kernel(1, threads=32) as _:
            s = T.alloc_shared((6, 10), "float32")
            d = T.alloc_fragment((6, 10), "float32")
            T.copy(X, s)
            T.cumsum(s, d, dim=dim, reverse=reverse)
            T.copy(d, Y)

    x = rand((6, 10), torch.float32, 8)
    y = torch.zeros(6, 10)
    compile_cpu(scan)(x, y)
    xd = x.double()
    expected = xd.flip(dim).cumsum(dim).flip(dim) if reverse else xd.cumsum(dim)
    assert_close(y, expected)


def test_cumsum_in_place():
    @T.prim_func
    def scan(X: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=32) as _:
            s = T.alloc_shared((64,), "float32")
            T.copy(X, s)
            T.cumsum(s)
            T.copy(s, X)

    x = rand((64,), torch.float32, 9)
    expected = x.double().cumsum(0)
    compile_cpu(scan)(x)
    assert_close(x, expected)


@pytest.mark.parametrize("kind", ["add", "max", "min"])
def test_atomic_elementwise_into_global_from_many_blocks(kind):
    """Every block combines its row into the same output row: the blocks must not race."""
    B, N = 64, 32
    op = {"add": T.atomic_add, "max": T.atomic_max, "min": T.atomic_min}[kind]

    @T.prim_func
    def combine(X: T.Tensor((B, N), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(B, threads=32) as bx:
            for j in T.Parallel(N):
                op(Y[j], X[bx, j])

    x = rand((B, N), torch.float32, 13, lo=-5, hi=5)
    y0 = rand((N,), torch.float32, 14)
    y = y0.clone()
    compile_cpu(combine)(x, y)
    xd, yd = x.double(), y0.double()
    expected = {"add": yd + xd.sum(0), "max": torch.maximum(yd, xd.amax(0)),
                "min": torch.minimum(yd, xd.amin(0))}[kind]
    assert_close(y, expected)


def test_atomic_add_tile_into_shared_keeps_blocks_parallel():
    @T.prim_func
    def acc(X: T.Tensor((4, 16), "float32"), Y: T.Tensor((4, 16), "float32")):
        with T.Kernel(4, threads=32) as bx:
            s = T.alloc_shared((16,), "float32")
            f = T.alloc_fragment((16,), "float32")
            T.fill(s, 1.0)
            T.copy(X[bx, 0:16], f)
            T.atomic_add(s, f)
            T.atomic_add(s, f)
            T.copy(s, Y[bx, 0:16])

    kernel = compile_cpu(acc)
    assert "T.parallel" in kernel.lowered_script()  # atomics on shared memory need no serial blocks
    x = rand((4, 16), torch.float32, 2)
    y = torch.zeros(4, 16)
    kernel(x, y)
    assert_close(y, 1 + 2 * x.double())
