"""Vector conversions printed as one call (run right after TVM's VectorizeLoop).

TVM's C printer writes a vector cast lane by lane (``r.x = (half)(v.x); r.y = ...``), one
conversion instruction per element; CUDA converts two at a time (``__float22half2_rn``: one
``cvt.rn.f16x2.f32``, fp8 pairs likewise) and fp8 vector casts do not print at all (printable.py
unrolls those loops). A backend that has paired conversions describes them with a
:class:`VectorCasts`; every store of a vector cast it names (``B[ramp] = T.Cast(v)``, what a
converting copy or a ``T.Parallel`` cast vectorizes into) becomes a call of its helper with the
destination's address: ``helper(&B[base], v)``. TVM's printer spells any call returning a vector
lane by lane, so the helper stores the result itself. It computes exactly the per-lane casts
(the scalar cast's rounding and saturation), only in fewer instructions. A cast inside a larger
expression keeps the printer's per-lane form.
"""

from __future__ import annotations

from typing import Protocol

import tvm
import tvm_ffi
from tvm import tirx


class VectorCasts(Protocol):
    """A backend's paired conversions."""

    name: str  # distinguishes the TIR pipeline built with them

    def helper(self, src: str, dst: str, lanes: int) -> str | None:
        """The device function ``void f(dst_scalar* out, src_vector v)`` that stores ``lanes``
        converted lanes of ``src`` as ``dst`` (element dtype names), or None where the printer's
        lane-by-lane cast is what to use."""


def _element(dtype) -> str:
    return str(tvm.DataType(str(dtype)).with_lanes(1))


def stored_cast_helper(store, vector_casts: VectorCasts, lanes: int | None = None) -> str | None:
    """The helper that would print ``store`` (a BufferStore of a vector Cast at consecutive
    elements) as one call, else None. ``lanes``: the vector width, before VectorizeLoop has made
    the store a vector (printable.py asks with the loop's extent)."""
    cast = store.value
    if not isinstance(cast, tirx.Cast) or _element(cast.dtype) == _element(cast.value.dtype):
        return None
    if lanes is None:
        lanes = tvm.DataType(str(cast.dtype)).lanes
        index = store.indices[-1] if len(store.indices) == 1 else None
        if lanes < 2 or not (isinstance(index, tirx.Ramp) and isinstance(index.stride, tirx.IntImm)
                             and int(index.stride.value) == 1):
            return None
    return vector_casts.helper(_element(cast.value.dtype), _element(cast.dtype), lanes)


def vector_cast_calls(body, vector_casts: VectorCasts):
    """``body`` with every vector-cast store ``vector_casts`` names as a call of its helper."""
    def on_store(store):
        name = stored_cast_helper(store, vector_casts)
        if name is None:
            return store
        base = tirx.BufferLoad(store.buffer, [store.indices[0].base])
        return tirx.Evaluate(tirx.call_extern("void", name, tirx.address_of(base), store.value.value))

    return tvm_ffi.structural_map(body, [(tirx.BufferStore, on_store)])


def VectorCastCalls(vector_casts: VectorCasts | None):  # noqa: N802  (a pass factory, named like TVM's)
    """Pass form of :func:`vector_cast_calls` (nothing to do without a backend's table)."""

    @tirx.transform.prim_func_pass(opt_level=0, name="tl.VectorCastCalls")
    def _pass(func, _mod, _ctx):
        return func if vector_casts is None else func.with_body(vector_cast_calls(func.body, vector_casts))

    return _pass
