"""T.Parallel loops that read a fragment at a shifted index, run by the registers that hold it.

TileLang's sparse MLA backward stores the halves of a gemm accumulator one after another::

    for s in range(2):
        for bi_i, d_i in T.Parallel(BS, D):
            if bi_i < BS // 2:
                acc_dkv_shared[bi_i, d_i] = acc_dkv[bi_i + s * (BS // 2), d_i]

Iteration ``(bi_i, d_i)`` reads element ``(bi_i + 16 s, d_i)``, which lives in another thread than
element ``(bi_i, d_i)`` does, and which thread depends on ``s``: no one loop layout follows the
fragment (layout inference gives the loop none; a window, fragment_windows.py, repeats inside
registers, a shift does not). TileLang's loop layout is the fragment's taken through the index; so
is this: each thread walks its own registers of the fragment, and register ``l`` holding element
``e`` runs the iteration ``e - offset`` when that lies in the loop. Every iteration whose read is
in range runs exactly once, on the thread holding what it reads.

Taken only when it is provably the same loop: the nest reads one distributed fragment (all its
accesses the same loads, each index one loop variable plus an offset free of the nest's
variables, the fragment's shape the loop's extents), touches no other fragment and writes none,
and the read is in range for every iteration that does
anything (the body is ``if cond: ...`` with ``cond`` implying it, given the loops around, or no
condition at all). Otherwise the caller refuses the loop as before.

On every SIMT target. TileLang's sparse MLA backward, which needs it, passes on the H200 (stop 42;
it was opt-in while that example gave a wrong dQ/dKV there, caused by a bool mask stored as 2-byte
vector lanes elsewhere in the kernel: simt/transform/printable.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import tvm
import tvm_ffi
from tvm import tirx

from tilelang_core.transform.fragment_windows import var_plus_offset
from tilelang_core.transform.structural import stmt_children

from .state import KernelState, if_then, substitute


@dataclass(frozen=True)
class ShiftedRead:
    buffer: object
    #: per fragment dimension: the nest loop dimension that indexes it
    dims: tuple
    #: per fragment dimension: the offset added to the loop variable
    offsets: tuple


def _shift(nest, indices, shape, analyzer):
    """(dims, offsets) of a read whose every index is a loop variable over the fragment's whole
    extent plus an offset (fragment_windows.var_plus_offset), else None."""
    found = var_plus_offset(nest, indices, analyzer)
    if found is None or any(int(nest.extents[k]) != int(size) for k, size in zip(found[0], shape)):
        return None
    return found


def _enclosing_loops(body, loop) -> list:
    """The For loops around ``loop`` in ``body``, outermost first."""
    found = []

    def visit(node, stack):
        if found:
            return
        if isinstance(node, tirx.For):
            if node.same_as(loop):
                found.append(list(stack))
                return
            stack = stack + [node]
        for child in stmt_children(node):
            visit(child, stack)

    visit(body, [])
    return found[0] if found else []


def shifted_read(nest, st: KernelState, body) -> ShiftedRead | None:
    """The nest's shifted read when the module doc's conditions hold, else None."""
    distributed = [(b, i) for b, i in nest.accesses if not st.layouts[b].is_whole]
    if not distributed or any(not b.same_as(distributed[0][0]) for b, _ in nest.accesses):
        return None  # (one fragment, and no other: the walk maps only its loads to registers)
    buffer, indices = distributed[0]
    if any(b.same_as(buffer) for b, _ in nest.stores) or \
            any(not tvm_ffi.structural_equal(list(i), list(indices)) for _, i in distributed):
        return None
    analyzer = tvm.sym.Analyzer()
    for loop in _enclosing_loops(body, nest.loop):
        analyzer.bind(loop.loop_var, tvm.ir.Range.from_min_extent(loop.min, loop.extent))
    for var, extent in zip(nest.loop_vars, nest.extents):
        analyzer.bind(var, tvm.ir.Range.from_min_extent(0, int(extent)))
    shape = [int(s) for s in buffer.ty.shape]
    shift = _shift(nest, indices, shape, analyzer)
    if shift is None or all(isinstance(o, tirx.IntImm) and o.value == 0 for o in shift[1]):
        return None
    inner = nest.inner
    in_range = tirx.all(*[tirx.all(i >= 0, i < size) for i, size in zip(indices, shape)])
    if isinstance(inner, tirx.IfThenElse) and inner.else_case is None:
        with analyzer.constraint_scope(inner.condition):
            proved = analyzer.can_prove(in_range)
    else:
        proved = analyzer.can_prove(in_range)
    return ShiftedRead(buffer, *shift) if proved else None


def emit_by_registers(nest, st: KernelState, read: ShiftedRead, guard_global_accesses):
    """The nest as a walk over this thread's registers of ``read.buffer`` (module doc)."""
    layout = st.layouts[read.buffer]
    regs = st.local_buffer(read.buffer)
    l_var = tirx.Var("l", "int32")
    st.analyzer.bind(l_var, tvm.ir.Range.from_min_extent(0, layout.local_size))
    element = [st.simplify(e) for e in layout.index_of(st.thread_var, l_var)]
    values = [None] * len(nest.loop_vars)
    for p, k in enumerate(read.dims):
        values[k] = st.simplify(element[p] - read.offsets[p])
    inner = nest.inner

    def on_load(load):
        if load.source.same_as(read.buffer):
            return tirx.BufferLoad(regs, [l_var])
        return load

    body = tvm_ffi.structural_map(inner, [(tvm.ir.TensorLoad, on_load)])
    body = substitute(body, dict(zip(nest.loop_vars, values)))
    body = guard_global_accesses(body, st)
    inside = tirx.all(*[tirx.all(v >= 0, v < int(e)) for v, e in zip(values, nest.extents)])
    if layout.replicas > 1:
        inside = tirx.all(inside, layout.replica_of(st.thread_var) == 0)
    return tirx.For(l_var, tirx.const(0, "int32"), tirx.const(layout.local_size, "int32"),
                    tirx.ForKind.UNROLLED, if_then(st.simplify(inside), body))
