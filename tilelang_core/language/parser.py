"""Parse a kernel's Python source into a ``tvm.tirx.PrimFunc``, reusing TVMScript's parser.

TVMScript's parser walks the doc-AST and dispatches each statement kind through a table keyed by
(dialect token, node type). We register a dialect ``"tl"`` that starts as a copy of TVM's
``"tirx"`` entries and overrides the few statements whose TileLang meaning differs:

- ``FunctionDef``: our own signature handling (``T.Tensor`` parameters, eager programs);
- ``For``: ``T.Parallel(m, n)`` / ``T.Pipelined`` nests, besides ``range`` and plain loop frames;
- ``Assign``: ``x = expr`` binds an immutable value (TileLang's let), not TIRX's mutable scalar;
- ``AnnAssign`` / ``Return``: eager-style ``A: T.Tensor(...)`` and ``return C``.

Every error is re-raised as :class:`FrontendError` with the user's file, line and caret; TVM's
own frames are dropped (``from None``).
"""

from __future__ import annotations

import contextlib
import contextvars
import linecache
import threading
import warnings
from collections.abc import Callable
from typing import Any

import tvm
import tvm_ffi
from tvm.ir import Expr
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as B
from tvm.script.parser.core import dispatch, doc
from tvm.script.parser.core import evaluator as _evaluator
from tvm.script.parser.core import utils as parser_utils
from tvm.script.parser.core.diagnostics import Source
from tvm.script.parser.core.parser import Parser
from tvm.tirx import is_buffer_var
from tvm.tirx.script.parser import parser as tirx_parser

from ..errors import FrontendError
from ..transform.bindings import is_pure
from ..transform.boolean_conditions import boolean_conditions
from ..transform.flat_fragment_views import flat_fragment_views
from ..transform.element_copies import element_copies_as_stores, fragment_part_copies_as_loops
from ..transform.parallel_barriers import split_parallel_at_barriers
from ..transform.per_thread import local_copies_as_loops, per_thread_parallel_loops
from ..transform.safe_global_access import guard_global_accesses
from ..transform.packed_subbyte import pack_subbyte_params
from . import mixed_compares
from .assumes import collect_host_assumes
from .negative_indices import legalize_negative_indices
from ..transform.safe_values import lower_safe_value_copies
from . import (bounds_check, global_layouts, reducers, shape_vars, source_kernel, stepped_loops, thread_return,
               vector_loops)
from . import tvm_compat  # noqa: F401  (TileLang's names for renamed TVM classes, e.g. tirx.PrimExpr)
from .kernel import reset_kernel_stack, with_imported_sources

TOKEN = "tl"

def _comprehensions_whole(visit):
    """TVMScript evaluates list/set/dict comprehensions as one Python expression but walks a
    generator expression field by field, so its loop variable is unbound ("unknown name 's'" for
    TileLang's ``sum((s + bM - 1) // bM for s in sizes)``): evaluate generators whole too."""
    def _visit(self, node):
        if isinstance(node, doc.GeneratorExp):
            return self._add_intermediate_result(self._eval_expr(node))
        return visit(self, node)
    return _visit


_evaluator.ExprEvaluator._visit = _comprehensions_whole(_evaluator.ExprEvaluator._visit)

mixed_compares.install()

# Copy TIRX's statement handlers into our dialect once; overrides follow below.
for (_token, _type_name), _method in list(dispatch.ParseVTable.items()):
    if _token == "tirx":
        dispatch.ParseVTable.setdefault((TOKEN, _type_name), _method)


class LoopNest:
    """A loop construct that opens several nested ``For`` frames (``T.Parallel(m, n)``).

    ``frames()`` returns the builder ForFrames, outermost first; the ``for`` target binds to the
    loop variables in that order.
    """

    def frames(self) -> list:  # pragma: no cover - interface
        raise NotImplementedError


class ThreadIndex:
    """One of the kernel's thread indices, as ``T.thread_binding`` names it inside a ``T.Kernel``:
    ``kr = T.thread_binding(0, n, thread="threadIdx.x")`` and ``for kr in T.thread_binding(...)``
    both bind ``kr`` to that index (TVM merges a binding with the launch's; no loop is made)."""

    def __init__(self, expr):
        self.expr = expr


class LaunchBinding:
    """``for bx in T.thread_binding(n, thread="blockIdx.x")`` outside any ``T.Kernel``: TVMScript's
    way to launch a kernel, which TileLang accepts. A perfect nest of these loops opens one
    ``T.Kernel`` whose grid and block are the loops' extents (visit_for)."""

    def __init__(self, extent, tag: str):
        self.extent = extent
        self.tag = tag


