"""CPU lowering rules: every tile op becomes a plain loop nest over the whole tile.

On the CPU a block runs as one sequential program (threads are gone, see
transform/threads_to_loops.py), so a tile op is lowered at the tile level: no thread mapping and no
fragment layout, the fragment is the whole tile. Regions on global buffers may extend past the
buffer (ragged tiles): reads there give 0 and writes there are skipped; the predicate is only
emitted where the analyzer cannot prove the access in bounds.

Rules are registered in the core table (``tilelang_core.lowering``) under backend kind ``cpu``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Callable, Sequence

import tvm
from tvm import tirx

from tilelang_core.ir import TileOp
from tilelang_core.ir.ops import bitwise_combine, bitwise_identity
from tilelang_core.lowering import LoweringContext, in_bounds, nan_propagating, register_lowering

KIND = "cpu"
#: annotation marking the inner loop of a lowered gemm for VectorizeLoop (see transform/)
VECTORIZE_HINT = "tl.cpu_vectorize"


# -- regions ----------------------------------------------------------------------------------------
@dataclass
class Region:
    """A rectangular piece of a buffer: ``buffer[mins[d] : mins[d] + extents[d]]``."""

    buffer: tirx.Var
    mins: list
    extents: list

    @property
    def dtype(self) -> str:
        return str(self.buffer.ty.dtype)

    @property
    def shape(self) -> list:
        return list(self.buffer.ty.shape)

    @property
    def is_global(self) -> bool:
        return str(self.buffer.ty.storage_scope) in ("global", "")

    def index(self, offsets: Sequence) -> list:
        return [m + o for m, o in zip(self.mins, offsets)]


def as_region(arg, what: str, ctx: LoweringContext, op: str) -> Region:
    """A tile-op operand (TensorRegion, whole buffer, or single-element load) as a Region."""
    if isinstance(arg, tvm.ir.TensorRegion):
        return Region(arg.source, [r.min for r in arg.region], [r.extent for r in arg.region])
    if isinstance(arg, tvm.ir.TensorLoad):
        return Region(arg.source, list(arg.indices), [tirx.IntImm("int32", 1)] * len(arg.indices))
    if tirx.is_buffer_var(arg):
        shape = list(arg.ty.shape)
        return Region(arg, [tirx.IntImm(_index_dtype(shape), 0)] * len(shape), shape)
    raise ctx.error(op, f"{what} must be a buffer region, got {type(arg).__name__}: {arg}")


def _index_dtype(shape) -> str:
    return dtype_of(shape[0]) if shape else "int32"


def dtype_of(expr) -> str:
    """dtype of a scalar expression (TIRX exprs carry it as a PrimType in ``ty``)."""
    if isinstance(expr, int):
        return "int32"
    return str(expr.ty.dtype)


def is_one(ctx: LoweringContext, extent) -> bool:
    return ctx.analyzer.can_prove_equal(extent, 1)


def loop_dims(ctx: LoweringContext, region: Region) -> list[int]:
    """Dimensions of ``region`` that are iterated over (the ones whose extent is not 1)."""
    return [d for d, e in enumerate(region.extents) if not is_one(ctx, e)]


def bounds_predicate(ctx: LoweringContext, region: Region, index: Sequence):
    """The condition under which ``region.buffer[index]`` is in bounds, or None when provable.

    Only global buffers are checked: a tile that runs past a shared/fragment buffer is a kernel bug
    that no predicate can make right, while a ragged global tile is the normal case.
    """
    if not region.is_global:
        return None
    return in_bounds(ctx.analyzer, index, region.shape)


def cast(value, dtype: str):
    return value if dtype_of(value) == dtype else tirx.Cast(dtype, value)


def zero(dtype: str):
    return tirx.const(0, dtype)


def loop_nest(ctx: LoweringContext, extents: Sequence, body: Callable[[list], tirx.Stmt],
              names: str = "ijklmn", annotations: Sequence | None = None) -> tirx.Stmt:
    """``for v0 in range(e0): for v1 in range(e1): ... body([v0, v1, ...])``.

    Loop variables are bound in the analyzer so later bounds checks inside can be proven.
    """
    loop_vars = []
    for depth, extent in enumerate(extents):
        var = tirx.Var(names[depth % len(names)], dtype_of(extent))
        ctx.analyzer.bind(var, tvm.ir.Range.from_min_extent(tirx.const(0, dtype_of(var)), extent))
        loop_vars.append(var)
    stmt = body(loop_vars)
    for depth in reversed(range(len(extents))):
        ann = annotations[depth] if annotations else None
        var = loop_vars[depth]
        stmt = tirx.For(var, tirx.const(0, dtype_of(var)), extents[depth], tirx.ForKind.SERIAL, stmt,
                        annotations=ann)
    return stmt


def guarded_store(ctx: LoweringContext, region: Region, index: list, value) -> tirx.Stmt:
    store = tirx.BufferStore(region.buffer, cast(value, region.dtype), index)
    pred = bounds_predicate(ctx, region, index)
    return store if pred is None else tirx.IfThenElse(pred, store, None)


def guarded_load(ctx: LoweringContext, region: Region, index: list):
    value = tirx.BufferLoad(region.buffer, index)
    pred = bounds_predicate(ctx, region, index)
    # if_then_else is lowered to a branch by the LLVM codegen, so the load never runs out of bounds.
    return value if pred is None else tirx.if_then_else(pred, value, zero(region.dtype))


def paired_dims(ctx: LoweringContext, op: str, a: Region, b: Region,
                what: str) -> list[tuple[int, int]]:
    """Pair the iterated dims of two regions in order (unit dims dropped), checking extents match."""
    da, db = loop_dims(ctx, a), loop_dims(ctx, b)
    if len(da) != len(db):
        raise ctx.error(op, f"{what}: regions {_fmt(a)} and {_fmt(b)} have different non-unit "
                            f"dimensions ({len(da)} vs {len(db)}); give both the same shape")
    for x, y in zip(da, db):
        if not ctx.analyzer.can_prove_equal(a.extents[x], b.extents[y]):
            raise ctx.error(op, f"{what}: extents differ ({a.extents[x]} vs {b.extents[y]}) between "
                                f"{_fmt(a)} and {_fmt(b)}")
    return list(zip(da, db))


def _fmt(region: Region) -> str:
    dims = ", ".join(f"{m}:{m + e}" for m, e in zip(region.mins, region.extents))
    return f"{region.buffer}[{dims}]"


def elementwise(ctx: LoweringContext, op: str, dst: Region, src: Region | None, what: str,
                make_value: Callable[[list, object], object]) -> tirx.Stmt:
    """Loop over ``dst``'s iterated dims; ``make_value(dst_index, src_value_or_None)`` is stored."""
    pairs = paired_dims(ctx, op, src, dst, what) if src is not None else None
    dims = [d for _, d in pairs] if pairs is not None else loop_dims(ctx, dst)
    extents = [dst.extents[d] for d in dims]

    def body(loop_vars):
        offsets = [tirx.const(0, dtype_of(m)) for m in dst.mins]
        for d, v in zip(dims, loop_vars):
            offsets[d] = v
        dst_index = dst.index(offsets)
        src_value = None
        if src is not None:
            src_offsets = [tirx.const(0, dtype_of(m)) for m in src.mins]
            for (sd, _), v in zip(pairs, loop_vars):
                src_offsets[sd] = v
            src_value = guarded_load(ctx, src, src.index(src_offsets))
        return guarded_store(ctx, dst, dst_index, make_value(dst_index, src_value))

    return loop_nest(ctx, extents, body)


