"""The header of an eager program: the statements before its first ``with`` (``T.const``
names, ``A: T.Tensor(...)`` annotations, ``T.empty`` outputs and the plain assignments between),
evaluated outside the parser with the consts as symbolic placeholders, so that the tensor
arguments of a call bind the consts and give the cache key without parsing the body
(language/eager.py).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import tvm

from ..errors import FrontendError
from .parser import current_eager
from .tensor import TensorType

if TYPE_CHECKING:  # pragma: no cover
    from .eager import EagerProgram


@dataclass
class HeaderStmt:
    """A header statement of the body, compiled for evaluation outside the parser."""

    kind: str  # "const" | "tensor" | "empty" | "plain"
    names: tuple[str, ...]
    code: Any  # compiled expression
    node: ast.AST
    const_spec: str | None = None


def split_names(spec) -> list[str]:
    if isinstance(spec, (list, tuple)):
        names = [str(s).strip() for s in spec]
    else:
        names = [s.strip() for s in str(spec).replace(",", " ").split()]
    if not names or not all(n.isidentifier() for n in names):
        raise FrontendError(f"T.const takes names like \"M, N, K\", got {spec!r}")
    return names


def is_call_to(node: ast.AST, attr: str) -> bool:
    return isinstance(node, ast.Call) and (
        (isinstance(node.func, ast.Attribute) and node.func.attr == attr)
        or (isinstance(node.func, ast.Name) and node.func.id == attr))


class Header:
    """The header statements evaluated with symbolic consts: which dims bind which const."""

    def __init__(self, program: EagerProgram, scalars: tuple):
        self.scalars = scalars
        ns = program._namespace(scalars)
        self.placeholders: dict[str, tvm.tirx.Var] = {}
        self.ann_nodes: dict[str, ast.AST] = {}
        self.ann_types: dict[str, TensorType] = {}
        for stmt in program._stmts:
            if stmt.kind == "plain":
                eval_plain(stmt, ns)
            elif stmt.kind == "const":
                names = _const_names_of(program, stmt, ns)
                for n in names:
                    self.placeholders[n] = tvm.tirx.Var(n, "int32")
                    ns[n] = self.placeholders[n]
            elif stmt.kind == "tensor":
                name = stmt.names[0]
                self.ann_nodes[name] = stmt.node
                value = eval_statement(program, stmt, ns)
                if not isinstance(value, TensorType):
                    raise program._error(stmt.node, f"parameter '{name}' must be annotated "
                                                    f"T.Tensor(shape, dtype), got {value!r}")
                self.ann_types[name] = value
        for name in program.signature.tensor_params:
            if name not in self.ann_types:  # pragma: no cover - collected together
                raise program._error(None, f"parameter '{name}' has no T.Tensor annotation")
        const_vars = set(self.placeholders.values())
        #: tensor parameters whose T.StridedTensor strides name a T.const (the strides key the kernel)
        self.const_strided = {n for n, t in self.ann_types.items() if t.strides is not None and any(
            isinstance(s, tvm.tirx.Var) and s in const_vars for s in t.strides)}
        # A dim is static (part of the cache key) unless it depends on a T.dynamic size.
        self.static_mask = tuple(
            tuple(_is_static(d, const_vars) for d in self.ann_types[n].shape)
            for n in program.signature.tensor_params)

    def bind_consts(self, program: EagerProgram, values: list) -> dict[str, int]:
        consts: dict[str, int] = {}
        by_var = {v: k for k, v in self.placeholders.items()}
        for pos, name in zip(program._tensor_pos, program.signature.tensor_params, strict=True):
            ann = self.ann_types[name]
            arg = values[pos]
            if not (hasattr(arg, "shape") and hasattr(arg, "dtype")):
                raise program._error(self.ann_nodes[name], f"parameter '{name}' expects a tensor "
                                                           f"{ann}, got {type(arg).__name__}")
            shape, _ = packed_view(tuple(int(d) for d in arg.shape), program._dtype(arg.dtype), ann.dtype)
            if len(shape) != len(ann.shape):
                raise program._error(self.ann_nodes[name],
                                     f"parameter '{name}' expects a {len(ann.shape)}-D tensor "
                                     f"{ann}, got shape {shape}")
            for i, (dim, actual) in enumerate(zip(ann.shape, shape, strict=True)):
                const_name = by_var.get(dim) if isinstance(dim, tvm.tirx.Var) else None
                if const_name is not None and const_name not in consts:
                    consts[const_name] = actual
                elif const_name is not None and consts[const_name] != actual:
                    raise program._error(
                        self.ann_nodes[name],
                        f"shape mismatch for parameter '{name}': dim {i} is {const_name} = "
                        f"{consts[const_name]} (bound by an earlier argument), got {actual} "
                        f"(shape {shape})")
            strides = getattr(arg, "stride", None)
            if ann.strides is not None and callable(strides) and str(ann.dtype) == program._dtype(arg.dtype):
                # T.StridedTensor[[N, M], [S0, S1], dt]: a T.const stride binds from the tensor's
                for i, (dim, actual) in enumerate(zip(ann.strides, tuple(int(x) for x in strides()))):
                    const_name = by_var.get(dim) if isinstance(dim, tvm.tirx.Var) else None
                    if const_name is not None and consts.setdefault(const_name, actual) != actual:
                        raise program._error(
                            self.ann_nodes[name],
                            f"stride mismatch for parameter '{name}': stride {i} is {const_name} = "
                            f"{consts[const_name]} (bound earlier), got {actual}")
        missing = [n for n in self.placeholders if n not in consts]
        if missing:
            raise program._error(None, f"T.const {', '.join(missing)} is not the size or stride of any "
                                       f"dimension of a tensor argument, so it cannot be bound")
        return consts

    def types(self, program: EagerProgram, consts: dict[str, int], scalars: tuple):
        """The parameters' annotations and the T.empty types, the consts substituted."""
        ns = program._namespace(scalars)
        ns.update(consts)
        tensors: dict[str, TensorType] = {}
        empties: list[tuple[str, TensorType, ast.AST]] = []
        for stmt in program._stmts:
            if stmt.kind == "const":
                continue
            if stmt.kind == "plain":
                eval_plain(stmt, ns)
                continue
            value = eval_statement(program, stmt, ns)
            if stmt.kind == "tensor":
                tensors[stmt.names[0]] = value
            else:
                if not isinstance(value, TensorType):  # pragma: no cover - T.empty returns one
                    raise program._error(stmt.node, "T.empty(shape, dtype) expected")
                empties.append((stmt.names[0], value, stmt.node))
        return tensors, empties

    def concrete_types(self, program: EagerProgram, consts: dict[str, int], scalars: tuple,
                       values: list):
        """Annotations and T.empty types with the consts substituted, checked against args."""
        tensors, empties = self.types(program, consts, scalars)
        for pos, name in zip(program._tensor_pos, program.signature.tensor_params, strict=True):
            ann, arg = tensors[name], values[pos]
            shape, dtype = packed_view(tuple(int(d) for d in arg.shape), program._dtype(arg.dtype), ann.dtype)
            for i, (dim, actual) in enumerate(zip(ann.shape, shape, strict=True)):
                if isinstance(dim, int) and dim != actual:
                    raise program._error(
                        self.ann_nodes[name],
                        f"shape mismatch for parameter '{name}': expected {ann} but got shape "
                        f"{shape} (dim {i} should be {dim})")
            if dtype != ann.dtype:
                raise program._error(self.ann_nodes[name],
                                     f"dtype mismatch for parameter '{name}': expected "
                                     f"{ann.dtype}, got {dtype}")
        return tensors, empties