# The parser of the kernel being parsed, for T.macro calls (TVM's own lookup walks the Python
# stack with inspect.getouterframes, which costs ~1 ms per call).
current_parser: contextvars.ContextVar[Any] = contextvars.ContextVar("tl_current_parser",
                                                                    default=None)

# The macro being expanded (macro.py): (its last statement, the list its return value goes to, the
# builder's frame depth at its start).
macro_return: contextvars.ContextVar[Any] = contextvars.ContextVar("tl_macro_return", default=None)


class MacroReturned(BaseException):  # (BaseException: TVMScript reports every Exception as an error)
    """A macro's ``return`` taken before its last statement, under compile-time branches only."""


# the T.Ref parameters of the macro being expanded: name -> the element it refers to
macro_refs: contextvars.ContextVar[dict] = contextvars.ContextVar("tl_macro_refs", default={})

# The eager program being specialized, if any (see eager.py); read by T.const / T.empty.
current_eager: contextvars.ContextVar[Any] = contextvars.ContextVar("tl_current_eager",
                                                                   default=None)


# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------
def _message_of(err: BaseException) -> str:
    if isinstance(err, FrontendError):
        return err.message
    if isinstance(err, NameError):
        return str(err).replace("name ", "unknown name ", 1) if str(err).startswith("name ") \
            else str(err)
    text = str(err)
    if text.startswith("Undefined variable: "):
        return f"unknown name '{text[len('Undefined variable: '):].strip()}'"
    if isinstance(err, AttributeError) and "tilelang_core.language' has no attribute" in text:
        return f"unknown name T.{text.rsplit(' ', 1)[-1].strip(chr(39))}: not part of the " \
               "tile language"
    if isinstance(err, KeyError):
        return f"KeyError: {text}"
    # TVM errors carry a C++ backtrace before the message: keep the last meaningful line.
    lines = [ln for ln in text.split("\n") if ln.strip()]
    msg = lines[-1] if lines else type(err).__name__
    for prefix in ("tvm.error.", "TVMError: ", "InternalError: ", "ValueError: ", "TypeError: "):
        if msg.startswith(prefix):
            msg = msg[len(prefix):]
    return msg


def make_error(source: Source, node, err: BaseException | str,
               kernel: str | None = None) -> FrontendError:
    """A FrontendError for ``err`` at ``node`` of ``source``."""
    msg = err if isinstance(err, str) else _message_of(err)
    lineno, col, _, _ = source.location(node)
    filename = source.source_name
    line = linecache.getline(filename, lineno) if filename and filename != "<str>" else ""
    if not line:
        src_lines = source.source.split("\n")
        idx = lineno - source.start_line
        line = (" " * source.start_column + src_lines[idx]) if 0 <= idx < len(src_lines) else None
    # a FrontendValueError keeps its class (TileLang raises ValueError there)
    cls = type(err) if isinstance(err, FrontendError) else FrontendError
    return cls(msg, filename=filename, lineno=lineno, col=col, source_line=line, kernel=kernel)


class TileLangParser(Parser):
    """TVMScript's parser with our dialect forced on the kernel and FrontendError reporting."""

    kernel_name: str | None = None
    private: bool = False  # no global_symbol attribute on the PrimFunc

    def get_dispatch_token(self, node: doc.FunctionDef) -> str:
        # The user's decorator may be @tilelang.jit, @T.prim_func or anything stacked; the
        # function we were handed is a kernel, whatever decorates it.
        return TOKEN

    def eval_assign(self, target, source, bind_value, allow_shadowing=False):
        # `with T.Kernel(n) as (bx,):` names the one block index as a one-element tuple; T.Kernel
        # hands back the Var itself (as TileLang does), which Python cannot unpack.
        if isinstance(target, (doc.Tuple, doc.List)) and len(target.elts) == 1 \
                and isinstance(source, Expr):
            source = (source,)
        return super().eval_assign(target, source, bind_value, allow_shadowing)

    def report_error(self, node: doc.AST, err: Exception | str) -> None:
        if isinstance(err, FrontendError) and err.filename is not None:
            raise err
        if isinstance(err, TypeError) and "TensorRegion" in str(err):
            err = _rank_mistake(self, node) or err
        raise make_error(self.diag.source, node, err, kernel=self.kernel_name)


