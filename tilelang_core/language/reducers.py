"""Reducers: TileLang's deferred reductions (``T.alloc_reducer`` ... ``T.finalize_reducer``).

A reducer collects contributions from ``T.Parallel`` loops and combines them once, at finalize::

    acc = T.alloc_reducer((M,), T.float32, op="sum")
    T.reducer_init(acc)                       # or T.reducer_init(acc, seed): seed counted once
    for k in T.serial(K // bK):
        for i, j in T.Parallel(M, bK):
            T.reducer_update(acc[i], A[i, k * bK + j])
    out = T.alloc_fragment((M,), T.float32)
    T.finalize_reducer(acc, out)              # out[i] = seed + sum of every contribution to i

TileLang's legacy form, ``T.alloc_reducer(..., replication="all")``, is a fragment the kernel
clears and updates in place (``acc[i] += v`` inside ``T.Parallel``) and finalizes in place
(``T.finalize_reducer(acc)``); it has the same meaning here.

How it lowers (:func:`lower_reducers`, run on the parsed kernel, so every backend sees plain tile
IR): each update site gets a staging fragment shaped like its ``T.Parallel`` nest, which the site
accumulates into element-wise (one element per logical iteration, whatever thread runs it);
finalize reduces each staging fragment over the loop dimensions the target index does not name
(``T.reduce_*`` with ``clear=False``) into the reducer, which ``reducer_init`` set to the seed.
Every logical contribution is combined exactly once. Update targets must name loop variables of
the nest directly, in any order (``acc[i]`` in ``T.Parallel(M, K)``, ``acc[j, i]`` in
``T.Parallel(i, j)``, ``acc[0]`` for a scalar); serial loops inside the nest repeat updates of
one logical iteration (``T.Parallel(M) { T.serial(K) }``). An index may also name a serial loop
around the nest (TileLang's "wide plan": ``for i in T.serial(4): for k in T.Parallel(K):
T.reducer_update(acc[i], ...)``): that loop becomes a leading dimension of the site's staging
fragment, so each of its iterations accumulates into its own row. An index may also be a
constant, or one expression of the nest's variables over a reducer dimension of at most 16
elements (TileKernels' ``acc[T.min(2, j // 4)] += v``): each value it can take gets a site of
its own, fed by the iterations whose index has that value (the others add the identity).
Anything else is refused with the source line.

A reducer allocated without ``replication=`` that no ``T.reducer_init`` / ``T.reducer_update``
touches and that is finalized in place (``T.finalize_reducer(acc)``) is a legacy reducer, as in
TileLang.
"""

from __future__ import annotations

import contextvars
import math
from dataclasses import dataclass, field

import tvm
import tvm_ffi
from tvm import tirx
from tvm.script.ir_builder import tirx as B
from tvm.tirx import CallEffectKind, is_buffer_var

from ..errors import FrontendAssertionError, FrontendError, FrontendValueError
from ..ir import Fill, Reduce
from ..ir.ops import BITWISE_REDUCE_KINDS, bitwise_combine, bitwise_identity
from ..ir import region as R
from ..ir.atomic_calls import is_parallel_loop
from ..ir.elementwise import parallel_loop
from .allocate import alloc_fragment
from .dtypes import canonical_dtype
from .expr import infinity
from .kernel import current_kernel
from .reducer_checks import check_reducer_protocol
from ..transform.structural import seq

_OPS = ("sum", "max", "min") + BITWISE_REDUCE_KINDS
_MARKERS = ("tl.reducer_init", "tl.reducer_update", "tl.finalize_reducer")
for _name in _MARKERS:
    tvm.ir.register_op_attr(_name, "TCallEffectKind", CallEffectKind.Opaque.value)


@dataclass
class _Reducer:
    buffer: object
    op: str
    legacy: bool
    v2_used: bool = False  # touched by T.reducer_init / T.reducer_update


