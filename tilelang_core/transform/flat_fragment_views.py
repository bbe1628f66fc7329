"""A 1-D fragment indexed by the row-major flattening of T.Parallel loop variables becomes a view.

TileLang's composable-index test writes a tile into a flat fragment and reads it back by one loop::

    B_local = T.alloc_fragment([bM * bN], dtype)
    for i, j in T.Parallel(bM, bN):
        B_local[i * bN + j] = A_local[i, j]
    for i in T.Parallel(bM * bN):
        B[...] = B_local[i]

Layout inference maps a fragment's elements to threads through the loop variables that index it;
``i * bN + j`` is not one, so the fragment was held whole by every thread and then refused. Here
such an access is rewritten to a view of the same registers with the loops' shape
(``B_local_2d[i, j]``, a ``DeclBuffer`` on ``B_local``'s data, as ``T.reshape`` makes), which the
existing view machinery lays out as ``B_local`` re-indexed. The index must be exactly
``sum(v_k * stride_k)`` over distinct loop variables of the nest with row-major strides over their
extents, whose product is the fragment's size; anything else is left alone (and laid out or
refused as before).
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from ..errors import LayoutError
from ..ir import region as R
from .layout_inference import is_fragment, parallel_nests

BUFFER_DATA = "tirx.buffer_data"


def _terms(expr, out):
    """``expr`` as (var, coefficient) terms; False when it is not a sum of var * constant."""
    if isinstance(expr, tirx.Add):
        return _terms(expr.a, out) and _terms(expr.b, out)
    if isinstance(expr, tirx.Var):
        out.append((expr, 1))
        return True
    if isinstance(expr, tirx.Mul):
        for var, const in ((expr.a, expr.b), (expr.b, expr.a)):
            if isinstance(var, tirx.Var) and R.as_int(const) is not None:
                out.append((var, R.as_int(const)))
                return True
    return False


def flat_dims(nest, indices, size: int) -> list[int] | None:
    """The nest's loop dims (outermost stride first) whose row-major flattening ``indices[0]`` is,
    covering exactly ``size`` elements; None otherwise."""
    if len(indices) != 1:
        return None
    terms = []
    if not _terms(indices[0], terms) or len(terms) < 2:
        return None
    dims = []
    for var, coef in terms:
        hit = [k for k, v in enumerate(nest.loop_vars) if var.same_as(v)]
        if not hit or hit[0] in [d for d, _ in dims]:
            return None
        dims.append((hit[0], coef))
    dims.sort(key=lambda dc: -dc[1])
    stride = 1
    for d, coef in reversed(dims):
        extent = R.as_int(nest.extents[d])
        if extent is None or coef != stride:
            return None
        stride *= extent
    return [d for d, _ in dims] if stride == size else None


def flat_fragment_views(func):
    """``func`` with flat fragment accesses in T.Parallel loops read through views (module doc)."""
    views = {}  # (buffer, shape) -> view
    rewrites = {}  # the nest's outer loop variable -> [(buffer, flat index, view, loop vars)]
    try:
        nests = parallel_nests(func.body)
    except LayoutError:  # (a fragment in a loop of symbolic extent: layout inference refuses it)
        return func
    for nest in nests:
        for buffer, indices in nest.accesses:
            if not is_fragment(buffer) or len(buffer.ty.shape) != 1 or R.as_int(buffer.ty.shape[0]) is None:
                continue
            dims = flat_dims(nest, indices, R.as_int(buffer.ty.shape[0]))
            if dims is None:
                continue
            shape = tuple(R.as_int(nest.extents[d]) for d in dims)
            key = (buffer.__chandle__(), shape)
            if key not in views:
                views[key] = (buffer, tirx.decl_buffer(list(shape), str(buffer.ty.dtype),
                                                       f"{buffer.name}_{'x'.join(map(str, shape))}",
                                                       data=buffer.data, scope=str(buffer.ty.storage_scope)))
            rewrites.setdefault(nest.loop.loop_var.__chandle__(), []).append(
                (buffer, indices[0], views[key][1], [nest.loop_vars[d] for d in dims]))
    if not rewrites:
        return func
    body = _rewrite_nests(func.body, rewrites)
    return func.with_body(_declare_views(body, list(views.values())))


def _rewrite_nests(body, rewrites):
    def in_nest(loop):
        entries = rewrites[loop.loop_var.__chandle__()]

        def match(buffer, index):
            return next(((view, loop_vars) for b, flat, view, loop_vars in entries
                         if b.same_as(buffer) and tvm_ffi.structural_equal(flat, index)), None)

        def on_load(load):
            hit = match(load.source, load.indices[0]) if is_fragment(load.source) and len(load.indices) == 1 else None
            return load if hit is None else tirx.BufferLoad(hit[0], hit[1])

        def on_store(store):
            value = tvm_ffi.structural_map(store.value, [(tvm.ir.TensorLoad, on_load)])
            hit = match(store.buffer, store.indices[0]) if is_fragment(store.buffer) and len(store.indices) == 1 \
                else None
            return tirx.BufferStore(store.buffer if hit is None else hit[0], value,
                                    list(store.indices) if hit is None else hit[1])

        out = tvm_ffi.structural_map(loop, [(tvm.ir.TensorLoad, on_load)])
        return tvm_ffi.structural_map(out, [(tirx.BufferStore, on_store)])

    def on_for(loop):
        return in_nest(loop) if loop.loop_var.__chandle__() in rewrites else loop

    return tvm_ffi.structural_map(body, [(tirx.For, on_for)])


def _declare_views(body, pairs):
    """Each view declared right after its fragment's allocation (same scope, as T.reshape's)."""
    def on_seq(seq):
        out = []
        for stmt in seq.seq:
            out.append(stmt)
            if isinstance(stmt, tirx.AllocBuffer):
                out += [tirx.DeclBuffer(view, data=buffer.data) for buffer, view in pairs if buffer.same_as(stmt.buffer)]
        return tirx.SeqStmt(out) if len(out) != len(seq.seq) else seq

    return tvm_ffi.structural_map(body, [(tirx.SeqStmt, on_seq)])