def _rank_mistake(parser: Parser, node) -> str | None:
    """What an arithmetic TypeError on a TensorRegion means: a buffer indexed with fewer indices
    than it has dimensions (``A[i]`` of a 2-D ``A`` is a region of a row, not an element)."""
    names = parser.var_table.get()
    found = []

    def visit(n):
        if isinstance(n, doc.Subscript) and isinstance(n.value, doc.Name):
            buffer = names.get(n.value.id)
            if tvm.tirx.is_buffer_var(buffer):
                given = len(n.slice.elts) if isinstance(n.slice, doc.Tuple) else 1
                rank = len(buffer.ty.shape)
                if given < rank:
                    found.append((n.value.id, given, rank, list(buffer.ty.shape)))
        for value in vars(n).values() if isinstance(n, doc.AST) else ():
            for child in value if isinstance(value, list) else [value]:
                if isinstance(child, doc.AST):
                    visit(child)

    visit(node)
    if not found:
        return None
    name, given, rank, shape = found[0]
    return (f"'{name}' has {rank} dimensions (shape {shape}) but is indexed with {given}: "
            f"{name}[{', '.join(['...'] * given)}] is a region, not an element; give one index per "
            f"dimension ({name}[{', '.join(f'i{k}' for k in range(rank))}])")


_PARSE_LOCK = threading.RLock()


def parse_kernel(func: Callable, extra_vars: dict[str, Any] | None = None,
                 eager=None, outer_locals: dict[str, Any] | None = None,
                 private: bool = False) -> tvm.tirx.PrimFunc:
    """Parse Python function ``func`` into a PrimFunc.

    ``extra_vars`` override names of the function's scope (compile-time arguments).
    ``eager`` is an ``eager.EagerSpecializer`` when parsing an eager-style program.
    ``outer_locals`` are the locals of the frame that defined ``func``: names used only in
    annotations are no closure variables of ``func``, yet annotations may need them.
    """
    try:
        source = Source(func)
    except (OSError, TypeError):
        raise FrontendError(f"cannot read the source of kernel '{func.__name__}': kernels must "
                            "be defined in a file (not typed at an interactive prompt or "
                            "built with exec)", kernel=func.__name__) from None
    scope = _function_scope(func, outer_locals)
    if extra_vars:
        scope.update(extra_vars)
    parser = TileLangParser(source, {func.__name__: getattr(func, "__annotations__", {})})
    parser.kernel_name = func.__name__
    parser.private = private
    # One parse at a time: the stack of open T.Kernel frames is module state, and JIT compiles
    # may come from several threads (a parse takes milliseconds).
    with _PARSE_LOCK:
        token = current_eager.set(eager)
        parser_token = current_parser.set(parser)
        reducers_token = reducers.begin_kernel()
        try:
            with IRBuilder() as builder:
                parser.parse(extra_vars=scope)
            result = builder.get()
            found = reducers.end_kernel(reducers_token)
            reducers_token = None
            refuse = lambda msg: make_error(source, _def_node(source), msg, kernel=func.__name__)  # noqa: E731
            if found and isinstance(result, tvm.tirx.PrimFunc):
                result = reducers.lower_reducers(result, found, refuse)
            if isinstance(result, tvm.tirx.PrimFunc):
                from .annotations import with_function_attrs  # (annotations imports kernel, which imports us)

                result = with_function_attrs(with_imported_sources(result))
                result = source_kernel.bind_arguments(result)
                result = stepped_loops.unit_step_loops(result)
                result = boolean_conditions(result)
                result = pack_subbyte_params(result, refuse)
                result = shape_vars.solve_shape_vars(result)
                result = global_layouts.apply_global_layouts(result, refuse)
                result = vector_loops.serialize_unsafe_vectorized(result)
                result = legalize_negative_indices(result)
                result = bounds_check.check_on_chip_bounds(result, refuse, _warner(source, func.__name__))
                result = element_copies_as_stores(result)
                result = fragment_part_copies_as_loops(result)
                result = split_parallel_at_barriers(result, func.__name__)
                result = local_copies_as_loops(result, refuse)
                result = per_thread_parallel_loops(result)
                result = guard_global_accesses(result)  # reads the T.assume facts still in the body
                result = collect_host_assumes(result)
                result = thread_return.guard_after_thread_return(result)
                result = lower_safe_value_copies(result, refuse)
                result = flat_fragment_views(result)
        except FrontendError as err:
            raise _fresh(err) from None
        except Exception as err:  # noqa: BLE001 - anything escaping the parser is reported at the def
            raise _fresh(make_error(source, _def_node(source), err, kernel=func.__name__)) from None
        finally:
            if reducers_token is not None:
                reducers.end_kernel(reducers_token)
            current_eager.reset(token)
            current_parser.reset(parser_token)
            reset_kernel_stack()
    if not isinstance(result, tvm.tirx.PrimFunc):
        raise make_error(source, _def_node(source), "the kernel did not produce a PrimFunc",
                         kernel=func.__name__)
    try:
        tvm.tirx.analysis.verify_tirx_well_formed(result)
    except Exception as err:  # noqa: BLE001 - TVM reports ill-formed IR with its own error type
        raise make_error(source, _def_node(source), f"the kernel is not well-formed: "
                         f"{_message_of(err)}", kernel=func.__name__) from None
    return result