# reducers of the kernel being parsed (buffer handle -> _Reducer)
_current: contextvars.ContextVar[dict | None] = contextvars.ContextVar("tl_reducers", default=None)


def begin_kernel():
    """Start collecting the reducers of a kernel; returns the token for :func:`end_kernel`."""
    return _current.set({})


def end_kernel(token) -> dict:
    found = _current.get() or {}
    _current.reset(token)
    return found


def _registry() -> dict:
    found = _current.get()
    if found is None:
        raise FrontendError("reducers can only be used inside a T.prim_func kernel")
    return found


def alloc_reducer(shape, dtype, op: str = "sum", replication=None):
    """A reducer of logical ``shape``: see the module docs. ``op``: "sum", "max", "min", or on
    integer dtypes "bitand", "bitor", "bitxor"."""
    current_kernel("T.alloc_reducer")
    if op not in _OPS:
        raise FrontendError(f"T.alloc_reducer: op must be one of {', '.join(map(repr, _OPS))}, got {op!r}")
    if op in BITWISE_REDUCE_KINDS and not canonical_dtype(dtype, "T.alloc_reducer").startswith(("int", "uint")):
        # TileLang asserts this (AssertionError)
        raise FrontendAssertionError(f"T.alloc_reducer(op={op!r}) needs an integer dtype, got "
                                     f"{canonical_dtype(dtype, 'T.alloc_reducer')}")
    if replication is not None and replication not in ("all", "none"):
        raise FrontendError(f"T.alloc_reducer: replication must be 'all' or 'none', got {replication!r}")
    buf = alloc_fragment(shape, canonical_dtype(dtype, "T.alloc_reducer"))
    _registry()[buf.__chandle__()] = _Reducer(buf, op, legacy=replication is not None)
    return buf


def _reducer_of(buf, what: str) -> _Reducer:
    found = _registry().get(buf.__chandle__()) if is_buffer_var(buf) else None
    if found is None:
        raise FrontendError(f"{what} takes a buffer made by T.alloc_reducer, got {buf!r}")
    return found


def reducer_init(reducer, init=None):
    """Open the reducer's epoch: contributions start from ``init`` (the op's identity if None)."""
    red = _reducer_of(reducer, "T.reducer_init")
    if red.legacy:
        raise FrontendError("T.reducer_init is for reducers without replication=; a legacy "
                            "replication= reducer starts from T.clear/T.fill")
    dtype = str(reducer.ty.dtype)
    given = init.scalar if hasattr(init, "scalar") else init
    if isinstance(given, tvm.ir.Expr) and tvm.ir.is_prim_expr(given) and str(given.ty) != dtype:
        # TileLang's rule: a Python number converts, an expression must already have the dtype
        raise FrontendError(f"T.reducer_init: the starting value's dtype {given.ty} does not match reducer "
                            f"{reducer.name}'s dtype {dtype}; write T.cast(value, {dtype!r})")
    value = _identity(red.op, dtype) if init is None else _as_value(init, dtype)
    red.v2_used = True
    B.evaluate(tirx.call_intrin("handle", "tl.reducer_init", _handle(reducer), value))


def reducer_update(target, value):
    """Contribute ``value`` to ``target`` (written ``acc[indices]``) once per logical iteration of
    the enclosing ``T.Parallel`` loop."""
    target = target.scalar if hasattr(target, "scalar") else target
    if not isinstance(target, tvm.ir.TensorLoad) or not is_buffer_var(target.source):
        raise FrontendError("T.reducer_update expects acc[indices] as its first argument")
    red = _reducer_of(target.source, "T.reducer_update")
    value = _as_value(value, str(red.buffer.ty.dtype))
    red.v2_used = True
    B.evaluate(tirx.call_intrin("handle", "tl.reducer_update", target, value))