# -- rules ------------------------------------------------------------------------------------------
@register_lowering("copy", KIND)
def lower_copy(call, ctx: LoweringContext) -> tirx.Stmt:
    op = TileOp.from_stmt(call)
    src = as_region(op.src, "copy source", ctx, "copy")
    dst = as_region(op.dst, "copy destination", ctx, "copy")
    return elementwise(ctx, "copy", dst, src, "copy", lambda _idx, value: cast(value, dst.dtype))


@register_lowering("fill", KIND)
def lower_fill(call, ctx: LoweringContext) -> tirx.Stmt:
    op = TileOp.from_stmt(call)
    dst = as_region(op.dst, "fill destination", ctx, "fill")
    value = op.value
    return elementwise(ctx, "fill", dst, None, "fill", lambda _idx, _v: cast(value, dst.dtype))


@register_lowering("atomic", KIND)
def lower_atomic(call, ctx: LoweringContext) -> tirx.Stmt:
    """A read-modify-write (a plain store for T.atomic_store). Atomicity comes from the block loop:
    BlocksToLoops runs blocks serially when a kernel has an atomic on a global buffer, and within a
    block everything is sequential, so every memory order holds as well. A thread-level atomic
    (``per_thread``) sits in the loop over threads ThreadsToLoops made, once per thread."""
    from .transform.lower_atomic_calls import COMBINE

    op = TileOp.from_stmt(call)
    if op.kind not in COMBINE:
        raise ctx.error("atomic", f"unknown atomic kind {op.kind!r}; expected one of {sorted(COMBINE)}")
    combine = COMBINE[op.kind]
    dst = as_region(op.dst, "atomic destination", ctx, "atomic")
    operand = op.src
    if op.src_is_region:
        src = as_region(operand, "atomic source", ctx, "atomic")

        def make(idx, value):
            return combine(tirx.BufferLoad(dst.buffer, idx), cast(value, dst.dtype))

        return elementwise(ctx, "atomic", dst, src, "atomic", make)

    def make_scalar(idx, _value):
        return combine(tirx.BufferLoad(dst.buffer, idx), cast(operand, dst.dtype))

    return elementwise(ctx, "atomic", dst, None, "atomic", make_scalar)