def _warner(source: Source, kernel: str):
    """``warn(msg, category)`` reporting at the kernel's def line, in the user's file."""
    lineno = source.location(_def_node(source))[0]

    def warn(msg: str, category) -> None:
        warnings.warn_explicit(f"kernel '{kernel}': {msg}", category, source.source_name or "<kernel>", lineno)

    return warn


def _fresh(err: FrontendError) -> FrontendError:
    """A copy without TVM's frames in ``__traceback__`` / ``__context__``."""
    return type(err)(err.message, filename=err.filename, lineno=err.lineno, col=err.col,
                     source_line=err.source_line, kernel=err.kernel)  # (its class: ValueError kinds stay)


def _def_node(source: Source):
    tree = source.as_ast()
    for node in getattr(tree, "body", []):
        if isinstance(node, doc.FunctionDef):
            return node
    return tree


def _function_scope(func: Callable, outer_locals: dict[str, Any] | None) -> dict[str, Any]:
    """Globals, enclosing locals and closure variables visible to ``func``."""
    scope: dict[str, Any] = {}
    scope.update(func.__globals__)
    if outer_locals:
        scope.update(outer_locals)
    scope.update(parser_utils.inspect_function_capture(func))
    return scope


# ---------------------------------------------------------------------------------------------
# Dialect overrides
# ---------------------------------------------------------------------------------------------
@dispatch.register(token=TOKEN, type_name="FunctionDef")
def visit_function_def(self: Parser, node: doc.FunctionDef) -> None:
    eager = current_eager.get()
    with self.var_table.with_frame():
        with B.prim_func(is_private=getattr(self, "private", False)):
            B.func_name(node.name)
            with self.with_dispatch_token(TOKEN):
                if eager is not None:
                    eager.declare_params(self, node)
                else:
                    _declare_annotated_params(self, node)
                self.visit_body(node.body)


def _declare_annotated_params(self: Parser, node: doc.FunctionDef) -> None:
    args = node.args
    if args.vararg or args.kwarg or args.kwonlyargs:
        self.report_error(node, "a T.prim_func kernel takes only plain positional parameters")
    evaluated = (self.function_annotations or {}).get(node.name, {})
    for arg in args.posonlyargs + args.args:
        if arg.annotation is None:
            self.report_error(_located(arg, node),
                              f"parameter '{arg.arg}' needs an annotation such as "
                              "T.Tensor((M, N), T.float16) or T.int32")
        # Python already evaluated the annotation at def time, in the right scope; it is a
        # string only under ``from __future__ import annotations``.
        ann = evaluated.get(arg.arg)
        if ann is None or isinstance(ann, str):
            ann = self.eval_expr(arg.annotation)
        if callable(ann) and not isinstance(ann, Expr):
            ann = ann()
        if not isinstance(ann, tvm.ir.Var):
            self.report_error(arg.annotation, f"parameter '{arg.arg}': annotation must be "
                                              f"T.Tensor(shape, dtype) or a scalar dtype, "
                                              f"got {ann!r}")
        param = B.arg(arg.arg, ann)
        self.var_table.add(arg.arg, param)