def finalize_reducer(reducer, dst=None, batch: int = 1, annotations=None):
    """Combine every contribution (and the init value once) into ``dst``, or in place for a
    legacy ``replication=`` reducer. ``batch`` (TileLang's AllReduce grouping) changes nothing
    here but must, as there, be positive and divide the number of outputs."""
    red = _reducer_of(reducer, "T.finalize_reducer")
    if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
        raise FrontendValueError(f"T.finalize_reducer: batch must be >= 1 (a positive integer), got {batch!r}")
    # TileLang's rules for the hint: a batch groups whole outputs
    outputs = math.prod(int(s) for s in reducer.ty.shape)
    if batch > outputs:
        raise FrontendError(f"T.finalize_reducer: batch {batch} exceeds total output elements ({outputs}) of "
                            f"{reducer.name}")
    if outputs % batch:
        raise FrontendError(f"T.finalize_reducer: batch {batch} must evenly divide the {outputs} output "
                            f"elements of {reducer.name}")
    if dst is None and not red.legacy:
        if red.v2_used:
            raise FrontendError("T.finalize_reducer(acc) without a destination is the legacy form, but "
                                f"{reducer.name} was opened with T.reducer_init / T.reducer_update; write "
                                "T.finalize_reducer(acc, dst) with dst = T.alloc_fragment(shape, dtype)")
        # TileLang's rule: a reducer no v2 operation touched, cleared and updated in place
        # (``acc[i] += v``) and finalized in place, is a legacy reducer
        red.legacy = True
    args = [_handle(reducer)]
    if dst is not None:
        if not is_buffer_var(dst) or [int(s) for s in dst.ty.shape] != [int(s) for s in reducer.ty.shape]:
            raise FrontendError(f"T.finalize_reducer: dst must be a buffer of the reducer's shape "
                                f"{[int(s) for s in reducer.ty.shape]}, got {dst!r}")
        args.append(_handle(dst))
    B.evaluate(tirx.call_intrin("handle", "tl.finalize_reducer", *args))


def _handle(buf):
    return tvm.tirx.BufferLoad(buf, [tirx.const(0, "int32")] * len(buf.ty.shape))


def _as_value(value, dtype: str):
    if hasattr(value, "scalar"):
        value = value.scalar
    if isinstance(value, (bool, int, float)):
        return tirx.const(value, dtype)
    return value if str(value.ty) == dtype else tirx.Cast(dtype, value)


def _identity(op: str, dtype: str):
    if op in BITWISE_REDUCE_KINDS:
        return bitwise_identity(op, dtype)
    if op == "sum":
        return tirx.const(0, dtype)
    if op == "max":  # (expr.infinity: TVM's has no bfloat16 infinity)
        return tirx.min_value(dtype) if not dtype.startswith(("float", "bfloat")) else -infinity(dtype)
    return tirx.max_value(dtype) if not dtype.startswith(("float", "bfloat")) else infinity(dtype)


def _combine(op: str, a, b):
    if op in BITWISE_REDUCE_KINDS:
        return bitwise_combine(op, a, b)
    return a + b if op == "sum" else tirx.max(a, b) if op == "max" else tirx.min(a, b)


# ---------------------------------------------------------------------------------------------
# lowering, on the parsed kernel
# ---------------------------------------------------------------------------------------------
@dataclass
class _Site:
    reducer: _Reducer
    staging: object
    loop_vars: list
    extents: list
    dims: list  # for each reducer dim: the nest dim its index names, or None for a constant
    offsets: list  # for each reducer dim: the constant its index adds (0 where a loop names it)


@dataclass
class _Plan:
    reducers: dict
    sites: list = field(default_factory=list)
    temps: list = field(default_factory=list)


def lower_reducers(func, reducers: dict, source_error):
    """Rewrite the reducer markers of ``func`` (see the module docs); ``source_error(msg)`` makes
    the FrontendError for a refusal."""
    if not reducers:
        return func
    check_reducer_protocol(func.body, reducers, source_error)
    plan = _Plan(reducers)
    body = _rewrite_updates(func.body, plan, source_error, [])
    body = _rewrite_epochs(body, plan, source_error)
    body = _insert_allocs(body, [s.staging for s in plan.sites] + plan.temps)
    leftover = []
    tvm_ffi.structural_walk(body, [(tvm.ir.Call, lambda c: leftover.append(c)
                                    if getattr(c.op, "name", "") in _MARKERS else None)])
    if leftover:  # pragma: no cover - every marker is rewritten above
        raise source_error(f"internal error: reducer operation {leftover[0].op.name} was not lowered")
    return func.with_body(body)


