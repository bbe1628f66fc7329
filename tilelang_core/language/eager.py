"""Eager-style programs: the kernel's shapes come from the tensors it is called with.

    @tilelang.jit
    def matmul(A, B, block_M: int = 64, block_N: int = 64, block_K: int = 32):
        M, N, K = T.const("M, N, K")
        A: T.Tensor((M, K), T.float16)
        B: T.Tensor((K, N), T.float16)
        C = T.empty((M, N), T.float16)
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            ...
        return C

Parameters annotated in the body with ``T.Tensor`` take tensors; the others are compile-time
values. ``EagerProgram.specialize(args, kwargs)`` binds the ``T.const`` names from the argument
shapes, checks shapes and dtypes, and parses the body into a PrimFunc whose parameters are the
tensor arguments followed by the ``T.empty`` outputs. ``cache_key`` computes the same key
without parsing, for the JIT's hot path (the header statements are evaluated by eager_header.py).
"""

from __future__ import annotations

import ast
import inspect
import linecache
import textwrap
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

import tvm
from tvm.script.ir_builder import tirx as B

from ..errors import FrontendError
from .dtypes import canonical_dtype
from .parser import current_eager, parse_kernel
from .tensor import one_variable_per_name
from .tensor import TensorType
from .eager_header import (Header, HeaderStmt, assigned_names, eval_plain, eval_statement, is_call_to,
                           is_header_statement, is_pointer_annotation, is_tensor_annotation, packed_view,
                           split_names)


_MISSING = object()
# scalar dtype names a T.prim_func parameter may be annotated with as a string
_SCALAR_NAMES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                 "float16", "bfloat16", "float32", "float64")


@dataclass(frozen=True)
class Specialization:
    """One compiled form of an eager program: the PrimFunc and how to call it."""

    func: tvm.tirx.PrimFunc = field(compare=False, hash=False)
    out_idx: tuple[int, ...]
    key: Hashable
    const_values: Mapping[str, int] = field(compare=False, hash=False)


@dataclass(frozen=True)
class EagerSignature:
    """What the program takes: tensor parameters, compile-time parameters, consts, outputs."""

    params: tuple[str, ...]
    tensor_params: tuple[str, ...]
    compile_time_params: tuple[str, ...]
    const_names: tuple[str, ...]
    outputs: tuple[str, ...]
    defaults: Mapping[str, Any]
    # ``A: T.ptr`` parameters: run-time pointers (a tensor or an address) that T.make_tensor
    # makes tensors; they do not key the kernel
    pointer_params: tuple[str, ...] = ()


