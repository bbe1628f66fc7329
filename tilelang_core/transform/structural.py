"""``tvm_ffi.structural_map/walk`` whose callbacks may raise our errors.

A Python exception raised inside a structural callback crosses the FFI boundary twice and comes
back as a bare ``RuntimeError``: a rule's LoweringError would lose its type (and `except
LoweringError` in user code would miss it). These wrappers keep the first exception a callback
raises, let the traversal finish without further work, and re-raise the exception itself.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import tvm_ffi


def _guard(entries: Sequence[tuple[Any, Callable]], box: list) -> list:
    def wrap(fn):
        def guarded(node, *rest):
            if box:
                return node  # an earlier callback failed: stop doing work, keep the tree
            try:
                return fn(node, *rest)
            except BaseException as exc:  # noqa: BLE001 - re-raised below, unchanged
                box.append(exc)
                return node

        return guarded

    return [(types, wrap(fn)) for types, fn in entries]


def structural_map(root, entries: Sequence[tuple[Any, Callable]], order: str = "post"):
    box: list = []
    out = tvm_ffi.structural_map(root, _guard(entries, box), order=order)
    if box:
        raise box[0]
    return out


def structural_walk(root, entries: Sequence[tuple[Any, Callable]], order: str = "post") -> None:
    box: list = []

    def visit_only(fn):
        def visit(node):
            fn(node)  # a walk callback's return value steers the walk: never hand ours back

        return visit

    tvm_ffi.structural_walk(root, [(t, visit_only(f)) for t, f in _guard(entries, box)], order=order)
    if box:
        raise box[0]


def stmt_children(node) -> list:
    """The statements directly inside ``node``: a SeqStmt's, both branches of an if, a loop's or
    attribute's body (for walks that carry state down, which structural_walk cannot)."""
    from tvm import tirx

    if isinstance(node, tirx.SeqStmt):
        return list(node.seq)
    if isinstance(node, tirx.IfThenElse):
        return [node.then_case] + ([node.else_case] if node.else_case is not None else [])
    body = getattr(node, "body", None)
    return [body] if isinstance(body, tirx.Stmt) else []


def seq(stmts) -> Any:
    """One statement for ``stmts`` in order: nested sequences flattened, Nones dropped, a single
    statement as itself (TVM refuses a SeqStmt of one), a no-op for none."""
    from tvm import tirx

    flat = []
    for s in stmts:
        if s is None:
            continue
        flat.extend(s.seq if isinstance(s, tirx.SeqStmt) else [s])
    if not flat:
        return tirx.Evaluate(tirx.const(0, "int32"))
    return flat[0] if len(flat) == 1 else tirx.SeqStmt(flat)