def _is_serial(loop) -> bool:
    return loop.kind in (tirx.ForKind.SERIAL, tirx.ForKind.UNROLLED) and loop.thread_binding is None


def _marker(stmt, name):
    return (isinstance(stmt, tirx.Evaluate) and isinstance(stmt.value, tvm.ir.Call)
            and getattr(stmt.value.op, "name", "") == name)


def _map_children(node, fn):
    """``node`` with ``fn`` applied to each child statement (statements with bodies), else None."""
    if isinstance(node, tirx.SeqStmt):
        return tirx.SeqStmt([fn(s) for s in node.seq])
    if isinstance(node, tirx.For):
        return tirx.For(node.loop_var, node.min, node.extent, node.kind, fn(node.body),
                        node.thread_binding, node.annotations, node.step)
    if isinstance(node, tirx.While):
        return tirx.While(node.condition, fn(node.body))
    if isinstance(node, tirx.IfThenElse):
        return tirx.IfThenElse(node.condition, fn(node.then_case),
                               None if node.else_case is None else fn(node.else_case))
    if isinstance(node, tirx.AttrStmt):
        return tirx.AttrStmt(node.node, node.attr_key, node.value, fn(node.body))
    return None  # leaves, Bind (x = expr; TVM 0.27's LetStmt is the same flat node) included


def _rewrite_updates(node, plan, error, nest, outer=()):
    """Update sites (markers, and in-place updates of legacy reducers) -> staging accumulations.
    ``nest``: the enclosing T.Parallel loops; ``outer``: the serial loops around them."""
    if isinstance(node, tirx.For):
        # a serial loop inside a T.Parallel body repeats updates of the same logical iteration
        # (TileLang's Parallel(M) { serial(K) }): they accumulate into its staging element; a
        # serial loop around the nest may be named by the update's index (the wide plan)
        if is_parallel_loop(node):
            inner, around = nest + [node], outer
        elif _is_serial(node):
            inner, around = nest, outer if nest else outer + (node,)
        else:
            inner, around = [], ()
        return _map_children(node, lambda s: _rewrite_updates(s, plan, error, inner, around))
    mapped = _map_children(node, lambda s: _rewrite_updates(s, plan, error, nest, outer))
    if mapped is not None:
        return mapped
    if _marker(node, "tl.reducer_update"):
        target, value = node.value.args
        red = plan.reducers[target.source.__chandle__()]
        return _accumulate(red, list(target.indices), value, plan, error, nest, outer)
    if isinstance(node, tirx.BufferStore):
        red = plan.reducers.get(node.buffer.__chandle__())
        if red is not None and red.legacy and nest:
            value = _legacy_contribution(node, red, error)
            return _accumulate(red, list(node.indices), value, plan, error, nest, outer)
    return node


def _legacy_contribution(store, red, error):
    """``acc[idx] = acc[idx] (op) v`` -> v: the only in-place write a legacy reducer allows."""
    value = store.value
    same = lambda x: (isinstance(x, tvm.ir.TensorLoad) and x.source.same_as(store.buffer)  # noqa: E731
                      and len(x.indices) == len(store.indices)
                      and all(tvm_ffi.structural_equal(a, b) for a, b in zip(x.indices, store.indices)))
    kinds = {"sum": tirx.Add, "max": tirx.Max, "min": tirx.Min, "bitand": tirx.BitwiseAnd,
             "bitor": tirx.BitwiseOr, "bitxor": tirx.BitwiseXor}
    if isinstance(value, kinds[red.op]):
        if same(value.a):
            return value.b
        if same(value.b):
            return value.a
    raise error(f"reducer {store.buffer.name} (replication=) may only be updated as "
                f"{store.buffer.name}[i] = {store.buffer.name}[i] { {'sum': '+', 'bitand': '&', 'bitor': '|', 'bitxor': '^'}.get(red.op, red.op)} value "
                "inside T.Parallel")