@dispatch.register(token=TOKEN, type_name="For")
def visit_for(self: Parser, node: doc.For) -> None:
    it = node.iter
    if isinstance(it, doc.Call) and isinstance(it.func, doc.Name) and it.func.id == "range" \
            and self.var_table.get().get("range", range) is range:
        args = [self.eval_expr(a) for a in it.args]
        if not 1 <= len(args) <= 3 or it.keywords:
            self.report_error(it, "range() takes 1 to 3 positional arguments")
        start, stop = (0, args[0]) if len(args) == 1 else (args[0], args[1])
        step = args[2] if len(args) == 3 else None
        if stepped_loops.is_zero_step(step):
            self.report_error(it, "range() step must not be zero")
        frames = [B.serial(start, stop, step=step)]
    else:
        value = self.eval_expr(it)
        if isinstance(value, LaunchBinding):
            _visit_launch_nest(self, node, value)
            return
        if isinstance(value, ThreadIndex):
            with self.var_table.with_frame():
                self.eval_assign(target=node.target, source=value.expr, bind_value=_bind_assign)
                self.visit_body(node.body)
            return
        if _is_persistent(value):
            _visit_persistent(self, node, value)
            return
        if isinstance(value, LoopNest):
            frames = value.frames()
        elif isinstance(value, B.frame.ForFrame):
            frames = [value]
        else:
            self.report_error(it, "a kernel loop must iterate over range(...), T.Parallel, "
                                  "T.Pipelined, T.serial, T.unroll or T.vectorized, "
                                  f"not {type(value).__name__}")
    with self.var_table.with_frame(), contextlib.ExitStack() as stack:
        loop_vars = []
        for frame in frames:
            got = stack.enter_context(frame)
            loop_vars.extend(got if isinstance(got, (list, tuple, tvm.ir.Array)) else [got])
        target_count = len(node.target.elts) if isinstance(node.target, doc.Tuple) else 1
        if target_count != len(loop_vars):
            self.report_error(node.target, f"the loop has {len(loop_vars)} index variables but "
                                           f"{target_count} names are bound")
        source = loop_vars[0] if target_count == 1 and not isinstance(node.target, doc.Tuple) \
            else loop_vars
        self.eval_assign(target=node.target, source=source, bind_value=tirx_parser.bind_for_value)
        self.visit_body(node.body)


def _is_persistent(value) -> bool:
    from .tile_schedule import Persistent

    return isinstance(value, Persistent)


def _visit_persistent(self: Parser, node: doc.For, walk) -> None:
    """``for bx, by in T.Persistent(...)``: a serial loop over the waves; in each, the names are
    bound to the wave's tile and the body runs where that tile is in the domain
    (tile_schedule.Persistent)."""
    target_count = len(node.target.elts) if isinstance(node.target, doc.Tuple) else 1
    if target_count != len(walk.domain):
        self.report_error(node.target, f"T.Persistent walks a {len(walk.domain)}-D domain but {target_count} "
                                       "names are bound")
    with self.var_table.with_frame(), B.serial(0, walk.waves) as wave:
        IRBuilder.name("w", wave)
        coords, inside = walk.at(wave)
        with B.If(inside), B.Then():
            source = coords if isinstance(node.target, doc.Tuple) else coords[0]
            self.eval_assign(target=node.target, source=source, bind_value=_bind_assign)
            self.visit_body(node.body)


def _is_thread_binding_call(it) -> bool:
    func = it.func if isinstance(it, doc.Call) else None
    return (isinstance(func, doc.Attribute) and func.attr == "thread_binding") or \
        (isinstance(func, doc.Name) and func.id == "thread_binding")


def _visit_launch_nest(self: Parser, node: doc.For, first: LaunchBinding) -> None:
    """A nest of ``T.thread_binding`` loops outside a kernel, opened as one ``T.Kernel``."""
    from .kernel import _BLOCK_TAGS, _THREAD_TAGS, Kernel

    chain, body = [(node, first)], node.body
    while len(body) == 1 and isinstance(body[0], doc.For) and _is_thread_binding_call(body[0].iter):
        value = self.eval_expr(body[0].iter)
        if not isinstance(value, LaunchBinding):
            break
        chain.append((body[0], value))
        body = body[0].body
    tags = [b.tag for _, b in chain]
    for loop, b in chain:
        if tags.count(b.tag) > 1:
            self.report_error(loop.iter, f"{b.tag} is bound twice in this launch")
    extents = {b.tag: b.extent for _, b in chain}

    def dims(names):
        used = [i for i, t in enumerate(names) if t in extents]
        return [extents.get(t, 1) for t in names[:max(used) + 1]] if used else [1]

    try:
        kernel = Kernel(*dims(_BLOCK_TAGS), threads=dims(_THREAD_TAGS))
    except FrontendError as err:
        self.report_error(node.iter, err)
    with self.var_table.with_frame(), kernel:
        for loop, b in chain:
            index = kernel.block_vars[_BLOCK_TAGS.index(b.tag)] if b.tag in _BLOCK_TAGS \
                else kernel.thread_vars[_THREAD_TAGS.index(b.tag)]
            self.eval_assign(target=loop.target, source=index, bind_value=_bind_assign)
        self.visit_body(body)


def note_thread_alias(var, value) -> None:
    from .kernel import _ACTIVE  # (kernel.py imports this module)

    if _ACTIVE:
        _ACTIVE[-1].note_binding(var, value)


