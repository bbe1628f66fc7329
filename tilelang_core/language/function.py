"""``T.prim_func``: the decorator that turns a kernel function into a ``tvm.tirx.PrimFunc``."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable

import tvm

from ..errors import FrontendError
from .parser import parse_kernel


def prim_func(func: Callable | None = None, *, private: bool = False):
    """Parse ``func`` (a kernel written with ``T.*``) into a ``tvm.tirx.PrimFunc``.

    Example::

        @T.prim_func
        def add_one(A: T.Tensor((1024,), T.float32)):
            with T.Kernel(8, threads=128) as bx:
                for i in T.Parallel(128):
                    A[bx * 128 + i] = A[bx * 128 + i] + 1.0

    Errors in the kernel raise ``FrontendError`` pointing at the offending line.
    """

    def decorate(fn: Callable, outer_locals=None) -> tvm.tirx.PrimFunc:
        try:
            return _parse(fn, sys._getframe(1).f_locals if outer_locals is None else outer_locals, private)
        except FrontendError as err:
            # the message points at the kernel's line; the parser's frames would come before it
            raise err.with_traceback(None) from None

    if func is None:
        return decorate
    try:
        return _parse(func, sys._getframe(1).f_locals, private)
    except FrontendError as err:
        raise err.with_traceback(None) from None


def _parse(fn: Callable, outer_locals, private: bool) -> tvm.tirx.PrimFunc:
    if not inspect.isfunction(fn):
        raise TypeError(f"T.prim_func decorates a function, got {fn!r}")
    from .eager import EagerProgram, looks_eager

    if looks_eager(fn):  # TileLang's eager style: A: T.Tensor[...] in the body, T.empty outputs
        return EagerProgram(fn).as_prim_func(private)
    return parse_kernel(fn, outer_locals=outer_locals, private=private)


# TVMScript's parser picks a dialect by this attribute of the decorator.
prim_func.dispatch_token = "tl"
