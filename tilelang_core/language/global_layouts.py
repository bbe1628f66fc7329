"""``T.annotate_layout`` on a global tensor: the tensor's elements are stored in the layout's order.

TileLang's FlashAttention backward accumulates dQ with atomics in the order the gemm fragment
produces it and lets a second kernel, annotated with the same layout, read it back::

    def make_dq_layout(dQ):   # element (b, l, h, d) lives at this index of a 6-D array
        return T.Layout(dQ.shape, lambda b, l, h, d: [b, l // 8, h, d // 8, d % 2, 4 * (l % 8) + (d % 8) // 2])

    T.annotate_layout({dQ: make_dq_layout(dQ)})
    ... T.atomic_add(dQ[bz, k * bN + i, bx, j], dq[i, j]) ...

Semantics (TileLang's): an access ``dQ[idx]`` touches the element at flat offset
``layout.offset(*idx)`` of the tensor's memory. :func:`apply_global_layouts` runs on the parsed
kernel, so every backend sees plain IR: each access of an annotated tensor gets the index whose
row-major offset is ``layout.offset(*idx)``; ``T.copy`` and tile-form ``T.atomic_add`` touching
such a tensor become element-wise ``T.Parallel`` loops (a region of a permuted tensor is no
region). An access outside the logical shape (a ragged tile) reads 0 and writes nothing, as
TileLang's safe memory access does, decided on the logical index before the permutation.
Other tile ops on an annotated global tensor are refused.
"""

from __future__ import annotations

import contextlib

import tvm
import tvm_ffi
from tvm import tirx

from ..ir import Atomic, Copy, TileOp, is_tile_op
from ..ir import region as R
from ..ir.elementwise import cast_to, elementwise
from ..lowering import in_bounds

GLOBAL = ("global", "")


def apply_global_layouts(func, error):
    """Rewrite accesses of global tensors named in ``T.annotate_layout``; ``error(msg)`` makes
    the FrontendError for a refusal."""
    hits = []

    def on_attr(attr):
        if attr.attr_key == "tl.layout_map" and any(
                str(buf.ty.storage_scope) in GLOBAL for buf in attr.node.keys()):
            hits.append(attr)

    tvm_ffi.structural_walk(func.body, [(tirx.AttrStmt, on_attr)])
    if not hits:
        return func
    found: dict[int, tuple] = {}

    def strip(node):
        if isinstance(node, tirx.AttrStmt) and node.attr_key == "tl.layout_map":
            keep = {}
            for buf, index_map in node.node.items():
                if str(buf.ty.storage_scope) in GLOBAL:
                    found[buf.__chandle__()] = (buf, _offset_fn(buf, index_map, error))
                else:
                    keep[buf] = index_map
            body = strip(node.body)
            return tirx.AttrStmt(tvm_ffi.Map(keep), node.attr_key, node.value, body) if keep else body
        mapped = _map_children(node, strip)
        return node if mapped is None else mapped

    body = strip(func.body)
    if not found:
        return func
    return func.with_body(_Rewriter(found, error).visit(body))


def _offset_fn(buf, index_map, error):
    if len(index_map.final_indices) != 1:  # pragma: no cover - _as_ir_layout flattens layouts
        raise error(f"T.annotate_layout on global tensor {buf.name}: the layout must map to one offset")
    shape = [R.as_int(s) for s in buf.ty.shape]
    if any(s is None for s in shape):
        raise error(f"T.annotate_layout on global tensor {buf.name}: its shape {list(buf.ty.shape)} must "
                    "be constant")
    size = 1
    for s in shape:
        size *= s
    probe = tvm.sym.Analyzer()
    idx = [tirx.Var(f"i{d}", "int32") for d in range(len(shape))]
    for v, s in zip(idx, shape):
        probe.bind(v, tvm.ir.Range.from_min_extent(0, s))
    top = probe.const_int_bound(probe.simplify(index_map.map_indices(idx)[0]))
    if top.min_value < 0 or top.max_value >= size:
        raise error(f"T.annotate_layout on global tensor {buf.name}: the layout maps its {size} elements "
                    f"to offsets {top.min_value}..{top.max_value}, outside the tensor")
    return lambda indices: index_map.map_indices(list(indices))[0]


def unravel(offset, shape):
    """The row-major index of ``offset`` in ``shape``."""
    out = []
    for s in reversed(shape[1:]):
        out.append(tirx.floormod(offset, s))
        offset = tirx.floordiv(offset, s)
    out.append(offset)
    return list(reversed(out))


def _map_children(node, fn):
    from .reducers import _map_children as children

    return children(node, fn)


