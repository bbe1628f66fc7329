"""What a compiled kernel expects of each argument, read once from the tirx PrimFunc.

``KernelParam`` is the public description (``kernel.params``); ``Dim`` is the internal form of one
shape entry that the argument checker and the launcher generator both consume, so that the fast
path and the error messages can never disagree about what a parameter needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from ..errors import ConfigError, LaunchError


@dataclass(frozen=True)
class Dim:
    """One entry of a buffer shape: a constant, a symbolic variable, or an expression of them.

    ``py`` is the expression as Python source over variable names (None when it has an operator we
    do not translate); ``vars`` the names it reads.
    """

    value: int | None = None          # constant extent
    var: str | None = None            # bare symbolic variable
    py: str | None = None             # compound expression, as Python source
    text: str = ""                    # as TVMScript prints it, for messages
    vars: tuple[str, ...] = ()


@dataclass(frozen=True)
class KernelParam:
    """One parameter of a compiled kernel.

    ``shape`` holds ints for constant extents and strings for symbolic ones (``"n"``, ``"n * 2"``);
    scalars have ``kind == "scalar"`` and ``shape == ()``.

        >>> kernel.params[0]                                        # doctest: +SKIP
        KernelParam(name='A', kind='tensor', dtype='float32', shape=('n', 128), is_output=False)
    """

    name: str
    kind: str
    dtype: str
    shape: tuple = ()
    is_output: bool = False
    index: int = field(default=0, repr=False, compare=False)
    dims: tuple[Dim, ...] = field(default=(), repr=False, compare=False)
    #: constant strides in elements, or None when the buffer is compact row-major
    strides: tuple | None = field(default=None, repr=False, compare=False)
    #: byte alignment the generated code assumes for the data pointer (TVM's data_alignment)
    alignment: int = field(default=1, repr=False, compare=False)
    #: declared ``T.ptr`` and made a tensor with ``T.make_tensor``: besides a tensor, the call may
    #: pass an integer data pointer (TileLang's cython convention), taken on trust
    pointer: bool = field(default=False, repr=False, compare=False)
    #: a 4-bit tensor (``float4_e2m1fn``, ``int4``) compiled as its bytes (``dtype`` int8, the last
    #: dimension halved; transform/packed_subbyte.py): the call may pass uint8, int8 or
    #: float4_e2m1fn_x2 bytes; an output is returned as float4_e2m1fn_x2 where torch has it
    packed: str | None = field(default=None, repr=False, compare=False)
    #: never touched by the kernel and left out of the compiled function (jit/unused_params.py):
    #: the call may pass None or any tensor for it
    unused: bool = field(default=False, repr=False, compare=False)

    @property
    def is_tensor(self) -> bool:
        return self.kind == "tensor"


# PrimExpr class name -> Python binary operator. FloorDiv/FloorMod match Python's // and % on ints.
_BINOPS = {"Add": "+", "Sub": "-", "Mul": "*", "FloorDiv": "//", "FloorMod": "%"}
_CALLS = {"Min": "min", "Max": "max"}


def _translate(expr, names: set[str]) -> str | None:
    kind = type(expr).__name__
    if kind == "IntImm":
        return str(int(expr.value))
    if kind == "Var":
        names.add(expr.name)
        return expr.name
    if kind in _BINOPS or kind in _CALLS:
        a, b = _translate(expr.a, names), _translate(expr.b, names)
        if a is None or b is None:
            return None
        return f"({a} {_BINOPS[kind]} {b})" if kind in _BINOPS else f"{_CALLS[kind]}({a}, {b})"
    return None


_COMPARES = {"EQ": "==", "NE": "!=", "LT": "<", "LE": "<=", "GT": ">", "GE": ">=", "And": "and", "Or": "or"}


def _condition(expr, names: set[str]) -> str | None:
    """A boolean PrimExpr as Python source over variable names (None where it cannot be)."""
    kind = type(expr).__name__
    if kind == "Not":
        inner = _condition(expr.a, names)
        return None if inner is None else f"(not {inner})"
    if kind in _COMPARES:
        logical = kind in ("And", "Or")
        a = _condition(expr.a, names) if logical else _translate(expr.a, names)
        b = _condition(expr.b, names) if logical else _translate(expr.b, names)
        return None if a is None or b is None else f"({a} {_COMPARES[kind]} {b})"
    return _translate(expr, names)


@dataclass(frozen=True)
class HostAssume:
    """A T.assume over the arguments (language/assumes.py): checked at every call."""

    py: str                 # the condition as Python source over parameter / size names
    text: str               # as the user reads it ("N % 4 == 0")
    vars: tuple[str, ...]   # the names it reads
    reason: str = ""        # what a failed check says, for a condition the compiler added (not a T.assume)


def read_assumes(func) -> tuple[tuple[HostAssume, ...], list]:
    """The ``tl.host_assumes`` of ``func`` that can be checked in Python, and the same conditions
    as PrimExprs (facts the backends may rely on, since every call checks them)."""
    attrs = getattr(func, "attrs", None)
    if attrs is None or "tl.host_assumes" not in attrs:
        return (), []
    out, checked = [], []
    conds = list(attrs["tl.host_assumes"])
    reasons = [str(r) for r in attrs["tl.host_assume_reasons"]] if "tl.host_assume_reasons" in attrs else []
    reasons += [""] * (len(conds) - len(reasons))
    for cond, reason in zip(conds, reasons, strict=True):
        names: set[str] = set()
        py = _condition(cond, names)
        if py is not None:
            out.append(HostAssume(py=py, text=str(cond), vars=tuple(sorted(names)), reason=reason))
            checked.append(cond)
    return tuple(out), checked


def _dim(expr) -> Dim:
    kind = type(expr).__name__
    text = str(expr)
    if kind == "IntImm":
        return Dim(value=int(expr.value), text=text)
    if kind == "Var":
        return Dim(var=expr.name, text=expr.name, vars=(expr.name,))
    names: set[str] = set()
    return Dim(py=_translate(expr, names), text=text, vars=tuple(sorted(names)))


def read_params(func, out_idx: Sequence[int] | int | None, kernel: str) -> tuple[KernelParam, ...]:
    """Parameters of ``func`` (a tvm.tirx.PrimFunc), with ``out_idx`` marking the outputs."""
    import tvm  # the PrimFunc came from tvm, so this import is already paid for

    from ..language.pointers import pointer_param_indices
    from ..transform.packed_subbyte import packed_param_dtypes

    raw = list(func.params)
    outputs = normalize_out_idx(out_idx, len(raw), kernel, [p.name for p in raw])
    pointers = pointer_param_indices(func)
    packed = packed_param_dtypes(func)
    params = []
    for index, var in enumerate(raw):
        if tvm.tirx.is_buffer_var(var):
            dims = tuple(_dim(e) for e in var.shape)
            strides = None
            if len(var.strides):
                strides = tuple(int(s.value) if type(s).__name__ == "IntImm" else str(s)
                                for s in var.strides)
            params.append(KernelParam(
                name=var.name, kind="tensor", dtype=str(var.dtype), index=index, dims=dims,
                shape=tuple(d.value if d.value is not None else d.text for d in dims),
                is_output=index in outputs, strides=strides,
                alignment=max(int(var.data_alignment), 1), pointer=index in pointers,
                packed=packed.get(index)))
        else:
            if str(var.ty).startswith("T.handle") or isinstance(var.ty, tvm.ir.PointerType):
                raise ConfigError(f"kernel '{kernel}': parameter '{var.name}' is a T.ptr that no "
                                  f"T.make_tensor turns into a tensor; write "
                                  f"'{var.name}_t = T.make_tensor({var.name}, shape, dtype)' before "
                                  f"the first T.Kernel, or declare it T.Tensor(shape, dtype)")
            if index in outputs:
                raise ConfigError(f"out_idx of kernel '{kernel}' names parameter {index} "
                                  f"('{var.name}'), a scalar; only buffers can be outputs")
            params.append(KernelParam(name=var.name, kind="scalar", dtype=str(var.ty), index=index,
                                      dims=(Dim(var=var.name, text=var.name, vars=(var.name,)),)))
    return tuple(params)


def normalize_out_idx(out_idx, count: int, kernel: str, names: Sequence[str]) -> frozenset[int]:
    """``out_idx`` (None, an int, or a list; negative counts from the end) -> set of indices."""
    if out_idx is None:
        return frozenset()
    items = [out_idx] if isinstance(out_idx, int) else list(out_idx)
    result = set()
    for item in items:
        if not isinstance(item, int) or isinstance(item, bool):
            raise ConfigError(f"out_idx of kernel '{kernel}' must hold ints, got {item!r}")
        if not -count <= item < count:
            raise ConfigError(f"out_idx={out_idx!r} is out of range for kernel '{kernel}', which has "
                              f"{count} parameters ({', '.join(names)})")
        index = item % count
        if index in result:
            raise ConfigError(f"out_idx={out_idx!r} of kernel '{kernel}' names parameter "
                              f"'{names[index]}' twice")
        result.add(index)
    return frozenset(result)


def check_outputs_allocatable(params: Sequence[KernelParam], kernel: str) -> None:
    """Every output's shape must follow from the inputs, or we could not allocate it."""
    known = set()
    for p in params:
        if not p.is_output:
            known.update(d.var for d in p.dims if d.var)
    for p in params:
        if not p.is_output:
            continue
        for d in p.dims:
            missing = [v for v in d.vars if v not in known]
            if missing or (d.value is None and d.var is None and d.py is None):
                why = (f"{', '.join(missing)} is set by no input" if missing
                       else f"extent {d.text} cannot be evaluated from Python")
                raise LaunchError(f"kernel '{kernel}' cannot allocate output '{p.name}' of shape "
                                  f"{p.shape}: {why}; drop '{p.name}' from out_idx and pass it "
                                  f"explicitly")
