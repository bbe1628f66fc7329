"""Negative indices count from the end, as in Python and TileLang: ``A[-1]`` is ``A[n - 1]``.

TileLang legalizes every buffer index that is provably negative by adding the extent of its
dimension (``A[-i - 1]`` in ``for i in T.serial(4)`` reads ``A[n - 1 - i]``); an index that may be
either sign is left as written. Without this a negative index read before the buffer (a silent
wrong value on the cpu backend, a fault or garbage on a GPU). The same rule here, for element
reads and writes of every buffer and for the starts of tile-op regions (``T.copy(A[-1, 0:8], s)``):
the loop, thread and bound variables' ranges are what the proof may use (not the conditions of an
enclosing ``if``: an index negative only under one is left alone, as an unknown sign is).
"""

from __future__ import annotations

import contextlib
import re

import tvm
import tvm_ffi
from tvm import tirx

from ..ir import region as R

_SCALAR_INT = re.compile(r"int\d+")


def legalize_negative_indices(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """``func`` with each provably negative index ``i`` of a dimension of extent ``n`` as ``i + n``."""
    analyzer = tvm.sym.Analyzer()

    def on_for(loop):
        extent = R.as_int(loop.extent)
        if (extent is None or extent > 0) and loop.step is None:
            with contextlib.suppress(Exception):  # (a variable bound twice keeps its first range)
                analyzer.bind(loop.loop_var, tvm.ir.Range.from_min_extent(loop.min, loop.extent))

    def on_attr(attr):
        if attr.attr_key == "thread_extent":
            with contextlib.suppress(Exception):
                analyzer.bind(attr.node.var, tvm.ir.Range.from_min_extent(0, attr.value))

    def on_bind(bind):
        with contextlib.suppress(Exception):
            analyzer.bind(bind.var, bind.value)

    tvm_ffi.structural_walk(func.body, [(tirx.For, on_for), (tirx.AttrStmt, on_attr), (tirx.Bind, on_bind)],
                            order="pre")

    def legal(indices, shape):
        out, changed = [], False
        for index, extent in zip(indices, shape):
            if _SCALAR_INT.fullmatch(str(index.ty)) and analyzer.can_prove(index < 0):  # (not ramps)
                index, changed = analyzer.simplify(index + tirx.Cast(str(index.ty), extent)), True
            out.append(index)
        return out, changed

    def on_load(load):
        indices, changed = legal(list(load.indices), list(load.source.ty.shape))
        return tirx.BufferLoad(load.source, indices) if changed else load

    def on_store(store):
        indices, changed = legal(list(store.indices), list(store.buffer.ty.shape))
        return tirx.BufferStore(store.buffer, store.value, indices) if changed else store

    def on_region(region):
        mins, changed = legal(R.mins_of(region), list(region.source.ty.shape))
        return R.make_region(region.source, mins, R.extents_of(region)) if changed else region

    body = tvm_ffi.structural_map(func.body, [(tvm.ir.TensorLoad, on_load), (tirx.BufferStore, on_store),
                                              (tvm.ir.TensorRegion, on_region)])
    return func if body.same_as(func.body) else func.with_body(body)


__all__ = ["legalize_negative_indices"]