class EagerProgram:
    """An eager-style kernel function, specialized per argument shapes/dtypes/values."""

    def __init__(self, fn: Callable):
        if not inspect.isfunction(fn):
            raise TypeError(f"EagerProgram wraps a function, got {fn!r}")
        self.fn = fn
        self.__name__ = fn.__name__
        self._py_sig = inspect.signature(fn)
        for p in self._py_sig.parameters.values():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise self._error(None, f"eager kernel '{fn.__name__}' cannot take *args/**kwargs")
        self._filename = inspect.getsourcefile(fn) or "<unknown>"
        lines, self._first_line = inspect.getsourcelines(fn)
        tree = ast.parse(textwrap.dedent("".join(lines)))
        ast.increment_lineno(tree, self._first_line - 1)
        self._indent = len(lines[0]) - len(lines[0].lstrip())
        fdef = tree.body[0]
        params = tuple(self._py_sig.parameters)
        self._stmts: list[HeaderStmt] = []
        tensor_params: list[str] = []
        consts: list[str] = []
        outputs: list[str] = []
        # TileLang also takes the tensor type in the signature: def f(A: T.Tensor[[M, N], dt]).
        pointer_params = tuple(arg.arg for arg in fdef.args.posonlyargs + fdef.args.args
                               if arg.annotation is not None and is_pointer_annotation(arg.annotation))
        for arg in fdef.args.posonlyargs + fdef.args.args:
            if arg.annotation is not None and is_tensor_annotation(arg.annotation):
                tensor_params.append(arg.arg)
                self._stmts.append(HeaderStmt("tensor", (arg.arg,), self._compile(arg.annotation), arg))
        for node in ast.walk(fdef):
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) \
                    and node.target.id in params and node.value is None:
                if node.target.id in tensor_params:
                    raise self._error(node, f"parameter '{node.target.id}' already has a tensor type "
                                            f"(in the signature or above); annotate it once")
                tensor_params.append(node.target.id)
                self._stmts.append(HeaderStmt("tensor", (node.target.id,),
                                         self._compile(node.annotation), node))
            elif isinstance(node, ast.Assign) and is_call_to(node.value, "const"):
                names = self._target_names(node.targets[0])
                consts.extend(names)
                self._stmts.append(HeaderStmt("const", tuple(names), self._compile(node.value), node))
            elif isinstance(node, ast.Assign) and is_call_to(node.value, "empty"):
                names = self._target_names(node.targets[0])
                if len(names) != 1:
                    raise self._error(node, "assign each T.empty(...) to one name")
                outputs.append(names[0])
                self._stmts.append(HeaderStmt("empty", tuple(names), self._compile(node.value), node))
        # Top-level statements before the kernel may feed annotations: assignments
        # (``dtype = T.float16``, ``shape = [M, N]``, ``x += 1``) and ``if`` blocks of them
        # (``if scale is None: scale = ...``). They run in the header's namespace, in order.
        for node in fdef.body:
            if isinstance(node, ast.With):
                break
            if is_header_statement(node, params):
                self._stmts.append(HeaderStmt("plain", assigned_names(node), self._compile_stmt(node), node))
        self._stmts.sort(key=lambda s: (s.node.lineno, s.node.col_offset))
        # Parameters are declared in signature order, whatever order the annotations have.
        ordered_tensors = tuple(p for p in params if p in tensor_params)
        self.signature = EagerSignature(
            params=params, tensor_params=ordered_tensors,
            compile_time_params=tuple(p for p in params if p not in tensor_params and p not in pointer_params),
            const_names=tuple(consts), outputs=tuple(outputs),
            defaults={k: v.default for k, v in self._py_sig.parameters.items()
                      if v.default is not inspect.Parameter.empty},
            pointer_params=pointer_params)
        self._tensor_pos = tuple(params.index(p) for p in ordered_tensors)
        self._pointer_pos = tuple(params.index(p) for p in pointer_params)
        self._param_index = {p: i for i, p in enumerate(params)}
        self._scalar_names = self.signature.compile_time_params
        self._headers: dict[Hashable, Header] = {}
        self._dtype_cache: dict[Any, str] = {}

    # -- helpers ---------------------------------------------------------------------------
    def _compile(self, expr: ast.expr):
        return compile(ast.Expression(expr), self._filename, "eval")

    def _compile_stmt(self, node: ast.stmt):
        return compile(ast.Module(body=[node], type_ignores=[]), self._filename, "exec")

    def _target_names(self, target: ast.expr) -> list[str]:
        if isinstance(target, ast.Name):
            return [target.id]
        if isinstance(target, (ast.Tuple, ast.List)) and all(
                isinstance(e, ast.Name) for e in target.elts):
            return [e.id for e in target.elts]
        raise self._error(target, "assign T.const / T.empty results to plain names")

    def _error(self, node, message: str) -> FrontendError:
        if node is None:
            return FrontendError(message, filename=self._filename, lineno=self._first_line,
                                 kernel=self.fn.__name__)
        line = linecache.getline(self._filename, node.lineno) or None
        return FrontendError(message, filename=self._filename, lineno=node.lineno,
                             col=node.col_offset + 1 + self._indent, source_line=line,
                             kernel=self.fn.__name__)

    def _dtype(self, dtype) -> str:
        try:
            return self._dtype_cache[dtype]
        except (KeyError, TypeError):
            name = canonical_dtype(dtype, "tensor argument")
            try:
                self._dtype_cache[dtype] = name
            except TypeError:
                pass
            return name

    def _bind(self, args: tuple, kwargs: dict) -> list:
        """Argument values in signature order (fast path for positional calls)."""
        params = self.signature.params
        if not kwargs and len(args) == len(params):
            return list(args)
        if len(args) <= len(params):
            # Hand-rolled binding: inspect.Signature.bind costs ~15 us per call.
            values = list(args) + [_MISSING] * (len(params) - len(args))
            for name, value in kwargs.items():
                i = self._param_index.get(name, -1)
                if i < len(args) or values[i] is not _MISSING:
                    break  # unknown or duplicate: let inspect produce the message
                values[i] = value
            else:
                defaults = self.signature.defaults
                for i, value in enumerate(values):
                    if value is _MISSING:
                        if params[i] not in defaults:
                            break
                        values[i] = defaults[params[i]]
                else:
                    return values
        try:
            bound = self._py_sig.bind(*args, **kwargs)
        except TypeError as err:
            raise self._error(None, f"{self.fn.__name__}(): {err}") from None
        bound.apply_defaults()
        return [bound.arguments[p] for p in params]

    def _scalars(self, values: list) -> tuple:
        out = []
        for name, value in zip(self.signature.params, values, strict=True):
            if name in self._scalar_names:
                if hasattr(value, "shape") and hasattr(value, "dtype"):
                    raise self._error(None, f"parameter '{name}' received a tensor but has no "
                                            f"'{name}: T.Tensor(...)' annotation in the body")
                value = _frozen(value)  # TileLang kernels take lists (batch sizes): key them as tuples
                try:
                    hash(value)
                except TypeError:
                    raise self._error(None, f"compile-time parameter '{name}' must be hashable "
                                            f"(int, float, bool, str, tuple), got "
                                            f"{type(value).__name__}") from None
                out.append(value)
        return tuple(out)

    # -- public API -----------------------------------------------------------------------
    def cache_key(self, args: tuple, kwargs: dict | None = None) -> Hashable:
        """The key ``specialize(args, kwargs).key`` will have, computed without parsing."""
        values = self._bind(args, kwargs or {})
        scalars = self._scalars(values)
        header = self._header(scalars)
        shapes = []
        for pos, name, mask in zip(self._tensor_pos, self.signature.tensor_params,
                                   header.static_mask, strict=True):
            arg = values[pos]
            try:
                shape, dtype = arg.shape, arg.dtype
            except AttributeError:
                raise self._error(header.ann_nodes[name],
                                  f"parameter '{name}' expects a tensor, got "
                                  f"{type(arg).__name__}") from None
            shape, dtype = packed_view(tuple(int(d) for d in shape), self._dtype(dtype),
                                       header.ann_types[name].dtype)
            shapes.append((tuple(int(d) if keep else None
                                 for d, keep in zip(shape, mask, strict=False)),
                           len(shape), dtype))
            if name in header.const_strided:  # its T.const strides are part of the kernel
                shapes.append(tuple(int(x) for x in arg.stride()) if callable(getattr(arg, "stride", None)) else None)
        return (self.fn.__name__, tuple(shapes), scalars)

    def positional_key(self) -> Callable[[tuple], Hashable] | None:
        """A cheap ``args -> key`` for calls that pass their arguments positionally.

        Equal keys imply equal ``cache_key``s: it keeps the argument count, each tensor's exact
        shape and dtype object (where ``cache_key`` drops dynamic extents and canonicalizes the
        dtype, ~2 us a call) and the compile-time values as they are; parameters left out take
        their defaults, the same each call. So a memo keyed by it may hold several keys for one
        kernel, never one key for two. None for a count the signature does not take; it raises
        for a non-tensor where a tensor goes. Either way callers take the ``cache_key`` route,
        which explains.
        """
        params = self.signature.params
        required = sum(1 for p in params if p not in self.signature.defaults)
        if not params or any(h.const_strided for h in self._headers.values()):
            return None  # (strides bound to T.const: the cache_key route keeps them)
        lines = ["def key(args):", "    n = len(args)"]
        for count in range(len(params), max(required, 1) - 1, -1):
            names = [f"a{i}" for i in range(count)]
            parts = [str(count)]
            for i, name in enumerate(names):
                if i in self._pointer_pos:
                    continue  # a run-time pointer: not part of the kernel
                parts += [f"{name}.shape", f"{name}.dtype"] if i in self._tensor_pos else [name]
            lines += [f"    if n == {count}:", f"        {', '.join(names)}, = args",
                      f"        return ({', '.join(parts)},)"]
        lines.append("    return None")
        namespace: dict = {}
        exec(compile("\n".join(lines) + "\n", f"<tilelang eager key {self.fn.__name__}>",  # noqa: S102
                     "exec"), namespace)
        return namespace["key"]

    def specialize(self, args: tuple, kwargs: dict | None = None) -> Specialization:
        """Check ``args`` against the annotations and parse the kernel for them."""
        values = self._bind(args, kwargs or {})
        scalars = self._scalars(values)
        header = self._header(scalars)
        consts = header.bind_consts(self, values)
        with one_variable_per_name():  # the types and the parsed body share each T.dynamic
            tensors, empties = header.concrete_types(self, consts, scalars, values)
            key = self.cache_key(args, kwargs)
            compile_time = dict(zip(self._scalar_names, scalars, strict=True))
            specializer = _Specializer(self, consts, tensors, empties, compile_time)
            func = parse_kernel(self.fn, extra_vars=compile_time, eager=specializer)
        out_idx = specializer.out_idx()
        return Specialization(func=func, out_idx=out_idx, key=key,
                              const_values=dict(consts))

    def as_prim_func(self, private: bool = False) -> tvm.tirx.PrimFunc:
        """The program as one PrimFunc, for TileLang's eager style under ``@T.prim_func``::

            @T.prim_func
            def kernel(A, n: T.int32):
                A: T.Tensor[[128, 128], T.float32]
                B = T.empty([128, 128], T.float32)
                ...
                return B

        There is no call to take sizes from: tensors have static or ``T.dynamic`` sizes, a
        parameter with a scalar dtype (``n: T.int32``) is a run-time scalar, and the ``T.empty``
        outputs are parameters after the others, listed in the ``tilelang_out_idx`` attribute
        (negative indices) for ``tilelang.compile``.
        """
        from .annotations import OUT_IDX_ATTR
        from .dtypes import DType

        sig = self.signature
        if sig.const_names:
            raise self._error(None, f"T.const ({', '.join(sig.const_names)}) binds sizes from the call's "
                                    f"tensors, and a T.prim_func is not called; use T.dynamic sizes, or "
                                    f"@tilelang.jit")
        scalars = {}
        for name in sig.compile_time_params:
            ann = self.fn.__annotations__.get(name)
            if not isinstance(ann, (DType, str)) or isinstance(ann, str) and ann not in _SCALAR_NAMES:
                raise self._error(None, f"parameter '{name}' of T.prim_func '{self.fn.__name__}' needs a "
                                        f"tensor annotation (A: T.Tensor[shape, dtype], in the signature or "
                                        f"the body) or a scalar dtype (n: T.int32)")
            scalars[name] = tvm.tirx.Var(name, canonical_dtype(ann, f"parameter '{name}'"))
        values = tuple(scalars[n] for n in self._scalar_names)
        header = self._header(values)
        with one_variable_per_name():
            tensors, empties = header.types(self, {}, values)
            specializer = _Specializer(self, {}, tensors, empties, scalars, runtime_scalars=True)
            func = parse_kernel(self.fn, extra_vars=dict(scalars), eager=specializer, private=private)
        if empties:
            n = len(func.params)
            func = func.with_attr(OUT_IDX_ATTR, [i - n for i in specializer.out_idx()])
        return func

    def tensors_from_consts(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """TileLang's ``f.compile(M=1024, N=1024, K=1024)``: compile without tensors.

        Tensor parameters the call does not pass are described by their annotations evaluated
        with the T.const sizes given as keywords; returns ``(args, kwargs)`` with stand-ins
        (shape and dtype only) for them, ready for :meth:`specialize`.
        """
        sizes = {k: v for k, v in kwargs.items() if k in self.signature.const_names}
        given = dict(zip(self.signature.params, args))
        # no sizes and no tensors either: a program whose annotations are all static (TileLang's
        # `@jit def f(A: T.Tensor((16, 16), T.float32))` then `f.get_kernel_source()`) needs none
        all_static = not self.signature.const_names and not args and not any(
            n in kwargs for n in self.signature.tensor_params)
        if not sizes and not all_static:
            return args, kwargs
        given.update((k, v) for k, v in kwargs.items() if k not in sizes)
        defaults = self.signature.defaults
        missing = [n for n in self._scalar_names if n not in given and n not in defaults]
        if missing:
            raise self._error(None, f"{self.fn.__name__}.compile(): missing compile-time argument(s) "
                                    f"{', '.join(missing)}")
        ns = self._namespace(tuple(given.get(n, defaults.get(n)) for n in self._scalar_names))
        ns.update(sizes)
        for stmt in self._stmts:
            if stmt.kind == "plain":
                eval_plain(stmt, ns)
            elif stmt.kind == "tensor" and stmt.names[0] not in given:
                try:
                    ann = eval_statement(self, stmt, ns)
                except FrontendError as err:
                    unset = [n for n in self.signature.const_names if n not in sizes]
                    if not unset:  # every size was given: the error is the annotation's own
                        raise
                    raise self._error(stmt.node, f"{err.message}; give every size the annotation uses "
                                                 f"(not given: {', '.join(unset)})") from None
                if not all(isinstance(d, int) for d in ann.shape):
                    raise self._error(stmt.node, f"parameter '{stmt.names[0]}' has a size known only at "
                                                 f"call time ({ann}); pass a tensor for it instead")
                given[stmt.names[0]] = TensorSpec(tuple(ann.shape), ann.dtype)
        return (), given

    def __repr__(self) -> str:
        return f"EagerProgram({self.fn.__name__})"

    # -- header evaluation ------------------------------------------------------------------
    def _namespace(self, scalars: tuple) -> dict[str, Any]:
        ns = dict(self.fn.__globals__)
        if self.fn.__closure__:
            ns.update(dict(zip(self.fn.__code__.co_freevars,
                               (c.cell_contents for c in self.fn.__closure__), strict=True)))
        ns.update(self.signature.defaults)
        ns.update(zip(self._scalar_names, scalars, strict=True))
        return ns

    def _header(self, scalars: tuple) -> Header:
        try:
            return self._headers[scalars]
        except KeyError:
            pass
        header = Header(self, scalars)
        self._headers[scalars] = header
        return header


@dataclass(frozen=True)
class TensorSpec:
    """A tensor argument described by shape and dtype only (``f.compile(M=..., ...)``)."""

    shape: tuple[int, ...]
    dtype: str


class _Specializer:
    """Hooks the parser calls while parsing an eager program for one specialization."""

    def __init__(self, program: EagerProgram, consts: dict[str, int],
                 tensors: dict[str, TensorType], empties: list, compile_time: dict[str, Any],
                 runtime_scalars: bool = False):
        self.program = program
        self.runtime_scalars = runtime_scalars  # compile_time holds Vars: scalar parameters (as_prim_func)
        self.consts = consts
        self.tensors = tensors
        self.empties = empties
        self.compile_time = compile_time
        self.params: list = []
        self.outputs: list = []
        self._next_empty = 0
        self._returned: list = []

    def declare_params(self, parser, node) -> None:
        from .pointers import ptr

        for name in self.program.signature.params:
            if name in self.program.signature.pointer_params:  # T.make_tensor makes it a tensor
                var = B.arg(name, ptr())
                self.params.append(var)
                parser.var_table.add(name, var)
            elif name in self.tensors:
                buf = B.arg(name, self.tensors[name]())
                self.params.append(buf)
                parser.var_table.add(name, buf)
            elif self.runtime_scalars:
                var = B.arg(name, self.compile_time[name])
                self.params.append(var)
                parser.var_table.add(name, var)
            else:
                parser.var_table.add(name, self.compile_time[name])
        for name, ttype, _ in self.empties:
            buf = B.arg(name, ttype())
            self.outputs.append(buf)

    def const(self, names) -> tuple | int:
        values = tuple(self.consts[n] for n in split_names(names))
        return values[0] if len(values) == 1 else values

    def empty(self, shape, dtype):
        if self._next_empty < len(self.outputs):
            buf = self.outputs[self._next_empty]
            self._next_empty += 1
            return buf
        # a T.empty the header did not see: in a T.macro called at the top level (TileLang's
        # ``return copy_impl(A)``, whose macro allocates and returns B). Its sizes may be names
        # the macro bound (``M, N = A.shape``): read through them, they must be the parameters'.
        from .kernel import _ACTIVE
        from .parser import current_parser, through_lets

        if _ACTIVE:
            raise FrontendError("T.empty must be called at the top level of an eager kernel (or in a "
                                "T.macro called there), not inside T.Kernel")
        parser = current_parser.get()
        dims = [through_lets(parser, tvm.tirx.const(d, "int32") if isinstance(d, int) else d)
                if parser is not None else d for d in (shape if isinstance(shape, (list, tuple)) else [shape])]
        dims = [tvm.sym.Analyzer().simplify(d) if isinstance(d, tvm.ir.Expr) else d for d in dims]
        buf = B.arg(f"out{len(self.outputs)}", TensorType(dims, dtype)())
        self.outputs.append(buf)
        self._next_empty += 1
        return buf

    def handles_annotation(self, parser, node) -> bool:
        from tvm.script.parser.core import doc
        return isinstance(node.target, doc.Name) and node.target.id in self.tensors \
            and node.value is None

    def check_return(self, parser, node) -> None:
        if node.value is None:
            return
        value = parser.eval_expr(node.value)
        values = list(value) if isinstance(value, (list, tuple)) else [value]
        for v in values:
            if not any(v.same_as(o) for o in self.outputs if hasattr(v, "same_as")):
                parser.report_error(node, "an eager kernel may only return buffers created with "
                                          "T.empty")
        self._returned = values

    def out_idx(self) -> tuple[int, ...]:
        n_in = len(self.params)
        returned = self._returned or self.outputs
        return tuple(n_in + next(i for i, o in enumerate(self.outputs) if o.same_as(r))
                     for r in returned)


def looks_eager(fn: Callable) -> bool:
    """True when ``fn`` is written in the eager style: a parameter is annotated with a tensor type
    inside the body (``A: T.Tensor(...)``) or the body creates outputs with ``T.empty``.

    Lets ``@tilelang.jit`` tell an eager program from a function that returns a PrimFunc.
    """
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return False
    fdef = tree.body[0] if tree.body else None
    if not isinstance(fdef, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    params = {a.arg for a in fdef.args.posonlyargs + fdef.args.args + fdef.args.kwonlyargs}
    for node in ast.walk(fdef):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) \
                and node.target.id in params and node.value is None:
            return True
        if isinstance(node, ast.Call) and is_call_to(node, "empty") \
                and isinstance(node.func, ast.Attribute):
            return True
    return False


def const(names):
    """Compile-time sizes of an eager kernel, bound from the argument shapes.

    ``M, N, K = T.const("M, N, K")`` then ``A: T.Tensor((M, K), T.float16)``.
    """
    hooks = current_eager.get()
    if hooks is None or not hasattr(hooks, "const"):
        raise FrontendError("T.const can only be used in an eager-style kernel (@tilelang.jit "
                            "without T.prim_func); use T.dynamic for symbolic sizes")
    return hooks.const(names)


def empty(*shape, dtype=None):
    """An output tensor of an eager kernel, allocated by the runtime and returned to the caller.

    TileLang's two forms: ``T.empty((M, N), T.float16)`` and ``T.empty(M, N, dtype=T.float16)``
    (dtype float32 when not given).
    """
    hooks = current_eager.get()
    if hooks is None or not hasattr(hooks, "empty"):
        raise FrontendError("T.empty can only be used in an eager-style kernel (@tilelang.jit "
                            "without T.prim_func)")
    dims, dtype = _empty_args(shape, dtype)
    return hooks.empty(dims, dtype)


def _empty_args(args: tuple, dtype):
    if len(args) == 2 and isinstance(args[0], (list, tuple)) and dtype is None:
        return args[0], args[1]  # T.empty(shape, dtype)
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        return args[0], "float32" if dtype is None else dtype
    if not args:
        raise FrontendError("T.empty needs a shape: T.empty((M, N), dtype) or T.empty(M, N, dtype=...)")
    for dim in args:
        if isinstance(dim, (str, list, tuple)) or getattr(dim, "dtype", "int").startswith(("float", "bool")):
            raise FrontendError(f"T.empty({', '.join(map(repr, args))}): give the shape as one tuple "
                                f"and the dtype second, T.empty((M, N), dtype), or the sizes one by one "
                                f"with dtype=..., T.empty(M, N, dtype=T.float16)")
    return tuple(args), "float32" if dtype is None else dtype


def _frozen(value):
    """Lists (nested too) as tuples, so a compile-time argument can key the kernel cache."""
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value
