"""The TVM pass form of a ``PrimFunc -> PrimFunc`` function: each pass module keeps its pure
function (easy to test) and names its factory after the pass (``PositiveFloorDividends()``)."""

from __future__ import annotations

from typing import Callable


def func_pass(fn: Callable, name: str):
    """A ``prim_func_pass`` (opt level 0) named ``name`` that applies ``fn`` to every PrimFunc."""
    from tvm import tirx

    @tirx.transform.prim_func_pass(opt_level=0, name=name)
    def _pass(func, _mod, _ctx):
        return fn(func)

    return _pass


__all__ = ["func_pass"]