def _last_two(ctx: LoweringContext, region: Region, what: str) -> tuple[int, int]:
    """The two matrix dims of a gemm operand: the last two, every leading dim must be 1."""
    rank = len(region.extents)
    if rank < 2:
        raise ctx.error("gemm", f"{what} {_fmt(region)} must be at least 2-D")
    for d in range(rank - 2):
        if not is_one(ctx, region.extents[d]):
            raise ctx.error("gemm", f"{what} {_fmt(region)} has a leading dim of extent "
                                    f"{region.extents[d]}; batch dims must be 1 (loop over them)")
    return rank - 2, rank - 1


@register_lowering("gemm", KIND)
def lower_gemm(call, ctx: LoweringContext) -> tirx.Stmt:
    """C (+)= op(A) @ op(B) as an i-k-j loop nest, products and sums in C's dtype.

    i-k-j keeps C's row and (untransposed) B's row contiguous in the innermost loop, which is the
    loop we vectorize.
    """
    op = TileOp.from_stmt(call)
    a = as_region(op.A, "gemm A", ctx, "gemm")
    b = as_region(op.B, "gemm B", ctx, "gemm")
    c = as_region(op.C, "gemm C", ctx, "gemm")
    trans_a, trans_b, clear = op.transpose_A, op.transpose_B, op.clear_accum
    a_rows, a_cols = _last_two(ctx, a, "A")
    b_rows, b_cols = _last_two(ctx, b, "B")
    c_rows, c_cols = _last_two(ctx, c, "C")
    a_m, a_k = (a_cols, a_rows) if trans_a else (a_rows, a_cols)
    b_k, b_n = (b_cols, b_rows) if trans_b else (b_rows, b_cols)
    m, n, k = c.extents[c_rows], c.extents[c_cols], a.extents[a_k]
    checks = [(a.extents[a_m], m, "M (rows of A and C)"), (b.extents[b_n], n, "N (cols of B and C)"),
              (b.extents[b_k], k, "K (A and B)")]
    for got, want, what in checks:
        if not ctx.analyzer.can_prove_equal(got, want):
            raise ctx.error("gemm", f"shape mismatch in {what}: {got} vs {want} (A={_fmt(a)}, "
                                    f"B={_fmt(b)}, C={_fmt(c)}, transpose_A={trans_a}, "
                                    f"transpose_B={trans_b})")
    acc = c.dtype

    def at(region: Region, dims: dict[int, object]):
        offsets = [tirx.const(0, dtype_of(x)) for x in region.mins]
        for d, v in dims.items():
            offsets[d] = v
        return region.index(offsets)

    # B is read along N in the innermost loop. When that is strided (transpose_B) or needs a dtype
    # conversion, stage B once as a contiguous (K, N) tile in C's dtype: K*N moves instead of
    # M*K*N gathers/conversions, and the inner loop becomes a plain vector multiply-add.
    stage_b = (trans_b or b.dtype != acc) and all(isinstance(e, tirx.IntImm) for e in (k, n))
    prologue = []
    if stage_b:
        staged = tirx.decl_buffer([k, n], acc, name=f"{b.buffer}_kn", scope="local")
        prologue = [tirx.AllocBuffer(staged), loop_nest(
            ctx, [k, n], lambda vs: tirx.BufferStore(
                staged, cast(tirx.BufferLoad(b.buffer, at(b, {b_k: vs[0], b_n: vs[1]})), acc), vs),
            names="kj")]

    def load_b(kk, j):
        if stage_b:
            return tirx.BufferLoad(staged, [kk, j])
        return cast(tirx.BufferLoad(b.buffer, at(b, {b_k: kk, b_n: j})), acc)

    def update(vs):
        i, kk, j = vs
        c_idx = at(c, {c_rows: i, c_cols: j})
        prod = cast(tirx.BufferLoad(a.buffer, at(a, {a_m: i, a_k: kk})), acc) * load_b(kk, j)
        return tirx.BufferStore(c.buffer, tirx.BufferLoad(c.buffer, c_idx) + prod, c_idx)

    vectorize = getattr(ctx.options, "vectorize", True)
    inner_ann = {VECTORIZE_HINT: tirx.IntImm("int32", 1)} if vectorize else None
    nest = loop_nest(ctx, [m, k, n], update, names="ikj", annotations=[None, None, inner_ann])
    if clear:
        def clear_body(vs):
            return tirx.BufferStore(c.buffer, zero(acc), at(c, {c_rows: vs[0], c_cols: vs[1]}))

        prologue.append(loop_nest(ctx, [m, n], clear_body, names="ij"))
    return tirx.SeqStmt(prologue + [nest]) if prologue else nest


