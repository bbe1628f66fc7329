"""Names bound in kernel code (``q_idx = bx * block_M + i``): what passes may assume about them.

The frontend turns ``x = expr`` into a ``tirx.Bind``: an immutable name, evaluated where it
stands, visible to the statements after it in the same scope (TVM 0.27 Binds have no body).
Three facts keep every later pass honest about them:

* ``is_pure(expr)``: a value that reads no memory and calls nothing with side effects means the
  same wherever it is evaluated, so a pass may inline it (into vector lanes, into a copy that a
  pipeline issues stages ahead) or hand it to the analyzer as a rewrite. A value that reads
  memory must stay where the author put it.
* ``unique_bindings(stmt)``: passes that copy code (a peeled first iteration, a producer and a
  consumer of the same loop body) leave one variable bound in several places, with different
  values. TVM's ConvertSSA renames those before codegen; the analyzer (which refuses a second
  binding of a name to a different range) and everything keyed by variable identity need the
  renaming earlier, so LowerTileOps does it first.
* ``drop_bindings``: the Binds of a statement removed after their values were inlined.

Example::

    body = unique_bindings(func.body)    # every Bind and loop variable defined once
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

#: CallEffectKind at or below which a call is a pure function of its arguments (kExprAnnotation,
#: kPure); reading state, updating it, and opaque externs are above
_PURE_EFFECT = 1


def call_effect(call) -> int | None:
    """The CallEffectKind of ``call``'s operator (0 kExprAnnotation, 1 kPure, 2 kReadState,
    3 kUpdateState, ...), or None where it has none (a call of a function, not an operator): then
    assume the worst."""
    op = getattr(call, "op", None)
    if not isinstance(op, tvm.ir.Op):
        return None
    try:
        effect = op.get_attr("TCallEffectKind")
    except Exception:  # noqa: BLE001 - an op without the attribute
        return None
    return None if effect is None else int(effect)


def calls_above(node, effect: int) -> bool:
    """Whether ``node`` calls anything whose effect kind is above ``effect`` (or unknown)."""
    found = []

    def on_call(call):
        kind = call_effect(call)
        if kind is None or kind > effect:
            found.append(call)

    tvm_ffi.structural_walk(node, [(tvm.ir.Call, on_call)])
    return bool(found)


def is_pure(expr) -> bool:
    """Whether ``expr`` reads no memory and calls only pure operators (index arithmetic, casts,
    min/max, ``if_then_else``, math): its value depends on the variables in it alone."""
    loads = []
    tvm_ffi.structural_walk(expr, [(tvm.ir.TensorLoad, loads.append)])
    return not loads and not calls_above(expr, _PURE_EFFECT)


def reads_any(expr, buffers) -> bool:
    """Whether ``expr`` loads an element of any of ``buffers``."""
    found = []
    tvm_ffi.structural_walk(expr, [(tvm.ir.TensorLoad, lambda ld: found.append(
        any(ld.source.same_as(b) for b in buffers)))])
    return any(found)


def written_buffers(stmt) -> list:
    """Buffers ``stmt`` may write: stores, tile-op destinations, and any buffer whose address a
    helper call takes (atomics)."""
    from ..ir import TileOp, is_tile_op

    found = []

    def note(buffer):
        if not any(buffer.same_as(b) for b in found):
            found.append(buffer)

    def on_call(call):
        if is_tile_op(call):
            for region in TileOp.from_stmt(call).writes:
                note(region.source)

    def on_eval(ev):
        def on_address(call):
            if getattr(call.op, "name", "") == "tirx.address_of" and isinstance(call.args[0], tvm.ir.TensorLoad):
                note(call.args[0].source)

        tvm_ffi.structural_walk(ev, [(tvm.ir.Call, on_address)])

    def on_atomic(call):  # old = T.atomic_add(A[i], v, return_prev=True): a Bind that writes A
        if getattr(call.op, "name", "") == "tl.atomic_rmw" and isinstance(call.args[0], tvm.ir.TensorLoad):
            note(call.args[0].source)

    tvm_ffi.structural_walk(stmt, [(tirx.BufferStore, lambda st: note(st.buffer)),
                                   (tirx.TilePrimitiveCall, on_call), (tirx.Evaluate, on_eval),
                                   (tvm.ir.Call, on_atomic)])
    return found


def is_invariant(expr, written) -> bool:
    """Whether ``expr`` has the same value wherever and by whichever thread it is evaluated in
    the kernel: pure, or reading only global tensors the kernel never writes (``written``, from
    ``written_buffers``; a block table, an index list). Such a value may be inlined into a copy
    that a pipeline issues iterations ahead, or that a producer warpgroup issues."""
    loads = []
    tvm_ffi.structural_walk(expr, [(tvm.ir.TensorLoad, loads.append)])
    for load in loads:
        buffer = load.source
        if str(buffer.ty.storage_scope) not in ("global", "") or any(buffer.same_as(b) for b in written):
            return False
    return is_pure(_without_loads(expr)) if loads else is_pure(expr)


def _without_loads(expr):
    return tvm_ffi.structural_map(expr, [(tvm.ir.TensorLoad, lambda l: tirx.const(0, str(l.ty)))])


def bound_vars(stmt) -> list:
    """The variables ``stmt`` binds (``Bind``), in program order."""
    found = []
    tvm_ffi.structural_walk(stmt, [(tirx.Bind, lambda b: found.append(b.var))], order="pre")
    return found


def memory_bindings(stmt) -> dict:
    """``{var: value}`` of the Binds in ``stmt`` whose values read memory or call anything impure
    (``e = expert_ids[bx]``): the analyzer knows nothing of these names (LowerTileOps binds only
    pure values), so a rule that must know what one depends on looks its value up here."""
    found = {}

    def on_bind(bind):
        if isinstance(bind.value.ty, tvm.ir.PrimType) and not is_pure(bind.value):
            found[bind.var] = bind.value

    tvm_ffi.structural_walk(stmt, [(tirx.Bind, on_bind)])
    return found


def register_stores(stmt) -> dict:
    """``{buffer: [values]}``: every value ``stmt`` stores into a per-thread buffer (``T.alloc_var``,
    ``T.alloc_local``; scopes ``local*``), keyed by the buffer's handle. What such a variable can
    hold is one of these (or its initial value, also a store); a rule asking whether it is the same
    for several threads asks of them."""
    found: dict = {}

    def on_store(store):
        if str(store.buffer.ty.storage_scope).startswith("local"):
            found.setdefault(store.buffer.__chandle__(), []).append(store.value)

    tvm_ffi.structural_walk(stmt, [(tirx.BufferStore, on_store)])
    return found


def uses_any(node, variables) -> bool:
    """Whether any of ``variables`` (matched by identity) occurs in ``node``."""
    if not variables:
        return False
    found = []

    def on_var(v):
        if not found and any(v.same_as(x) for x in variables):
            found.append(v)

    tvm_ffi.structural_walk(node, [(tvm.ir.Var, on_var)])
    return bool(found)


def _substitute(node, env: dict):
    if not env:
        return node

    def on_var(v):
        for old, new in env.items():
            if v.same_as(old):
                return new
        return v

    return tvm_ffi.structural_map(node, [(tvm.ir.Var, on_var)])


def unique_bindings(stmt):
    """``stmt`` with every Bind variable and loop variable defined once: a second definition of
    the same variable object gets a fresh variable of the same name and type, and the statements
    in its scope use that one. The first definition keeps its variable, so facts a pass recorded
    about it stay valid; a statement without duplicates comes back as it is."""
    defined = []
    tvm_ffi.structural_walk(stmt, [(tirx.Bind, lambda b: defined.append(b.var)),
                                   (tirx.For, lambda f: defined.append(f.loop_var))])
    if not _repeats(defined):
        return stmt
    seen: dict = {}  # hash -> variables defined so far

    def define(var, env):
        same = seen.setdefault(hash(var), [])
        if any(var.same_as(s) for s in same):
            new = tirx.Var(str(var.name), var.ty)
            return new, {**env, var: new}
        same.append(var)
        return var, env

    def visit(node, env):
        if isinstance(node, tirx.SeqStmt):
            out = []
            for child in node.seq:
                if isinstance(child, tirx.Bind):
                    value = _substitute(child.value, env)
                    var, env = define(child.var, env)
                    out.append(tirx.Bind(var, value, child.span))
                else:
                    out.append(visit(child, env))
            return tirx.SeqStmt(out)
        if isinstance(node, tirx.Bind):  # alone in its scope: nothing after it sees it
            var, _ = define(node.var, env)
            return tirx.Bind(var, _substitute(node.value, env), node.span)
        if isinstance(node, tirx.For):
            lo, extent = _substitute(node.min, env), _substitute(node.extent, env)
            var, inner = (node.loop_var, env) if node.thread_binding is not None else define(node.loop_var, env)
            return tirx.For(var, lo, extent, node.kind, visit(node.body, inner), node.thread_binding,
                            node.annotations, step=node.step, span=node.span)
        if isinstance(node, tirx.AttrStmt):
            return tirx.AttrStmt(_substitute(node.node, env), node.attr_key, _substitute(node.value, env),
                                 visit(node.body, env), node.span)
        if isinstance(node, tirx.IfThenElse):
            return tirx.IfThenElse(_substitute(node.condition, env), visit(node.then_case, env),
                                   visit(node.else_case, env) if node.else_case is not None else None,
                                   node.span)
        if isinstance(node, tirx.While):
            return tirx.While(_substitute(node.condition, env), visit(node.body, env), node.span)
        return _substitute(node, env)  # leaves (stores, tile ops, calls, allocations)

    return visit(stmt, {})


def _repeats(variables) -> bool:
    """Whether one variable object occurs twice (an FFI object hashes by its handle)."""
    by_hash: dict = {}
    for v in variables:
        same = by_hash.setdefault(hash(v), [])
        if any(v.same_as(w) for w in same):
            return True
        same.append(v)
    return False


def drop_bindings(stmt, variables):
    """``stmt`` with the Binds of ``variables`` made no-ops (their uses must have been inlined)."""
    def on_bind(node):
        if any(node.var.same_as(v) for v in variables):
            return tirx.Evaluate(tirx.const(0, "int32"))
        return node

    return tvm_ffi.structural_map(stmt, [(tirx.Bind, on_bind)])


__all__ = ["bound_vars", "call_effect", "calls_above", "drop_bindings", "is_invariant", "is_pure", "memory_bindings",
           "reads_any", "register_stores",
           "unique_bindings", "uses_any", "written_buffers"]