def _accumulate(red, indices, value, plan, error, nest, outer):
    if not nest:
        raise error(f"T.reducer_update of {red.buffer.name} is outside any T.Parallel loop: a thread-uniform "
                    "update would count once per thread; put it inside T.Parallel")
    # the serial loops around the nest that the index names (as its row: the loop variable
    # counted from the loop's start) lead the staging fragment's dims
    analyzer = tvm.sym.Analyzer()

    def names(idx, loop) -> bool:
        if any(loop.same_as(n) for n in nest):
            return isinstance(idx, tirx.Var) and idx.same_as(loop.loop_var)
        return R.as_int(analyzer.simplify(idx - (loop.loop_var - loop.min))) == 0

    named_outer = [loop for loop in outer if any(names(i, loop) for i in indices)]
    loops = named_outer + nest
    loop_vars = [loop.loop_var for loop in loops]
    extents = [R.as_int(loop.extent) for loop in loops]
    if any(e is None for e in extents):
        raise error(f"T.reducer_update of {red.buffer.name}: the enclosing T.Parallel loops and the serial "
                    "loops its index names need constant extents")
    dims, offsets, computed = [], [], None
    for k, idx in enumerate(indices):
        pos = next((d for d, loop in enumerate(loops) if names(idx, loop)), None)
        constant = R.as_int(idx)
        if pos is None and constant is None and computed is None and _small(red.buffer.ty.shape[k]) \
                and _of_nest(idx, nest):
            computed = (k, idx)  # acc[T.min(2, j // 4)]: an update per value (below)
        elif pos is None and constant is None:
            raise error(f"T.reducer_update of {red.buffer.name}: index {idx} must be a loop variable of the "
                        f"enclosing T.Parallel nest ({', '.join(str(loop.loop_var) for loop in nest)}), a "
                        "serial loop around it counted from its start (r - start), a constant, or one "
                        f"expression of the nest's variables over a dimension of at most {_MAX_COMPUTED} elements")
        dims.append(pos)
        offsets.append(constant or 0)
    if computed is not None:
        # TileLang's reducer takes any index: each value r the index can take gets a site of its
        # own, which the iterations whose index is r feed (the others add the identity)
        k, idx = computed
        identity = _identity(red.op, str(red.buffer.ty.dtype))
        updates = []
        for r in range(int(red.buffer.ty.shape[k])):
            offsets[k] = r
            updates.append(_accumulate_at(red, dims, list(offsets), loops, loop_vars, extents, plan, error,
                                          tirx.Select(tirx.EQ(idx, tirx.const(r, str(idx.ty))), value, identity)))
        return seq(updates)
    return _accumulate_at(red, dims, offsets, loops, loop_vars, extents, plan, error, value)


#: the largest reducer dimension an index computed from the loops may select in (an update per value)
_MAX_COMPUTED = 16


def _of_nest(idx, nest) -> bool:
    """Does ``idx`` name only the T.Parallel nest's loop variables (and constants)?"""
    names = []
    tvm_ffi.structural_walk(idx, [(tirx.Var, names.append)])
    return bool(names) and all(any(v.same_as(loop.loop_var) for loop in nest) for v in names)


def _small(extent) -> bool:
    return R.as_int(extent) is not None and R.as_int(extent) <= _MAX_COMPUTED


