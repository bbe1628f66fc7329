"""PositiveFloorDividends: apache-tvm 0.27's FlattenBuffer (iter_map_simplify) drops the constant
of ``(c - x) % m`` and ``(c - x) // m``; the pass rewrites such dividends to count up first."""

import itertools

import pytest
import tvm
import tvm.sym
from tvm import tirx

import tilelang_core as tl
import tilelang_core.language as T
from tilelang_core.simt.transform.state import substitute
from tilelang_core.transform.positive_floor_dividends import positive_floor_dividends

x, k = tirx.Var("x", "int32"), tirx.Var("k", "int32")
DOMAIN = {x: tvm.ir.Range(0, 8), k: tvm.ir.Range(0, 8)}
CASES = [tirx.floormod(7 - x, 8), tirx.floordiv(7 - x, 2), tirx.floormod(1 - x, 2) + 2, tirx.floormod(15 - x, 8),
         tirx.floordiv(3 - x, 4), tirx.floormod(0 - x - k, 3), tirx.floormod(5 - x * 2, 4),
         tirx.floordiv(5 - x * 2, 4), tirx.floormod(k - x, 2), tirx.floordiv(x - 3, 2)]


def values(expr):
    return [int(tvm.sym.Analyzer().simplify(substitute(expr, {x: tirx.const(a, "int32"), k: tirx.const(b, "int32")})))
            for a, b in itertools.product(range(8), range(8))]


def rewritten(expr):
    store = tirx.BufferStore(tirx.decl_buffer((1,), "int32", name="out"), expr, [0])
    return positive_floor_dividends(tirx.PrimFunc([], store)).body.value


def test_tvm_iter_map_simplify_still_drops_the_constant():
    """The bug this pass works around; when apache-tvm fixes it, this fails and the pass can go."""
    (simplified,) = tvm.sym.iter_map_simplify([tirx.floormod(7 - x, 8)], {x: tvm.ir.Range(0, 8)})
    assert values(simplified) != values(tirx.floormod(7 - x, 8))


@pytest.mark.parametrize("expr", CASES, ids=str)
def test_rewritten_dividends_keep_their_values_through_iter_map_simplify(expr):
    new = rewritten(expr)
    assert values(new) == values(expr)
    (simplified,) = tvm.sym.iter_map_simplify([new], DOMAIN)
    assert values(simplified) == values(expr)


def test_reversed_index_kernel_on_cpu_matches_torch():
    """A kernel author's reversed ring index, through the cpu backend's whole pipeline."""
    torch = pytest.importorskip("torch")
    n = 37

    @T.prim_func
    def reverse_ring(A: T.Tensor((8,), T.float32), B: T.Tensor((n,), T.float32), C: T.Tensor((n,), T.float32)):
        with T.Kernel(1, threads=1) as _:
            for i in T.serial(n):
                B[i] = A[(n - 1 - i) % 8]
                C[i] = A[(n - 1 - i) // 8 + 3]

    kernel = tl.compile(reverse_ring, target="cpu")
    a = torch.randn(8, dtype=torch.float32)
    b, c = torch.empty(n), torch.empty(n)
    kernel(a, b, c)
    i = torch.arange(n)
    torch.testing.assert_close(b, a[(n - 1 - i) % 8], rtol=0, atol=0)
    torch.testing.assert_close(c, a[(n - 1 - i) // 8 + 3], rtol=0, atol=0)
