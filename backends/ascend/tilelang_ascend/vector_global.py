"""Global tensors inside T.Parallel: staged through UB tiles (copy in, compute, copy out).

A body like examples/elementwise/scale_add.py::

    for i, j in T.Parallel(bm, bn):
        row = by * bm + i
        col = bx * bn + j
        if row < M and col < N:
            C[row, col] = alpha * A[row, col] + B[row, col]

indexes global tensors at ``base + loop variable`` per dimension. That is a tile: the lowering
moves ``A[by*bm : +bm, bx*bn : +bn]`` into UB with one DataCopyPad (zeroed first when it may be
ragged), evaluates the body on UB tiles, and writes ``C``'s tile back with one DataCopyPad that is
clipped to the tensor, which is what the ``if`` guard said: a guard made only of bounds checks
``index < extent`` of the accessed dimensions is dropped. Anything else global (a strided or
transposed index, a guard that is not a bounds check) stays a "cannot become SIMD" error.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from tilelang_core.ir.conditions import conjuncts

from . import isa


def _bound_names(ctx, buf_var):
    tensor = ctx.params.get(buf_var)
    if tensor is None:
        raise ctx.error("T.Parallel", f"'{buf_var.name}' is not a parameter of the kernel")
    return tensor


def gm_tile_for(nest, buf_var, indices, what: str) -> isa.GmTile:
    """The GM tile that ``buf_var[indices]`` sweeps over the nest (``base + i`` / ``base + j``)."""
    from .vector_lowering import _affine

    tensor = _bound_names(nest.ctx, buf_var)
    mins, extents, row_dim, col_dim = [], [], None, None
    for d, idx in enumerate(indices):
        form = _affine(nest, idx)
        if form is None or (form[1], form[2]) not in ((0, 0), (1, 0), (0, 1)):
            raise nest.not_simd(f"{what} global '{buf_var.name}' at index '{idx}': only "
                                f"'base + loop variable' indices of global tensors become tiles")
        base = form[0] if not isinstance(form[0], int) else tirx.IntImm("int32", form[0])
        mins.append(base)
        if form[1] == 1:
            row_dim = d
            extents.append(nest.rows)
        elif form[2] == 1:
            col_dim = d
            extents.append(nest.cols)
        else:
            extents.append(1)
    last = len(indices) - 1
    if col_dim != last or (nest.rows > 1 and row_dim is None):
        raise nest.not_simd(f"{what} global '{buf_var.name}{list(indices)}' is not a row-major "
                            f"tile of the loop nest (the inner loop variable must index the "
                            f"last dimension, the outer one another dimension)")
    return isa.GmTile(tensor, mins, extents, row_dim, col_dim)


def staged_load(nest, load) -> isa.Tile:
    """A UB tile holding the global tile ``load`` reads (one copy per distinct tile per nest)."""
    from .lowering import may_be_ragged

    key = (load.source, tuple(str(i) for i in load.indices))
    if key in nest.staged:
        return nest.staged[key]
    tile_gm = gm_tile_for(nest, load.source, list(load.indices), "the load of")
    tile = nest.temp(tile_gm.dtype)
    if may_be_ragged(tile_gm, nest.ctx):
        nest.ctx.emit(isa.VDup(tile, isa.Scalar(0, tile.dtype)))
    nest.ctx.emit(isa.CopyGmToUb(tile_gm, tile))
    nest.staged[key] = tile
    return tile


def store_to_gm(nest, store, lower_value) -> None:
    """``G[base + i, base + j] = expr``: evaluate into a UB tile, then one clipped copy out."""
    tile_gm = gm_tile_for(nest, store.buffer, list(store.indices), "the store to")
    tile = nest.temp(tile_gm.dtype)
    lower_value(tile)
    nest.ctx.emit(isa.CopyUbToGm(tile, tile_gm))


def strip_bounds_guard(nest, guard, inline) -> list:
    """The statements under ``if <bounds checks>:``; an error for any other ``if``."""
    if guard.else_case is not None:
        raise nest.not_simd("an if/else in the body (use T.if_then_else)")
    body = guard.then_case
    stmts = list(body.seq) if isinstance(body, tirx.SeqStmt) else [body]
    accesses = []
    for s in stmts:
        if isinstance(s, tirx.BufferStore):
            accesses.append((s.buffer, [inline(i) for i in s.indices]))

            def on_load(load):
                accesses.append((load.source, [inline(i) for i in load.indices]))

            tvm_ffi_walk(inline(s.value), on_load)
    for term in conjuncts(inline(guard.condition)):
        if not _is_bounds_check(term, accesses, nest.ctx):
            raise nest.not_simd(f"the if condition '{term}' is not a bounds check of a global "
                                f"tensor index (use T.if_then_else for data-dependent choices)")
    return stmts


def tvm_ffi_walk(expr, fn) -> None:
    tvm_ffi.structural_walk(expr, [(tvm.ir.TensorLoad, fn)])


def _is_bounds_check(term, accesses, ctx) -> bool:
    """``idx < extent`` (or ``idx >= 0``) where idx indexes dimension d of a global tensor
    whose size in d is extent."""
    kind = type(term).__name__
    if kind == "GE" and type(term.b).__name__ == "IntImm" and int(term.b.value) == 0:
        idx, bound = term.a, None
    elif kind == "LT":
        idx, bound = term.a, term.b
    else:
        return False
    for buf, indices in accesses:
        if str(buf.ty.storage_scope) not in ("global", ""):
            continue
        shape = list(buf.ty.shape)
        for d, i in enumerate(indices):
            if tvm_ffi.structural_equal(i, idx) and (
                    bound is None or ctx.analyzer.can_prove(bound == shape[d])):
                return True
    return False