def _accumulate_at(red, dims, offsets, loops, loop_vars, extents, plan, error, value):
    named = [d for d in dims if d is not None]
    if len(set(named)) != len(named):
        raise error(f"T.reducer_update of {red.buffer.name}: the index names a loop variable twice")
    site = next((s for s in plan.sites if s.reducer is red and len(s.loop_vars) == len(loop_vars)
                 and all(a.same_as(b) for a, b in zip(s.loop_vars, loop_vars))
                 and s.offsets == offsets), None)
    if site is None:
        dtype = str(red.buffer.ty.dtype)
        staging = tirx.decl_buffer(extents, dtype, f"{red.buffer.name}_part{len(plan.sites)}",
                                   scope="local.fragment")
        site = _Site(red, staging, loop_vars, extents, dims, offsets)
        plan.sites.append(site)
    elif site.dims != dims:
        raise error(f"T.reducer_update of {red.buffer.name}: two updates in one T.Parallel loop must "
                    "target the same index")
    # a serial loop's row is counted from its start
    at = [v - loop.min if R.as_int(loop.min) != 0 else v for v, loop in zip(loop_vars, loops)]
    cur = tirx.BufferLoad(site.staging, at)
    return tirx.BufferStore(site.staging, _combine(red.op, cur, value), at)


def _rewrite_epochs(node, plan, error):
    """init -> seed the reducer and clear its staging; finalize -> reduce the staging into it."""
    def visit(stmt):
        mapped = _map_children(stmt, visit)
        if mapped is not None:
            return mapped
        if _marker(stmt, "tl.reducer_init"):
            handle, value = stmt.value.args
            red = plan.reducers[handle.source.__chandle__()]
            return seq([_fill(red.buffer, value)] + _clear_staging(red, plan))
        if _marker(stmt, "tl.finalize_reducer"):
            args = stmt.value.args
            red = plan.reducers[args[0].source.__chandle__()]
            sites = [site for site in plan.sites if site.reducer is red]
            # one site folds straight into the reducer; several each fold into a fresh fragment
            # first (the kit derives a reduction's output layout from its input, so two sites
            # cannot share one destination), then combine element-wise
            out = [_reduce_site(site, plan, direct=len(sites) == 1) for site in sites]
            if len(args) > 1:
                from ..ir import Copy

                out.append(Copy(R.full_region(red.buffer), R.full_region(args[1].source)).to_stmt())
            return seq(out)
        if isinstance(stmt, tvm.tirx.TilePrimitiveCall):
            # a legacy reducer starts from the kernel's own T.clear / T.fill
            from ..ir import TileOp

            op = TileOp.from_stmt(stmt)
            if isinstance(op, Fill):
                red = plan.reducers.get(op.dst.source.__chandle__())
                if red is not None and red.legacy:
                    return seq([stmt] + _clear_staging(red, plan))
        return stmt

    return visit(node)


def _clear_staging(red, plan):
    dtype = str(red.buffer.ty.dtype)
    return [_fill(site.staging, _identity(red.op, dtype)) for site in plan.sites if site.reducer is red]


def _fill(buf, value):
    return Fill(R.full_region(buf), value).to_stmt()


