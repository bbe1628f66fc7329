"""A ``T.vectorized`` loop the kernel wrote becomes vector accesses the target can make.

TVM's VectorizeLoop turns ``for i in T.vectorized(n)`` into one statement of ``n`` lanes, and the
C printers write each contiguous access as one ``*(float4*)`` load or store. Two things go wrong
when ``n`` is the kernel's choice, not a lowering's: a vector wider than the target's (128 lanes
of float32: TVM's CUDA printer fails), and an access whose first element is not aligned to the
vector (``B[row, col]`` of a tensor whose row stride is ``N + 2``: the GPU faults).

TileLang plans the width of such a loop, and so does this pass: the widest power of two ``v``
that divides ``n``, fits the target's 16-byte vectors for the widest element the loop touches,
and for which every access is, over each run of ``v`` iterations starting at a multiple of ``v``,

- contiguous (offset ``base + k``) with ``base`` provably a multiple of ``v`` (an aligned vector),
- or, for a load, the same element for all ``v`` (``C[row, col // K]`` with ``K % v == 0``: one
  load, broadcast; the index is written as the run's first so the vectorizer sees that).

The loop becomes ``for o in serial(n / v): for k in vectorized(v)`` over ``o * v + k``; ``v == 1``
is a serial loop. A loop that already fits is left as it is. Loops that touch fragments are left
to the layout's vectorization (a fragment's registers are not addressed like memory).

Runs first in the SIMT pipeline, so every vectorized loop it sees is the kernel's own.
"""

from __future__ import annotations

import contextlib

import tvm
import tvm_ffi
from tvm import tirx

from tilelang_core.ir.intrinsics import flat_offset
from tilelang_core.transform.layout_inference import is_fragment
from tilelang_core.transform.lower_tile_ops import bind_loop_ranges

from .state import KernelState, substitute

VECTOR_BYTES = 16  # the widest access TVM's printers write for a planned loop (float4 / uint4)


def _accesses(body):
    out = []
    tvm_ffi.structural_walk(body, [(tvm.ir.TensorLoad, lambda ld: out.append((ld.source, list(ld.indices), False))),
                                   (tirx.BufferStore, lambda st: out.append((st.buffer, list(st.indices), True)))])
    return out


def _bytes(buffer) -> int:
    dtype = str(buffer.ty.dtype)
    return VECTOR_BYTES if dtype == "bool" else max(1, tvm.runtime.DataType(dtype).bits // 8)


class _Plan:
    """Whether runs of ``v`` iterations of ``loop`` make legal vectors (module docstring)."""

    def __init__(self, loop, analyzer):
        self.loop, self.analyzer = loop, analyzer
        self.extent = int(loop.extent.value)

    def fits(self, v: int, accesses) -> bool:
        outer, inner = tirx.Var("o", "int32"), tirx.Var("k", "int32")
        self.analyzer.bind(outer, tvm.ir.Range.from_min_extent(0, self.extent // v))
        self.analyzer.bind(inner, tvm.ir.Range.from_min_extent(0, v))
        first = {self.loop.loop_var: self.loop.min + outer * v}
        lane = {self.loop.loop_var: self.loop.min + outer * v + inner}
        for buffer, indices, is_store in accesses:
            base = self.analyzer.simplify(substitute(flat_offset(buffer, indices), first))
            step = self.analyzer.simplify(substitute(flat_offset(buffer, indices), lane) - base)
            if self.analyzer.can_prove(step == inner):
                if not self.analyzer.can_prove(tirx.floormod(base, v) == 0):
                    return False
            elif is_store or not self.analyzer.can_prove(step == 0):
                return False
        return True


def _split(loop, v: int, analyzer):
    """``loop`` as runs of ``v`` vectorized iterations (module docstring)."""
    outer, inner = tirx.Var(f"{loop.loop_var.name}_o", "int32"), tirx.Var(f"{loop.loop_var.name}_v", "int32")
    first = {loop.loop_var: loop.min + outer * v}
    lane = {loop.loop_var: loop.min + outer * v + inner}

    def index(buffer, indices):
        # a load invariant over the run reads its first element (one load, broadcast)
        base = flat_offset(buffer, [substitute(i, first) for i in indices])
        if analyzer.can_prove(flat_offset(buffer, [substitute(i, lane) for i in indices]) - base == 0):
            return [substitute(i, first) for i in indices]
        return [substitute(i, lane) for i in indices]

    def on_load(ld):
        return tirx.BufferLoad(ld.source, index(ld.source, list(ld.indices)))

    # loads first (they no longer name the loop variable after), then every other use
    body = substitute(tvm_ffi.structural_map(loop.body, [(tvm.ir.TensorLoad, on_load)]), lane)
    kind = tirx.ForKind.VECTORIZED if v > 1 else tirx.ForKind.SERIAL
    body = tirx.For(inner, 0, v, kind, body) if v > 1 else substitute(body, {inner: 0})
    return tirx.For(outer, 0, int(loop.extent.value) // v, tirx.ForKind.SERIAL, body, None, loop.annotations)


def has_vectorized_loops(body) -> bool:
    loops = []
    tvm_ffi.structural_walk(body, [(tirx.For, lambda f: loops.append(f) if f.kind == tirx.ForKind.VECTORIZED else None)])
    return bool(loops)


def plan_vectorized_loops(body, st: KernelState, facts=()):
    """``body`` with every vectorized loop of the kernel at a width the target takes (the SIMT
    pipeline runs it only where ``has_vectorized_loops``). ``facts``: conditions every call
    checks (``T.assume(N % 4 == 0)``, language/assumes.py), which may prove an offset aligned."""
    analyzer = tvm.sym.Analyzer()
    try:
        bind_loop_ranges(analyzer, body)
    except Exception:  # noqa: BLE001 - without the ranges fewer offsets prove aligned: narrower, still right
        analyzer = tvm.sym.Analyzer()
    with contextlib.ExitStack() as scopes:
        for fact in facts:
            scopes.enter_context(analyzer.constraint_scope(fact))
        return _plan_loops(body, st, analyzer)


def _plan_loops(body, st: KernelState, analyzer):
    vector_bytes = min(VECTOR_BYTES, st.dialect.vector_bytes)

    def on_for(loop):
        if loop.kind != tirx.ForKind.VECTORIZED or not isinstance(loop.extent, tirx.IntImm):
            return loop
        accesses = _accesses(loop.body)
        if any(is_fragment(buffer) for buffer, _, _ in accesses):
            return loop
        plan, extent = _Plan(loop, analyzer), int(loop.extent.value)
        v = max(1, vector_bytes // max([_bytes(b) for b, _, _ in accesses], default=1))
        while v > 1 and (extent % v or not plan.fits(v, accesses)):
            v //= 2
        if v == extent:
            return loop
        return _split(loop, v, analyzer)

    return tvm_ffi.structural_map(body, [(tirx.For, on_for)])


__all__ = ["has_vectorized_loops", "plan_vectorized_loops"]