_REDUCE = {
    # kind: (combine, identity(dtype), map applied to each source element)
    "sum": (lambda a, b: a + b, lambda t: zero(t), lambda x: x),
    "abssum": (lambda a, b: a + b, lambda t: zero(t), tirx.abs),
    "max": (tirx.max, tirx.min_value, lambda x: x),
    "min": (tirx.min, tirx.max_value, lambda x: x),
    "absmax": (tirx.max, lambda t: zero(t), tirx.abs),
    "bitand": (partial(bitwise_combine, "bitand"), partial(bitwise_identity, "bitand"), lambda x: x),
    "bitor": (partial(bitwise_combine, "bitor"), partial(bitwise_identity, "bitor"), lambda x: x),
    "bitxor": (partial(bitwise_combine, "bitxor"), partial(bitwise_identity, "bitxor"), lambda x: x),
}


def _reduce_dim(ctx, op: str, dim: int, rank: int) -> int:
    if not -rank <= dim < rank:
        raise ctx.error(op, f"dim={dim} is out of range for a {rank}-D source")
    return dim % rank


def _dst_dims_for(ctx, op: str, src: Region, dst: Region, dim: int) -> list[int | None]:
    """For each src dim, the dst dim it maps to (None for the reduced dim).

    dst is src's shape with ``dim`` removed, or kept with extent 1 (TileLang accepts both).
    """
    if len(dst.extents) == len(src.extents):
        mapping = [d if d != dim else None for d in range(len(src.extents))]
    elif len(dst.extents) == len(src.extents) - 1:
        mapping = [None if d == dim else (d if d < dim else d - 1) for d in range(len(src.extents))]
    else:
        raise ctx.error(op, f"destination {_fmt(dst)} must have the source's shape {_fmt(src)} "
                            f"without dim {dim}")
    for s, d in enumerate(mapping):
        if d is not None and not ctx.analyzer.can_prove_equal(src.extents[s], dst.extents[d]):
            raise ctx.error(op, f"destination {_fmt(dst)} does not match source {_fmt(src)} "
                                f"with dim {dim} reduced")
    return mapping


