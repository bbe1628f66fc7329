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

x, k, y = tirx.Var("x", "int32"), tirx.Var("k", "int32"), tirx.Var("y", "int32")
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


def evaluate(expr, env):
    """``expr`` (integer arithmetic with floor division and modulo) at ``env``, in Python."""
    if isinstance(expr, tirx.IntImm):
        return int(expr.value)
    if isinstance(expr, tirx.Var):
        return env[expr.name]
    ops = {tirx.Add: lambda a, b: a + b, tirx.Sub: lambda a, b: a - b, tirx.Mul: lambda a, b: a * b,
           tirx.FloorDiv: lambda a, b: a // b, tirx.FloorMod: lambda a, b: a % b}
    return ops[type(expr)](evaluate(expr.a, env), evaluate(expr.b, env))


def test_random_counted_down_indices_survive_iter_map_simplify():
    """300 random indices ``(affine in x, y with counted-down terms) % or // m`` plus affine terms:
    after the rewrite, iter_map_simplify never changes a value on the whole domain (without it,
    some come out wrong). It may still fail loudly (module docstring)."""
    import random

    rng = random.Random(7)
    envs = [{"x": a, "y": b} for a in range(8) for b in range(6)]
    domain = {x: tvm.ir.Range(0, 8), y: tvm.ir.Range(0, 6)}
    wrong_before = 0
    for _ in range(300):
        dividend = tirx.const(rng.randint(-20, 20), "int32")
        for var in (x, y):
            dividend = dividend + var * rng.choice([0, 1, -1, -1, 2, -2, -3])
        m = rng.choice([2, 3, 4, 8, 16])
        expr = (tirx.floormod if rng.random() < 0.5 else tirx.floordiv)(dividend, m) + x * rng.choice([0, 1, -1])
        want = [evaluate(expr, env) for env in envs]
        for index in (expr, rewritten(expr)):
            try:
                (simplified,) = tvm.sym.iter_map_simplify([index], domain)
            except tvm.error.InternalError:  # TVM fails loudly on some, e.g. x - x % 8
                continue
            if index is expr:
                wrong_before += [evaluate(simplified, env) for env in envs] != want
            else:
                assert [evaluate(simplified, env) for env in envs] == want, f"{expr} -> {simplified}"
    assert wrong_before > 0  # the generator reaches the bug


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