def _bind_assign(self: Parser, node: doc.expr, var_name: str, value: Any) -> Any:
    """TileLang binding: Python values stay Python; expressions become immutable lets."""
    if isinstance(value, ThreadIndex):
        value = value.expr
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, tvm.tirx.FloatImm) and tvm.DataType(str(value.ty)).bits <= 8:
        # an 8/6/4-bit float constant (T.max_value(T.float8_e4m3fn)) stays a constant: a scalar
        # variable of that type is emulated or missing on some targets (TVM's LLVM codegen crashed
        # on a float4 one, rejected the emulated float8 one), and its uses cast it anyway
        return value
    if isinstance(value, Expr) and tvm.ir.is_prim_expr(value) \
            and not isinstance(value, tvm.ir.TensorLoad) \
            and not (isinstance(value, tvm.ir.Var) and not self.var_table.exist(value)) \
            and not is_buffer_var(value):
        var = B.Bind(value)
        IRBuilder.name(var_name, var)
        note_thread_alias(var, value)
        _let_values(self)[var.__chandle__()] = value  # (an assert on sizes sees through it)
        return var
    if isinstance(value, tvm.ir.TensorLoad):
        # ``v = A[i]`` reads once, like TileLang's let; a 1-element buffer read is the same.
        var = B.Bind(value)
        IRBuilder.name(var_name, var)
        return var
    if isinstance(value, (list, tuple)) and not value:
        return value
    if isinstance(value, (list, tuple, dict)) or callable(value) and not isinstance(value, Expr):
        return value
    if not isinstance(value, tvm_ffi.Object) and not type(value).__module__.startswith(("tvm.", "tvm_ffi")):
        # any other Python object (a T.PersistentTileScheduler, a user's helper) stays Python;
        # TVMScript's own (T.alloc_var's scalar wrapper, frames) go to its binding below
        return value
    return tirx_parser.bind_assign_value(self, node, var_name, value)


def _let_values(self: Parser) -> dict:
    """handle of each name bound to an expression (``m = A.shape[0]``) -> that expression."""
    if not hasattr(self, "_lets"):
        self._lets = {}
    return self._lets


def through_lets(self: Parser, expr, depth: int = 8):
    """``expr`` with the names bound by ``_bind_assign`` replaced by their values (nested ones too)."""
    from ..ir.substitute import substitute_nested

    return substitute_nested(expr, _let_values(self), depth)


def _scalar_buffer_of(value):
    """The buffer behind ``value`` when it is a 1-element variable (T.alloc_var), else None."""
    if isinstance(value, B.scalar_wrapper):
        value = value.scalar
    buf = value.source if isinstance(value, tvm.ir.TensorLoad) else value
    if is_buffer_var(buf) and len(buf.ty.shape) == 1 and _is_one(buf.ty.shape[0]):
        return buf
    return None


def _is_one(x) -> bool:
    return isinstance(x, tvm.tirx.IntImm) and int(x.value) == 1


def _store_subscript(self: Parser, target: doc.Subscript, value) -> None:
    if isinstance(target.slice, doc.Tuple):
        indices = []
        for index in target.slice.elts:
            if isinstance(index, doc.Starred):
                indices.extend(self.eval_expr(index.value))
            else:
                indices.append(self.eval_expr(index))
    else:
        idx = self.eval_expr(target.slice)
        indices = list(idx) if isinstance(idx, (list, tuple)) else [idx]
    buffer = self.eval_expr(target.value)
    if not is_buffer_var(buffer):
        self.report_error(target.value, f"only buffers can be assigned element-wise, got "
                                        f"{type(buffer).__name__}")
    if len(indices) != len(buffer.ty.shape):
        self.report_error(target, f"buffer {buffer.name} has {len(buffer.ty.shape)} dimensions "
                                  f"but {len(indices)} indices are given")
    if isinstance(value, tvm.ir.TensorRegion):
        value = _vector_of_region(self, target, value)
    B.buffer_store(buffer, value, indices)


def _vector_of_region(self: Parser, node, region):
    """A slice read as a value (``A[0, 4:8] = A[0, 0:4]``): TileLang's vector load, a slice along
    the last dimension only (one index per other dimension), its extent the lanes."""
    from .vector_access import slice_lanes, vector_indices

    lanes = slice_lanes(region)
    if lanes is None:
        shown = ", ".join(f"{r.min}:{r.min + r.extent}" for r in region.region)
        self.report_error(node, f"the region {region.source.name}[{shown}] is not a vector value (only a "
                                "constant slice of the last dimension is one); copy tiles with T.copy(src, dst)")
    return tvm.tirx.BufferLoad(region.source, vector_indices([r.min for r in region.region], lanes))