@register_lowering("reduce", KIND)
def lower_reduce(call, ctx: LoweringContext) -> tirx.Stmt:
    """dst = reduce(src, dim) if clear else dst = combine(dst, reduce(src, dim)) (TileLang)."""
    op = TileOp.from_stmt(call)
    if op.kind not in _REDUCE:
        raise ctx.error("reduce", f"unknown reduce kind {op.kind!r}; expected one of {sorted(_REDUCE)}")
    combine, identity, elem = _REDUCE[op.kind]
    if op.nan_propagate:
        combine = nan_propagating(combine)
    src = as_region(op.src, "reduce source", ctx, "reduce")
    dst = as_region(op.dst, "reduce destination", ctx, "reduce")
    clear = op.clear
    dim = _reduce_dim(ctx, "reduce", op.dim, len(src.extents))
    mapping = _dst_dims_for(ctx, "reduce", src, dst, dim)
    outer = [s for s in range(len(src.extents)) if s != dim]
    acc = dst.dtype

    def body(vs):
        by_src = dict(zip(outer, vs))
        dst_off = [tirx.const(0, dtype_of(x)) for x in dst.mins]
        for s, d in enumerate(mapping):
            if d is not None:
                dst_off[d] = by_src[s]
        dst_idx = dst.index(dst_off)

        def red(rv):
            src_off = [by_src.get(s, rv[0]) for s in range(len(src.extents))]
            src_idx = src.index(src_off)
            value = cast(elem(cast(tirx.BufferLoad(src.buffer, src_idx), acc)), acc)
            return tirx.BufferStore(dst.buffer, combine(tirx.BufferLoad(dst.buffer, dst_idx), value),
                                    dst_idx)

        loop = loop_nest(ctx, [src.extents[dim]], red, names="r")
        if not clear:
            return loop
        return tirx.SeqStmt([tirx.BufferStore(dst.buffer, identity(acc), dst_idx), loop])

    return loop_nest(ctx, [src.extents[s] for s in outer], body)


@register_lowering("cumsum", KIND)
def lower_cumsum(call, ctx: LoweringContext) -> tirx.Stmt:
    """Inclusive scan along ``dim``: dst[i] = src[i] + dst[i -/+ 1] (``max`` for T.cummax). In place
    is fine: src[i] is read before dst[i] is written and dst[i -/+ 1] is already final."""
    op = TileOp.from_stmt(call)
    src = as_region(op.src, "cumsum source", ctx, "cumsum")
    dst = as_region(op.dst, "cumsum destination", ctx, "cumsum")
    reverse = op.reverse
    dim = _reduce_dim(ctx, "cumsum", op.dim, len(src.extents))
    if len(src.extents) != len(dst.extents) or not all(
            ctx.analyzer.can_prove_equal(x, y) for x, y in zip(src.extents, dst.extents)):
        raise ctx.error("cumsum", f"source {_fmt(src)} and destination {_fmt(dst)} must have the same shape")
    n = src.extents[dim]
    acc = dst.dtype

    def body(vs):
        step = vs[dim]
        pos = (n - 1 - step) if reverse else step
        prev = (pos + 1) if reverse else (pos - 1)
        off = list(vs)
        off[dim] = pos
        prev_off = list(vs)
        prev_off[dim] = prev
        dst_idx = dst.index(off)
        value = cast(tirx.BufferLoad(src.buffer, src.index(off)), acc)
        carried = tirx.BufferLoad(dst.buffer, dst.index(prev_off))
        if op.kind == "max":
            return tirx.BufferStore(dst.buffer, tirx.if_then_else(step > 0, tirx.Max(value, carried), value), dst_idx)
        carried = tirx.if_then_else(step > 0, carried, zero(acc))
        return tirx.BufferStore(dst.buffer, value + carried, dst_idx)

    # The scanned dim must be the innermost-sequential one: put it last so every row is scanned in
    # order while the other dims stay free.
    order = [d for d in range(len(src.extents)) if d != dim] + [dim]
    extents = [src.extents[d] for d in order]

    def reordered(vs):
        by_dim = dict(zip(order, vs))
        return body([by_dim[d] for d in range(len(src.extents))])

    return loop_nest(ctx, extents, reordered)
