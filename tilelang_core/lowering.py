"""The lowering rule table: how each tile op becomes loops/intrinsics, per backend.

A backend registers one rule per tile op it supports::

    from tilelang_core.lowering import register_lowering

    @register_lowering("copy", "cpu")
    def lower_copy(call, ctx):          # call: tvm.tirx.TilePrimitiveCall
        return ...                      # a tvm.tirx.Stmt with no tile op left in it

The generic pass ``tilelang_core.transform.LowerTileOps(kind)`` looks every tile op up here, so adding
a backend never edits the core, and a missing rule is reported once, naming the op, the backend and
where to report it (JAX Pallas' habit).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable

from .errors import LoweringError

#: prefix under which the frontend registers tile ops (docs/tile-ir.md)
TILE_OP_PREFIX = "tl.tile."

LoweringRule = Callable[[Any, "LoweringContext"], Any]

_RULES: dict[tuple[str, str], LoweringRule] = {}


def _full_name(op_name: str) -> str:
    return op_name if op_name.startswith(TILE_OP_PREFIX) else TILE_OP_PREFIX + op_name


def short_name(op_name: str) -> str:
    """``tl.tile.copy`` -> ``copy`` (for messages)."""
    return op_name[len(TILE_OP_PREFIX):] if op_name.startswith(TILE_OP_PREFIX) else op_name


def register_lowering(op_name: str, backend_kind: str, *, override: bool = False):
    """Decorator registering ``rule(call, ctx) -> Stmt`` for tile op ``op_name`` on ``backend_kind``.

    ``op_name`` may be given short (``"copy"``) or full (``"tl.tile.copy"``). Registering the same
    (op, backend) twice is an error unless ``override=True``: two rules silently racing on import
    order is the bug we want to hear about.
    """
    key = (_full_name(op_name), backend_kind)

    def decorator(rule: LoweringRule) -> LoweringRule:
        if key in _RULES and not override and _RULES[key] is not rule:
            raise LoweringError(
                f"a lowering rule for tile op '{key[0]}' on backend '{backend_kind}' is already "
                f"registered ({_RULES[key].__module__}.{_RULES[key].__qualname__}); pass "
                f"override=True to replace it")
        _RULES[key] = rule
        return rule

    return decorator


def has_lowering(op_name: str, backend_kind: str) -> bool:
    return (_full_name(op_name), backend_kind) in _RULES


def get_lowering(op_name: str, backend_kind: str) -> LoweringRule:
    """The rule for ``op_name`` on ``backend_kind``; LoweringError naming both when there is none."""
    rule = _RULES.get((_full_name(op_name), backend_kind))
    if rule is None:
        supported = sorted(short_name(op) for op, kind in _RULES if kind == backend_kind)
        raise LoweringError(
            f"tile op '{short_name(op_name)}' ({_full_name(op_name)}) has no lowering rule for "
            f"backend '{backend_kind}'. Ops this backend lowers: {', '.join(supported) or '(none)'}. "
            f"This is a gap in the backend, not in your kernel: please report it to the issue tracker "
            f"of the package providing the backend (tilelang-{backend_kind}) with the kernel that "
            f"triggered it.")
    return rule


def registered_ops(backend_kind: str) -> list[str]:
    """Short names of the ops ``backend_kind`` can lower, sorted (for doctor and tests)."""
    return sorted(short_name(op) for op, kind in _RULES if kind == backend_kind)


def user_span(node):
    """The span of the user's line a node carries, or None. A statement a ``T.macro`` expanded
    carries a SequentialSpan (the call's line, then the macro body's): its first line counts."""
    span = getattr(node, "span", None)
    for part in getattr(span, "spans", None) or [span]:
        if part is not None and getattr(part, "source_name", None) is not None:
            return part
    return None


def source_location(node) -> str | None:
    """``file:line:col`` of a node the frontend gave a span (tile ops carry the user's line)."""
    span = user_span(node)
    if span is None:
        return None
    return f"{span.source_name.name}:{span.line}:{span.column}"


def frontend_error_at(node, kernel: str, message: str):
    """A FrontendError for ``message`` at the user's line ``node`` carries (the kernel alone
    where it carries none), with that line and a caret, as the parser's errors have."""
    import linecache

    from .errors import FrontendError

    span = user_span(node)
    if span is None:
        return FrontendError(message, kernel=kernel)
    filename = span.source_name.name
    return FrontendError(message, filename=filename, lineno=span.line, col=span.column,
                         source_line=linecache.getline(filename, span.line) or None, kernel=kernel)


@dataclass
class LoweringContext:
    """What a rule may know beyond its call.

    ``analyzer`` has every loop variable and launch index of the function bound to its range, so a
    rule can drop bounds checks it can prove (``ctx.analyzer.can_prove(i < n)``). ``options`` are
    the backend's compile options; ``kernel`` names the function for messages; ``call`` is the
    tile op being lowered (set by LowerTileOps), whose source line ``error`` reports.
    ``thread_group`` is None for ops the whole block performs, and ``(thread_var, num_threads)``
    for ops under a condition that selects a range of threads (transform/thread_ranges.py):
    ``thread_var`` counts from 0 within the group. ``memory_bindings`` maps the names the kernel
    binds to values read from memory (transform/bindings.py), which the analyzer does not know;
    ``register_stores`` the values stored into per-thread variables (T.alloc_var), by buffer;
    ``group_firsts`` the block thread index of each thread group's first thread, by group index.
    """

    backend_kind: str
    kernel: str
    analyzer: Any
    options: Any = None
    call: Any = None
    thread_group: Any = None
    memory_bindings: Any = None
    register_stores: Any = None
    group_firsts: Any = None

    def narrowed(self, thread_var, num_threads: int) -> "LoweringContext":
        """This context for the ops of a group of ``num_threads`` threads indexed by ``thread_var``
        (a subclass carrying per-thread state overrides this to narrow that state too)."""
        return replace(self, thread_group=(thread_var, num_threads))

    def error(self, op_name: str, message: str) -> LoweringError:
        """A LoweringError that names the kernel, the op, the backend and the user's line."""
        text = (f"cannot lower tile op '{short_name(op_name)}' in kernel '{self.kernel}' for "
                f"backend '{self.backend_kind}': {message}")
        where = source_location(self.call)
        return LoweringError(text + (f"\n  --> {where}" if where else ""))


def in_bounds(analyzer, indices, shape):
    """``0 <= index < extent`` over every dimension the analyzer cannot prove, joined with And;
    None when every access is provably inside. Rules predicate ragged global tiles with it (reads
    past the end give 0, writes are skipped) without paying for checks that are always true."""
    from tvm import tirx

    terms = []
    for index, extent in zip(indices, shape):
        if not analyzer.can_prove(index >= 0):
            terms.append(index >= 0)
        if not analyzer.can_prove(index < extent):
            terms.append(index < extent)
    if not terms:
        return None
    cond = terms[0]
    for term in terms[1:]:
        cond = tirx.And(cond, term)
    return cond


def nan_propagating(combine):
    """``combine(a, b)`` (a max or min) made to return NaN when either side is NaN, the way
    ``T.reduce_max(..., nan_propagate=True)`` means it on every backend."""
    from tvm import tirx

    def isnan(x):  # (TVM's CUDA isnan knows no 16-bit floats: test the widened value)
        dtype = str(x.ty)
        return tirx.isnan(tirx.Cast("float32", x) if dtype in ("float16", "bfloat16") else x)

    def propagate(a, b):
        return tirx.if_then_else(isnan(a), a, tirx.if_then_else(isnan(b), b, combine(a, b)))

    return propagate