def _existing_value(self: Parser, target: doc.expr):
    if isinstance(target, doc.Name):
        return self.var_table.get().get(target.id)
    return None


@dispatch.register(token=TOKEN, type_name="Assign")
def visit_assign(self: Parser, node: doc.Assign) -> None:
    rhs = self.eval_expr(node.value)
    if isinstance(rhs, tvm.ir.TensorRegion) and not isinstance(node.value, doc.Subscript) \
            and any(isinstance(t, doc.Subscript) for t in node.targets):
        # a name bound to a slice is the region (read where it is used, as T.copy takes it); as a
        # value TileLang reads it where it is bound: stored through the name, the two can differ
        self.report_error(node.value, "this names a region of a buffer, which is read where it is used "
                                      "(TileLang reads a slice bound to a name where it is bound); store "
                                      "the slice itself (A[0, 4:8] = A[0, 0:4]) or T.copy it")
    if len(node.targets) != 1:
        # ``a = b = expr``, ``A[i] = B[i] = expr``: the value is computed once and assigned to
        # each target from left to right, as in Python (a value that reads memory is bound
        # first, so a store to an earlier target cannot change what a later one gets)
        if not all(isinstance(t, (doc.Name, doc.Subscript)) for t in node.targets):
            self.report_error(node, "chained assignments take names and subscripts only: "
                                    "'a = b = value', 'A[i] = B[i] = value'")
        if any(isinstance(t, doc.Subscript) for t in node.targets) and tvm.ir.is_prim_expr(rhs) \
                and not is_pure(rhs):
            rhs = B.Bind(rhs)
        for target in node.targets:
            if isinstance(target, doc.Subscript):
                _store_subscript(self, target, rhs)
            else:
                self.eval_assign(target=target, source=rhs, bind_value=_bind_assign, allow_shadowing=True)
        return
    lhs = node.targets[0]
    if isinstance(lhs, (doc.Tuple, doc.List)) and any(isinstance(t, doc.Subscript) or _scalar_buffer_of(
            _existing_value(self, t)) is not None for t in lhs.elts):
        # ``a, b = b, a`` / ``A[0], A[1] = A[1], A[0]``: as in Python, every value is read before
        # any target is written (a value that reads memory is bound first)
        values = list(rhs) if isinstance(rhs, (list, tuple)) else None
        if values is None or len(values) != len(lhs.elts):
            self.report_error(node, f"{len(lhs.elts)} targets but the value is not a sequence of {len(lhs.elts)}")
        values = [B.Bind(v) if isinstance(v, Expr) and tvm.ir.is_prim_expr(v) and not is_pure(v)
                  else _read(v) for v in values]
        for target, value in zip(lhs.elts, values):
            _assign_one(self, target, value)
        return
    _assign_one(self, lhs, rhs)


def _read(value):
    """A scalar variable's current value (``a, b = b, a`` reads ``b`` before ``b`` is written)."""
    if isinstance(value, B.scalar_wrapper):
        value = value.scalar
    return B.Bind(value) if isinstance(value, tvm.ir.TensorLoad) else value


def _referenced_element(self: Parser, lhs):
    """The buffer element a T.Ref macro parameter named by ``lhs`` stands for, else None."""
    if not isinstance(lhs, doc.Name):
        return None
    ref = macro_refs.get().get(lhs.id)
    current = _existing_value(self, lhs)
    if ref is None or not isinstance(current, tvm.ir.TensorLoad) or not current.same_as(ref):
        return None  # not a reference, or the name was bound again in the macro
    return ref


def _assign_one(self: Parser, lhs, rhs) -> None:
    if isinstance(lhs, doc.Subscript):
        _store_subscript(self, lhs, rhs)
        return
    ref = _referenced_element(self, lhs)
    if ref is not None and (isinstance(rhs, (int, float, bool)) or tvm.ir.is_prim_expr(rhs)):
        B.buffer_store(ref.source, rhs, list(ref.indices))
        return
    if isinstance(lhs, doc.Name):
        buf = _scalar_buffer_of(_existing_value(self, lhs))
        if buf is not None and not is_buffer_var(rhs) and not isinstance(rhs, B.scalar_wrapper):
            B.buffer_store(buf, rhs, [0])
            return
    self.eval_assign(target=lhs, source=rhs, bind_value=_bind_assign, allow_shadowing=True)


