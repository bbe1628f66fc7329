"""Atomics that are expressions: ``old = T.atomic_add(A[i], v, return_prev=True)`` and
``T.atomic_load(A[i])``.

Statement atomics are the tile op ``Atomic`` (ops.py). An atomic whose value the kernel uses is a
call in an expression instead, of one of two ops:

``tl.atomic_rmw(dst, value, kind, memory_order)``
    Combine ``value`` into the element ``dst`` (a TensorLoad: the element, not its value) like
    ``Atomic`` of that kind, and give the element's previous contents. It has effects: the
    frontend always binds it (``old = Bind(tl.atomic_rmw(...))``), so it happens exactly once
    where the user wrote it, however often ``old`` is used; backends lower the Bind.
``tl.atomic_load(src, memory_order)``
    The element ``src`` read atomically. A read may be repeated, so it is an expression anywhere
    (``while T.atomic_load(flag, "acquire") == 0``: read again on every test).

``kind`` and ``memory_order`` are string immediates. Both ops are thread-level, like TileLang's:
every thread that evaluates one performs it (inside a T.Parallel body, once per element).

Example::

    call = AtomicCall("add", A_load, value, "acq_rel").to_call()
    AtomicCall.from_call(call).kind                  # "add"
"""

from __future__ import annotations

from dataclasses import dataclass

import tvm
import tvm_ffi
from tvm import tirx
from tvm.tirx import CallEffectKind

from ..errors import FrontendError
from .ops import ATOMIC_KINDS, INTEGER_ATOMIC_KINDS, LOAD_ORDERS, MEMORY_ORDERS, check_memory_order

RMW_OP = "tl.atomic_rmw"
LOAD_OP = "tl.atomic_load"
TILE_ATOMIC_OP = "tl.tile.atomic"
#: the kinds an atomic_rmw call can have (store returns nothing)
RMW_KINDS = tuple(k for k in ATOMIC_KINDS if k != "store")


def _register(name: str, effect: CallEffectKind, printer: str) -> None:
    try:
        tvm.ir.Op.get(name)
        return  # module reloaded: the TVM op outlives the Python module
    except Exception:  # noqa: BLE001 - Op.get raises a TVM error for unknown names
        pass
    # (the first register_op_attr on an unknown name creates the op)
    tvm.ir.register_op_attr(name, "TCallEffectKind", effect.value)
    tvm.ir.register_op_attr(name, "TScriptPrinterName", printer)


# An RMW must never be dropped, merged or moved by a generic pass: opaque. A load only reads.
_register(RMW_OP, CallEffectKind.Opaque, "tl_atomic_rmw")
_register(LOAD_OP, CallEffectKind.ReadState, "tl_atomic_load")


@dataclass
class AtomicCall:
    """One ``tl.atomic_rmw`` (``kind`` in RMW_KINDS) or ``tl.atomic_load`` (``kind == "load"``)."""

    kind: str
    dst: tvm.ir.TensorLoad
    value: object = None
    memory_order: str = "relaxed"

    def __post_init__(self):
        what = f"T.atomic_{self.kind}"
        if self.kind != "load" and self.kind not in RMW_KINDS:
            raise FrontendError(f"unknown atomic kind {self.kind!r}; use one of {RMW_KINDS}")
        allowed = LOAD_ORDERS if self.kind == "load" else MEMORY_ORDERS
        self.memory_order = check_memory_order(self.memory_order, what, allowed)
        if not (isinstance(self.dst, tvm.ir.TensorLoad) and tirx.is_buffer_var(self.dst.source)):
            raise FrontendError(f"{what}: the {'source' if self.kind == 'load' else 'destination'} "
                                f"must be one element of a buffer, like A[i, j]; got {self.dst}")
        if any(not _is_scalar(i) for i in self.dst.indices):
            raise FrontendError(f"{what}: {self.dst} must be a single element (a slice or a vector "
                                f"index has no single previous value)")
        if self.kind in INTEGER_ATOMIC_KINDS and not self.dtype.startswith(("int", "uint")):
            raise FrontendError(f"{what} is a bitwise atomic: '{self.dst.source.name}' must have an "
                                f"integer type, not {self.dtype}")
        if self.kind != "load":
            if isinstance(self.value, (bool, int, float)):
                self.value = tirx.const(self.value, self.dtype)
            if not (isinstance(self.value, tvm.ir.Expr) and tvm.ir.is_prim_expr(self.value)):
                raise FrontendError(f"{what}(return_prev=True): the value must be a scalar "
                                    f"expression, got {self.value!r}")
            if str(self.value.ty) != self.dtype:
                self.value = tirx.Cast(self.dtype, self.value)

    @property
    def dtype(self) -> str:
        return str(self.dst.source.ty.dtype)

    @property
    def buffer(self):
        return self.dst.source

    def to_call(self):
        order = tvm.ir.StringImm(self.memory_order)
        if self.kind == "load":
            return tirx.call_intrin(self.dtype, LOAD_OP, self.dst, order)
        return tirx.call_intrin(self.dtype, RMW_OP, self.dst, self.value, tvm.ir.StringImm(self.kind),
                                order)

    @staticmethod
    def from_call(call) -> AtomicCall:
        name = str(call.op.name)
        if name == LOAD_OP:
            return AtomicCall("load", call.args[0], None, str(call.args[1].value))
        if name == RMW_OP:
            return AtomicCall(str(call.args[2].value), call.args[0], call.args[1],
                              str(call.args[3].value))
        raise TypeError(f"not an atomic call: {call}")


