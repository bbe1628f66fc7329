"""``T.macro``: a function whose body is inlined, as kernel code, where it is called.

Example::

    @T.macro
    def rescale(acc, scale):
        for i, j in T.Parallel(64, 64):
            acc[i, j] *= scale[i]

    # inside a kernel
    rescale(acc_o, scores_scale)

Hygienic by default (names resolve where the macro is defined), as in TileLang.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable

from tvm.script.parser._core import scan_macro
from tvm.script.parser.core import utils as parser_utils
from tvm.tirx.script.parser.entry import TIRMacro

from ..errors import FrontendError
from .parser import current_parser, macro_return


class KernelMacro(TIRMacro):
    """TVMScript's macro, bound to the kernel parser of this thread instead of a stack walk.

    A ``return value`` as the last statement of the body makes ``value`` the call's value
    (TileLang's macros return expressions, variables, Python values)."""

    def parse_macro(self, parser):
        body = self.get_macro_def().body
        returns = []
        token = macro_return.set((body[-1] if body else None, returns))
        try:
            super().parse_macro(parser)
        finally:
            macro_return.reset(token)
        return returns[0] if returns else None

    def _find_parser_def(self):
        parser = current_parser.get()
        if parser is None:
            raise FrontendError(f"T.macro '{self.func.__name__}' can only be called inside a "
                                "kernel")
        return parser


def macro(func: Callable | None = None, *, hygienic: bool = True):
    """Decorate a function whose body is expanded inline at each call inside a kernel."""

    def decorate(fn: Callable) -> Callable:
        if not inspect.isfunction(fn):
            raise TypeError(f"T.macro decorates a function, got {fn!r}")
        source, closure_vars = scan_macro(fn, parser_utils.inspect_function_capture(fn))
        # TVM binds captured names and then the parameters into one scope, so a parameter that
        # shares a name with any captured global (a tensor `k` beside a loop index `k`) would
        # be "already defined". Parameters shadow captures, as in Python.
        params = set(inspect.signature(fn).parameters)
        closure_vars = {name: value for name, value in closure_vars.items() if name not in params}
        obj = KernelMacro(source, closure_vars, fn, hygienic)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            return obj(*args, **kwargs)

        return wrapper

    if func is None:
        return decorate
    return decorate(func)
