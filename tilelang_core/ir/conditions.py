"""Boolean conditions taken apart."""

from __future__ import annotations


def conjuncts(cond) -> list:
    """The terms of a conjunction: ``a and b`` (And, or BitwiseAnd of booleans) split all the way
    down; any other condition is one term."""
    if type(cond).__name__ in ("And", "BitwiseAnd"):
        return conjuncts(cond.a) + conjuncts(cond.b)
    return [cond]


__all__ = ["conjuncts"]