def _is_scalar(index) -> bool:
    return tvm.runtime.DataType(str(index.ty)).lanes == 1


def fmt_element(load) -> str:
    """``A[i, j]`` for messages (TVM prints a load of a one-element buffer as just ``A``)."""
    if isinstance(load, tvm.ir.TensorLoad):
        return f"{load.source.name}[{', '.join(str(i) for i in load.indices)}]"
    return str(load)


def user_name(call) -> str:
    """How the kernel wrote ``call``: ``T.atomic_load`` or ``T.atomic_<kind>(return_prev=True)``."""
    if str(call.op.name) == LOAD_OP:
        return "T.atomic_load"
    return f"T.atomic_{call.args[2].value}(return_prev=True)"


def is_atomic_call(expr) -> bool:
    """Whether ``expr`` is a ``tl.atomic_rmw`` or ``tl.atomic_load`` call."""
    op = getattr(expr, "op", None)
    return isinstance(op, tvm.ir.Op) and str(op.name) in (RMW_OP, LOAD_OP)


def atomic_calls(node) -> list:
    """Every atomic call in ``node`` (statement or expression), in no particular order."""
    found = []
    tvm_ffi.structural_walk(node, [(tvm.ir.Call, lambda c: found.append(c) if is_atomic_call(c) else None)])
    return found


def is_parallel_loop(node) -> bool:
    return isinstance(node, tirx.For) and node.annotations is not None and "tl.parallel" in node.annotations


def has_thread_atomics(stmt) -> bool:
    """Whether ``stmt`` performs an atomic per thread outside T.Parallel loops: a per-thread
    ``Atomic`` tile op or an ``atomic_rmw`` call. Such a statement must run once per thread even
    when it does not mention the thread index (``T.atomic_add(count[0], 1)`` counts threads);
    inside a T.Parallel body an atomic is per element instead."""
    found = []

    def visit(node):
        if found or is_parallel_loop(node):
            return
        if isinstance(node, tirx.TilePrimitiveCall):
            if str(node.op.name) == TILE_ATOMIC_OP:
                per_thread = node.config.get("per_thread", None)
                if per_thread is not None and bool(per_thread):
                    found.append(node)
            return
        if isinstance(node, (tirx.Bind, tirx.BufferStore, tirx.Evaluate)):
            if any(str(c.op.name) == RMW_OP for c in atomic_calls(node)):
                found.append(node)
            return
        for child in _children(node):
            visit(child)

    visit(stmt)
    return bool(found)


def _children(node) -> list:
    if isinstance(node, tirx.SeqStmt):
        return list(node.seq)
    if isinstance(node, tirx.IfThenElse):
        return [node.then_case] + ([node.else_case] if node.else_case is not None else []) \
            + [tirx.Evaluate(node.condition)]
    if isinstance(node, tirx.While):
        return [node.body, tirx.Evaluate(node.condition)]
    body = getattr(node, "body", None)
    return [body] if isinstance(body, tirx.Stmt) else []


__all__ = ["LOAD_OP", "RMW_KINDS", "RMW_OP", "AtomicCall", "atomic_calls", "fmt_element", "has_thread_atomics",
           "is_atomic_call", "is_parallel_loop", "user_name"]
