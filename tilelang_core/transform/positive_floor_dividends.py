"""PositiveFloorDividends: ``(c - x) % m`` and ``(c - x) // m`` rewritten with ``x`` counted up.

apache-tvm 0.27's ``iter_map_simplify``, which FlattenBuffer runs over every buffer index (and so
every backend's pipeline, TVM's default one included), drops the constant of a floor division or
modulo whose dividend counts an iterator down::

    iter_map_simplify([(7 - x) % 8], {x: [0, 8)})  ->  x % -8 * -1      (x = 0: 0, not 7)
    iter_map_simplify([(7 - x) // 2], {x: [0, 8)}) ->  x // -2 + 3      (x = 1: 2, not 3)

A reversed block order (``tl.enable_longest_first``: bx -> GX - 1 - bx) turns a pipeline's ring
slot ``(n - 1) % stages`` into exactly that form: the consumers then waited on the wrong mbarrier
and hung. A kernel author's ``A[(N - 1 - i) % 2]`` would read the wrong element silently.
Dividends whose every non-constant term is negative are therefore rewritten, before any TVM pass
sees them, with the identities (m > 0, e = -a)::

    a % m  = (m - 1) - (e - 1) % m
    a // m = -((e + m - 1) // m)

whose dividends count up, a form iter_map_simplify gets right. Mixed signs (``k - x``) are left
alone: iter_map_simplify does not rewrite them.

What is left, measured on 3000 random indices from the generator of
tests/test_positive_floor_dividends.py (10 seeds; 102 wrong without the pass, none with it):
iter_map_simplify fails outright (InternalError, divide by zero) on some indices, ``x - x % 8``
over x in [0, 8) among them, with or without this pass; a counted-down dividend beside its own
iterator, ``(3 - x) % 8 + x``, lands there after the rewrite (5 of the 3000): a compile error
instead of an index that may be wrong. Nested floor operations
with negative intermediate values can still come out wrong (one seen in 400 random nested ones).
"""

from __future__ import annotations

from tvm import tirx

from .func_pass import func_pass
from .structural import structural_map


def _linear(expr) -> tuple[list, int]:
    """``expr`` as ([(coefficient, term)], constant): sums, differences and products with a
    constant are expanded; anything else is one term of coefficient 1."""
    if isinstance(expr, tirx.IntImm):
        return [], int(expr.value)
    if isinstance(expr, (tirx.Add, tirx.Sub)):
        sign = 1 if isinstance(expr, tirx.Add) else -1
        (ta, ca), (tb, cb) = _linear(expr.a), _linear(expr.b)
        return ta + [(sign * c, t) for c, t in tb], ca + sign * cb
    if isinstance(expr, tirx.Mul):
        for scale, other in ((expr.b, expr.a), (expr.a, expr.b)):
            if isinstance(scale, tirx.IntImm):
                terms, const = _linear(other)
                return [(c * int(scale.value), t) for c, t in terms], const * int(scale.value)
    return [(1, expr)], 0


def _counted_up(dividend):
    """(sum of the dividend's terms with their coefficients negated, minus its constant), or None
    when some term of the dividend is not counted down (or there is no term)."""
    terms, const = _linear(dividend)
    if not terms or any(c >= 0 for c, _ in terms):
        return None
    dtype = dividend.ty.dtype
    total = None
    for c, term in terms:
        part = term if c == -1 else term * tirx.const(-c, dtype)
        total = part if total is None else total + part
    return total, -const


def _plus(expr, const: int):
    return expr if const == 0 else expr + tirx.const(const, expr.ty.dtype)


def _rewrite(node):
    if not isinstance(node.b, tirx.IntImm) or int(node.b.value) <= 0:
        return node
    counted = _counted_up(node.a)
    if counted is None:
        return node
    (e, const), m = counted, int(node.b.value)  # the dividend is -(e + const)
    if isinstance(node, tirx.FloorMod):
        return tirx.const(m - 1, node.b.ty.dtype) - tirx.floormod(_plus(e, const - 1), node.b)
    return tirx.const(0, node.b.ty.dtype) - tirx.floordiv(_plus(e, const + m - 1), node.b)


def positive_floor_dividends(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """``func`` with every counted-down floor division and modulo by a positive constant rewritten
    (module docstring)."""
    body = structural_map(func.body, [(tirx.FloorMod, _rewrite), (tirx.FloorDiv, _rewrite)])
    return func if body.same_as(func.body) else func.with_body(body)


def PositiveFloorDividends():  # noqa: N802  (a pass factory, named like TVM's)
    """Pass form of :func:`positive_floor_dividends`."""
    return func_pass(positive_floor_dividends, "tl.PositiveFloorDividends")


__all__ = ["PositiveFloorDividends", "positive_floor_dividends"]