def packed_view(shape: tuple, dtype: str, declared: str) -> tuple[tuple, str]:
    """The logical shape and dtype of a tensor argument for a parameter declared ``declared``: a
    byte tensor (uint8, int8, float4_e2m1fn_x2) for a 4-bit parameter holds two elements per byte
    of its last dimension (transform/packed_subbyte.py); any other argument is as it is."""
    from ..transform.packed_subbyte import BYTE_DTYPES, SUBBYTE

    if declared in SUBBYTE and dtype in BYTE_DTYPES and shape:
        return shape[:-1] + (2 * shape[-1],), declared
    return shape, dtype


def _is_static(dim, const_vars: set) -> bool:
    if isinstance(dim, int):
        return True
    if isinstance(dim, tvm.tirx.Var):
        return dim in const_vars
    return all(v in const_vars for v in tvm.tirx.analysis.undefined_vars(dim))


# The key under which a header namespace records the plain statements that failed: name ->
# (statement, exception). Not an identifier a kernel can spell.
_FAILED = "<tilelang failed header statements>"


def eval_statement(program: EagerProgram, stmt: HeaderStmt, ns: dict):
    token = current_eager.set(HeaderEval())
    try:
        return eval(stmt.code, ns)  # noqa: S307 - the user's own kernel source
    except FrontendError as err:
        raise program._error(stmt.node, err.message) from None
    except NameError as err:
        # A name an earlier header statement should have set: report that statement's failure,
        # not this line's NameError (``dtype = T.no_such`` then ``A: T.Tensor(.., dtype)``).
        failed = ns.get(_FAILED, {}).get(getattr(err, "name", None))
        if failed is not None:
            cause_stmt, cause = failed
            raise program._error(cause_stmt.node, f"{type(cause).__name__}: {cause} (needed by the "
                                                  f"annotation on line {stmt.node.lineno})") from None
        raise program._error(stmt.node, f"NameError: {err}; the header of an eager kernel (the "
                                        f"statements before its first 'with') sees the module's "
                                        f"globals, the function's parameters and defaults, and "
                                        f"names assigned above this line") from None
    except Exception as err:  # noqa: BLE001 - report any failure at the user's line
        raise program._error(stmt.node, f"{type(err).__name__}: {err}") from None
    finally:
        current_eager.reset(token)


