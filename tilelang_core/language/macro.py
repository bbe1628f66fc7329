"""``T.macro``: a function whose body is inlined, as kernel code, where it is called.

Example::

    @T.macro
    def rescale(acc, scale):
        for i, j in T.Parallel(64, 64):
            acc[i, j] *= scale[i]

    # inside a kernel
    rescale(acc_o, scores_scale)

Hygienic by default (names resolve where the macro is defined), as in TileLang.

Arguments follow TileLang's rules: a value that reads memory (``acc[i]``) is read once, at the
call; a parameter annotated ``T.Ref`` (or TileLang's older ``T.Var``) is a reference instead: given
a buffer element or a ``T.alloc_var``, assignments to the parameter store into it::

    @T.macro
    def clamp_to(x: T.Ref, hi):
        x = T.min(x, hi)            # stores into the caller's element

    clamp_to(acc[i], 1.0)           # acc[i] is clamped in place
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable

import tvm
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as B
from tvm.script.parser._core import scan_macro
from tvm.script.parser.core import utils as parser_utils
from tvm.tirx.script.parser.entry import TIRMacro

from ..errors import FrontendError
from ..transform.bindings import is_pure
from .parser import MacroReturned, current_parser, macro_refs, macro_return


class Ref:
    """TileLang's macro parameter annotation for a by-reference argument (``x: T.Ref``)."""


def _is_reference(annotation) -> bool:
    if isinstance(annotation, str):  # under ``from __future__ import annotations``
        return annotation.split(".")[-1] in ("Ref", "Var")
    return annotation is Ref or annotation is tvm.tirx.Var


def _is_element_read(value) -> bool:
    return isinstance(value, tvm.ir.TensorLoad)


class KernelMacro(TIRMacro):
    """TVMScript's macro, bound to the kernel parser of this thread instead of a stack walk.

    A ``return value`` as the last statement of the body makes ``value`` the call's value
    (TileLang's macros return expressions, variables, Python values)."""

    def __call__(self, *args, **kwargs):
        signature = inspect.signature(self.func)
        binding = signature.bind(*args, **kwargs)
        binding.apply_defaults()
        refs = {}
        for name, value in binding.arguments.items():
            if _is_reference(signature.parameters[name].annotation):
                binding.arguments[name] = refs[name] = self._reference(name, value)
            elif isinstance(value, tvm.ir.Expr) and tvm.ir.is_prim_expr(value) and not is_pure(value):
                binding.arguments[name] = B.Bind(value)  # read once, at the call
        token = macro_refs.set(refs)
        try:
            return super().__call__(*binding.args, **binding.kwargs)
        finally:
            macro_refs.reset(token)

    def _reference(self, name, value):
        if isinstance(value, B.scalar_wrapper) or _is_element_read(value) or tvm.tirx.is_buffer_var(value):
            if _is_element_read(value):
                # the element is fixed at the call: its indices are read once, as TileLang does
                indices = [i if is_pure(i) else B.Bind(i) for i in value.indices]
                value = tvm.tirx.BufferLoad(value.source, indices)
            return value
        raise FrontendError(f"T.macro '{self.func.__name__}': parameter '{name}' is a T.Ref, so its "
                            f"argument must be a buffer element (acc[i]) or a T.alloc_var, got {value!r}")

    def parse_macro(self, parser):
        body = self.get_macro_def().body
        returns = []
        depth = len(IRBuilder.current().frames)
        token = macro_return.set((body[-1] if body else None, returns, depth))
        try:
            super().parse_macro(parser)
        except MacroReturned:
            pass  # returned under an `if` on a Python value: the value is in `returns`
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