@dispatch.register(token=TOKEN, type_name="AugAssign")
def visit_aug_assign(self: Parser, node: doc.AugAssign) -> None:
    lhs = node.target
    load = doc.Name(lhs.id, doc.Load(), lhs.lineno, lhs.col_offset, lhs.end_lineno,
                    lhs.end_col_offset) if isinstance(lhs, doc.Name) else _as_load(lhs)
    binop = doc.BinOp(load, node.op, node.value, node.lineno, node.col_offset, node.end_lineno,
                      node.end_col_offset)
    rhs = self.eval_expr(binop)
    if isinstance(lhs, doc.Subscript):
        _store_subscript(self, lhs, rhs)
        return
    ref = _referenced_element(self, lhs)
    if ref is not None:
        B.buffer_store(ref.source, rhs, list(ref.indices))
        return
    if isinstance(lhs, doc.Name):
        buf = _scalar_buffer_of(_existing_value(self, lhs))
        if buf is not None:
            B.buffer_store(buf, rhs, [0])
            return
        self.eval_assign(target=lhs, source=rhs, bind_value=_bind_assign, allow_shadowing=True)
        return
    self.report_error(lhs, "unsupported target of an augmented assignment")


def _as_load(target: doc.expr) -> doc.expr:
    from copy import deepcopy
    node = deepcopy(target)
    node.ctx = doc.Load()
    return node


@dispatch.register(token=TOKEN, type_name="AnnAssign")
def visit_ann_assign(self: Parser, node: doc.AnnAssign) -> None:
    eager = current_eager.get()
    if eager is not None and eager.handles_annotation(self, node):
        return
    return dispatch.get("tirx", "AnnAssign")(self, node)


@dispatch.register(token=TOKEN, type_name="Return")
def visit_return(self: Parser, node: doc.Return) -> None:
    in_macro = macro_return.get()
    if in_macro is not None:
        last, returns, depth = in_macro
        is_last = last is not None and (node.lineno, node.col_offset) == (last.lineno, last.col_offset)
        if not is_last and len(IRBuilder.current().frames) != depth:
            # inside a loop or a branch taken at run time: the rest of the macro would still run
            self.report_error(node, "a T.macro returns early only under conditions known when the kernel "
                                    "is compiled (kernel code has no early return); compute the value into "
                                    "a name and return it at the end")
        returns.append(self.eval_expr(node.value) if node.value is not None else None)
        if not is_last:
            raise MacroReturned()  # (a branch on a Python value: the rest of the body is not parsed)
        return
    eager = current_eager.get()
    if eager is not None:
        eager.check_return(self, node)
        return
    if node.value is None:
        return
    self.report_error(node, "a T.prim_func kernel returns nothing; write outputs into a "
                            "parameter buffer (or use the eager style with T.empty)")


__all__ = ["LaunchBinding", "LoopNest", "TileLangParser", "current_eager", "current_parser", "make_error",
           "parse_kernel"]


def _located(node, fallback):
    """``node`` if the doc-AST kept its position (``arg`` nodes may not), else ``fallback``."""
    return node if getattr(node, "lineno", None) else fallback


@dispatch.register(token=TOKEN, type_name="Assert")
def visit_assert(self: Parser, node: doc.Assert) -> None:
    """``assert cond[, msg]`` checks a compile-time condition while the kernel is built (TileLang
    kernels assert on their sizes: ``assert dim % 16 == 0``). A condition on size variables that
    simplifies to a constant (``M == M_`` of one variable, ``n * 2 % 2 == 0``) is that constant; one
    known only at run time is refused: kernels have no host-side assert here."""
    cond = self.eval_expr(node.test)
    if isinstance(cond, Expr) and tvm.ir.is_prim_expr(cond):  # `M == M_` of one size variable: True
        cond = tvm.sym.Analyzer().simplify(through_lets(self, cond))
    if isinstance(cond, tvm.tirx.IntImm):
        cond = bool(cond.value)
    if isinstance(cond, Expr) and tvm.ir.is_prim_expr(cond):
        self.report_error(node.test, "assert on a value known only when the kernel runs is not supported; "
                                     "check it on the host before the call, or guard the code with an if")
    if not cond:
        msg = self.eval_expr(node.msg) if node.msg is not None else None
        lineno = self.diag.source.location(node)[0]
        name = self.diag.source.source_name
        text = linecache.getline(name, lineno).strip() if name not in (None, "<str>") else ""
        self.report_error(node, f"assertion failed: {msg if msg is not None else text or 'assert'}")