def eval_plain(stmt: HeaderStmt, ns: dict) -> None:
    """Best effort: a failing plain statement is left to the parser, which reports it; it is
    recorded so that an annotation needing one of its names reports it too."""
    token = current_eager.set(HeaderEval())
    try:
        exec(stmt.code, ns)  # noqa: S102 - the user's own kernel source
    except Exception as err:  # noqa: BLE001 - see docstring
        failed = ns.setdefault(_FAILED, {})
        for name in stmt.names:
            failed.setdefault(name, (stmt, err))
    finally:
        current_eager.reset(token)


def is_tensor_annotation(node: ast.expr) -> bool:
    """``T.Tensor[...]``, ``T.Tensor(...)``, ``T.StridedTensor[...]``, ``T.Buffer(...)``: a
    signature annotation that makes the parameter a tensor (``int``, ``T.dtype`` do not)."""
    head = node.value if isinstance(node, ast.Subscript) else node.func if isinstance(node, ast.Call) else None
    name = head.attr if isinstance(head, ast.Attribute) else getattr(head, "id", "")
    return name.endswith("Tensor") or name == "Buffer"


def is_pointer_annotation(node: ast.expr) -> bool:
    """``T.ptr`` (or ``T.ptr()``): a signature annotation that makes the parameter a pointer, which
    ``T.make_tensor`` turns into a tensor (TileLang's pointer kernels)."""
    head = node.func if isinstance(node, ast.Call) else node
    return isinstance(head, ast.Attribute) and head.attr == "ptr"


def assigned_names(node: ast.stmt) -> tuple[str, ...]:
    names = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store) and sub.id not in names:
            names.append(sub.id)
    return tuple(names)


def is_header_statement(node: ast.stmt, params: tuple[str, ...]) -> bool:
    """An assignment-like statement (or an ``if`` of them) that the header evaluates; T.const,
    T.empty and parameter annotations are handled as their own statement kinds."""
    if isinstance(node, ast.Assign):
        return not (is_call_to(node.value, "const") or is_call_to(node.value, "empty"))
    if isinstance(node, ast.AugAssign):
        return True
    if isinstance(node, ast.AnnAssign):
        return node.value is not None and not (isinstance(node.target, ast.Name)
                                               and node.target.id in params)
    if isinstance(node, ast.If):
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call) and (is_call_to(sub, "const") or is_call_to(sub, "empty")):
                return False
            if isinstance(sub, ast.AnnAssign) and isinstance(sub.target, ast.Name) \
                    and sub.target.id in params:
                return False
            if isinstance(sub, (ast.With, ast.For, ast.While, ast.Return, ast.FunctionDef)):
                return False
        return True
    return False


def _const_names_of(program: EagerProgram, stmt: HeaderStmt, ns: dict) -> list[str]:
    call = stmt.node.value
    if not call.args:
        raise program._error(stmt.node, "T.const needs the names, e.g. T.const(\"M, N, K\")")
    spec = eval(compile(ast.Expression(call.args[0]), program._filename, "eval"), ns)  # noqa: S307
    names = split_names(spec)
    if list(stmt.names) != names:
        raise program._error(stmt.node, f"T.const({spec!r}) must be assigned to the same names "
                                        f"in the same order: {', '.join(names)}")
    return names


class HeaderEval:
    """Marks header evaluation: T.empty returns its type instead of a buffer."""

    def empty(self, shape, dtype):
        return TensorType(shape, dtype)


__all__ = ["Header", "HeaderEval", "HeaderStmt", "assigned_names", "eval_plain", "eval_statement", "is_call_to",
           "is_header_statement", "is_tensor_annotation", "packed_view", "split_names"]