def _reduce_site(site, plan, direct: bool):
    """Fold one staging fragment into the reducer: reduce the unnamed loop dims (the last
    reduction with clear=False into the reducer itself when ``direct``)."""
    red = site.reducer
    named = [d for d in site.dims if d is not None]
    drop = [d for d in range(len(site.extents)) if d not in named]
    kept = [site.extents[d] for d in named]
    # a target naming the loops in another order (acc[j, i] in T.Parallel(i, j)), or mixing them
    # with unit dims (acc[0, i]): the folds keep the nest's order, and the last step, element-wise,
    # puts each element at its reducer index
    permuted = named != sorted(named) or (bool(named) and None in site.dims)
    # (a site at a constant index other than 0 lands through the element-wise step: tile ops
    # take fragments whole)
    direct = direct and not permuted and not any(site.offsets)
    target_ext = []
    it = iter(kept)
    for d in site.dims:
        target_ext.append(next(it) if d is not None else 1)
    target = R.make_region(red.buffer, list(site.offsets), target_ext)
    if not drop:  # the nest is the reducer's shape: combine element-wise
        return _elementwise_combine(site, target)
    stmts = []
    src = site.staging
    shape = list(site.extents)
    for step, d in enumerate(sorted(drop, reverse=True)):
        last = step == len(drop) - 1
        shape = shape[:d] + shape[d + 1:]
        if last and direct:
            dst = target
        else:
            # the last fold lands in a fragment shaped like the target region (unit dims kept;
            # permuted: the kept loops in nest order)
            tmp = tirx.decl_buffer(target_ext if last and not permuted else (shape or [1]), str(red.buffer.ty.dtype),
                                   f"{red.buffer.name}_fold{len(plan.temps)}", scope="local.fragment")
            plan.temps.append(tmp)
            dst = R.full_region(tmp)
        stmts.append(Reduce(R.full_region(src), dst, kind=red.op, dim=d,
                            clear=not (last and direct)).to_stmt())
        if not (last and direct):
            src = tmp
    if not direct:
        # src: the folded partial, shaped like the target region. It reaches the reducer through
        # shared memory: an element-wise loop over two fragments would tie their layouts together,
        # and each site's fold has the layout its own reduction gives it.
        folded_shape = [site.extents[d] for d in sorted(named)] or [1] if permuted else list(target_ext)
        scratch = tirx.decl_buffer(folded_shape, str(red.buffer.ty.dtype),
                                   f"{red.buffer.name}_xfer{len(plan.temps)}", scope="shared.dyn")
        plan.temps.append(scratch)
        from ..ir import Copy

        stmts.append(Copy(R.full_region(src), R.full_region(scratch)).to_stmt())
        dims = [None if d is None else sorted(named).index(d) for d in site.dims] if permuted \
            else list(range(len(target_ext)))
        folded = _Site(red, scratch, [], folded_shape, dims, site.offsets)
        stmts.append(_elementwise_combine(folded, target))
    return seq(stmts)


def _elementwise_combine(site, target):
    red = site.reducer
    loop_vars = [tirx.Var(f"r{d}", "int32") for d in range(len(site.extents))]
    # reducer dim k takes the staging's dim site.dims[k] (its loop position), plus the site's
    # constant for it (a fold of a computed-index site lands at its value)
    idx = []
    for d, offset in zip(site.dims, site.offsets):
        if d is None:
            idx.append(tirx.const(offset, "int32"))
        else:
            idx.append(loop_vars[d] + offset if offset else loop_vars[d])
    body = tirx.BufferStore(red.buffer, _combine(red.op, tirx.BufferLoad(red.buffer, idx),
                                                 tirx.BufferLoad(site.staging, loop_vars)), idx)
    for v, e in reversed(list(zip(loop_vars, site.extents))):
        body = parallel_loop(v, e, body)
    return body


def _insert_allocs(body, buffers):
    """Allocate ``buffers`` at the top of the kernel body (after its launch attributes)."""
    if not buffers:
        return body
    allocs = [tirx.AllocBuffer(b) for b in buffers]

    def place(node):
        if isinstance(node, tirx.AttrStmt) and node.attr_key == "thread_extent" and \
                isinstance(node.body, tirx.AttrStmt) and node.body.attr_key == "thread_extent":
            return tirx.AttrStmt(node.node, node.attr_key, node.value, place(node.body))
        if isinstance(node, tirx.AttrStmt) and node.attr_key == "thread_extent":
            inner = node.body
            seq = list(inner.seq) if isinstance(inner, tirx.SeqStmt) else [inner]
            return tirx.AttrStmt(node.node, node.attr_key, node.value, tirx.SeqStmt(allocs + seq))
        if isinstance(node, tirx.SeqStmt):
            return tirx.SeqStmt([place(s) for s in node.seq])
        return node

    return place(body)


__all__ = ["alloc_reducer", "finalize_reducer", "lower_reducers", "reducer_init", "reducer_update"]