class _Rewriter:
    def __init__(self, found, error):
        self.found = found
        self.error = error
        self.analyzer = tvm.sym.Analyzer()

    def annotated(self, buf):
        return self.found.get(buf.__chandle__()) if buf is not None and tvm.tirx.is_buffer_var(buf) else None

    # -- statements -----------------------------------------------------------------------------
    def visit(self, node):
        if isinstance(node, tirx.For):
            with contextlib.suppress(Exception):
                self.analyzer.bind(node.loop_var, tvm.ir.Range.from_min_extent(node.min, node.extent))
        if isinstance(node, tirx.AttrStmt) and node.attr_key == "thread_extent":
            with contextlib.suppress(Exception):
                self.analyzer.bind(node.node.var, tvm.ir.Range.from_min_extent(0, node.value))
        if isinstance(node, tirx.Bind):
            with contextlib.suppress(Exception):
                self.analyzer.bind(node.var, node.value)
            return tirx.Bind(node.var, self.expr(node.value))
        mapped = _map_children(node, self.visit)
        if mapped is not None:
            if isinstance(node, tirx.IfThenElse):
                return tirx.IfThenElse(self.expr(node.condition), mapped.then_case, mapped.else_case)
            if isinstance(node, tirx.For):
                return tirx.For(mapped.loop_var, self.expr(mapped.min), self.expr(mapped.extent), mapped.kind,
                                mapped.body, mapped.thread_binding, mapped.annotations, mapped.step)
            return mapped
        if isinstance(node, tirx.TilePrimitiveCall) and is_tile_op(node):
            return self.tile_op(node)
        if isinstance(node, tirx.BufferStore):
            value = self.expr(node.value)
            indices = [self.expr(i) for i in node.indices]
            hit = self.annotated(node.buffer)
            if hit is None:
                return tirx.BufferStore(node.buffer, value, indices)
            store = tirx.BufferStore(node.buffer, value, self.mapped(hit, indices))
            cond = in_bounds(self.analyzer, indices, node.buffer.ty.shape)
            return store if cond is None else tirx.IfThenElse(cond, store, None)
        if isinstance(node, tirx.Evaluate):
            return tirx.Evaluate(self.expr(node.value))
        return node

    def mapped(self, hit, indices):
        buf, offset = hit
        return [self.analyzer.simplify(e) for e in unravel(offset(indices), list(buf.ty.shape))]

    def expr(self, e):
        def on_load(load):
            hit = self.annotated(load.source)
            if hit is None:
                return load
            indices = list(load.indices)
            mapped = tirx.BufferLoad(load.source, self.mapped(hit, indices))
            cond = in_bounds(self.analyzer, indices, load.source.ty.shape)
            return mapped if cond is None else tirx.if_then_else(cond, mapped, tirx.const(0, str(load.ty)))

        return tvm_ffi.structural_map(e, [(tvm.ir.TensorLoad, on_load)])

    # -- tile ops -------------------------------------------------------------------------------
    def tile_op(self, stmt):
        op = TileOp.from_stmt(stmt)
        regions = [a for a in op.args() if R.is_region(a)]
        touched = [r for r in regions if self.annotated(r.source) is not None]
        if not touched:
            # element values inside the op (an atomic's scalar) may still read annotated tensors
            return stmt
        name = touched[0].source.name
        if isinstance(op, Copy):
            return self.visit(_elementwise(op.src, op.dst, lambda s, d: tirx.BufferStore(
                op.dst.source, cast_to(s, str(op.dst.source.ty.dtype)), d), self.error))
        if isinstance(op, Atomic) and self.annotated(op.dst.source) is not None and not any(
                self.annotated(r.source) is not None for r in regions if r is not op.dst):
            if all(R.as_int(e) == 1 for e in R.extents_of(op.dst)):
                hit = self.annotated(op.dst.source)
                logical = [self.expr(m) for m in R.mins_of(op.dst)]
                dst = R.make_region(op.dst.source, self.mapped(hit, logical), [1] * len(logical))
                value = op.src if R.is_region(op.src) else self.expr(op.src)
                new = op.replace(dst=dst, src=value).to_stmt()  # (kind, order, per_thread kept)
                cond = in_bounds(self.analyzer, logical, op.dst.source.ty.shape)
                return new if cond is None else tirx.IfThenElse(cond, new, None)
            if R.is_region(op.src):
                return self.visit(_elementwise(op.src, op.dst, lambda s, d: op.replace(
                    dst=R.make_region(op.dst.source, d, [1] * len(d)), src=s).to_stmt(), self.error))
        raise self.error(f"T.{op.name} on {name}, a global tensor with an annotated layout, is not supported; "
                         "only element accesses, T.copy and T.atomic_add may touch it")


def _elementwise(src, dst, make, error):
    """``elementwise`` (ir/elementwise.py), refused for a run-time extent."""
    nest = elementwise(src, dst, make)
    if nest is None:
        raise error(f"a T.copy or T.atomic_add touching a tensor with an annotated layout needs constant "
                    f"extents, got {R.fmt_region(dst)}")
    return nest


__all__ = ["apply_global_layouts"]
