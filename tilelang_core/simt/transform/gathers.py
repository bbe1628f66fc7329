"""Row gathers into shared memory as pipeline producers: async copies of whole vectors.

TileLang's sparse attention (DeepSeek's sparse MLA, NSA) loads its K/V tile row by row through an
index tensor inside a ``T.Pipelined`` loop::

    for i_i in T.Pipelined(NI, num_stages=2):
        for bi_i in T.Parallel(BI):
            mask[bi_i] = Indices[..., i_i * BI + bi_i] <= max_kv_i
        for bi_i, d_i in T.Parallel(BI, D):
            KV_shared[bi_i, d_i] = KV[b_i, Indices[..., i_i * BI + bi_i], g_i, d_i]
        ...gemms on KV_shared...

TileLang issues such a loop as 16-byte cp.async copies that the pipeline runs ahead of the gemms.
Here the software pipeline takes it as a producer too (software_pipeline.py): its tile gets a slot
per stage and the loop is issued ``num_stages - 1`` iterations ahead, marked ``GATHER``; LowerParallel
then emits each thread's run of ``vec`` elements as one ``tl_cp_async_<bytes>`` whose predicate is
the read's bounds guard (a row index outside the tensor: the vector is zero-filled, as the guarded
element read gives 0). Without a vector the marked loop is lowered as any other: a synchronous
store into the slot, still correct (the slot is not the one the consumers read).

The form taken (``as_gather``), anything else stays an ordinary loop: a nest of T.Parallel loops
from 0 over constant extents whose body is one store into a shared tile at
``[loop-invariant..., i, ..., j]`` (the loop variables in order, the innermost last) of a global
element of the same dtype, ``G[..., j + c]`` (``c`` loop-invariant, no other index naming ``j``),
or that read under the guard the front end puts on it (``if_then_else(cond, G[...], 0)``, ``cond``
free of ``j``). Reads in the row indices (``Indices[...]``) must be of global tensors.
"""

from __future__ import annotations

from dataclasses import dataclass

import tvm
import tvm_ffi
from tvm import tirx

from tilelang_core.ir.atomic_calls import is_parallel_loop
from tilelang_core.transform.bindings import uses_any
from tilelang_core.transform.safe_values import is_if_then_else

from .. import intrinsics as I

#: annotation on the outer loop of a gather the software pipeline issues ahead (async copies)
GATHER = "tl.async_gather"

SHARED = ("shared", "shared.dyn")
GLOBAL = ("global", "")


@dataclass
class Gather:
    loops: list  # the nest's For loops, outermost first
    dst: object  # the shared buffer
    dst_indices: list
    load: object  # the global TensorLoad
    cond: object  # its guard, or None

    @property
    def loop_vars(self) -> list:
        return [loop.loop_var for loop in self.loops]

    @property
    def extents(self) -> list[int]:
        return [int(loop.extent.value) for loop in self.loops]


def _scope(buffer) -> str:
    return str(buffer.ty.storage_scope)


def _is_zero(expr) -> bool:
    return isinstance(expr, (tirx.IntImm, tirx.FloatImm)) and expr.value == 0


def _uses(exprs, variables) -> bool:
    return any(uses_any(e, variables) for e in exprs)


def _reads_only_global(expr) -> bool:
    ok = [True]

    def on_load(load):
        if _scope(load.source) not in GLOBAL:
            ok[0] = False

    tvm_ffi.structural_walk(expr, [(tvm.ir.TensorLoad, on_load)])
    return ok[0]


def as_gather(stmt) -> Gather | None:
    """The row gather ``stmt`` is (module docstring), or None."""
    loops, node = [], stmt
    while is_parallel_loop(node):
        if not (isinstance(node.min, tirx.IntImm) and node.min.value == 0 and isinstance(node.extent, tirx.IntImm)):
            return None
        loops.append(node)
        node = node.body
    if not loops or not isinstance(node, tirx.BufferStore) or _scope(node.buffer) not in SHARED:
        return None
    loop_vars = [loop.loop_var for loop in loops]
    lead = len(node.indices) - len(loop_vars)
    if lead < 0 or any(not a.same_as(v) for a, v in zip(list(node.indices)[lead:], loop_vars)) \
            or _uses(list(node.indices)[:lead], loop_vars):
        return None
    value, cond = node.value, None
    if is_if_then_else(value):
        cond, value, other = value.args
        if not _is_zero(other) or uses_any(cond, loop_vars[-1:]) or not _reads_only_global(cond):
            return None
    if not isinstance(value, tvm.ir.TensorLoad) or _scope(value.source) not in GLOBAL \
            or str(value.source.ty.dtype) != str(node.buffer.ty.dtype):
        return None
    j = loop_vars[-1]
    *rows, last = list(value.indices)
    if _uses(rows, [j]) or not _reads_only_global(value):
        return None
    offset = tirx.Sub(last, j)
    if uses_any(tvm.sym.Analyzer().simplify(offset), loop_vars):
        return None
    return Gather(loops, node.buffer, list(node.indices), value, cond)


def gather_reads(g: Gather) -> set:
    """The global tensors the gather reads (its source and the row indices' tensors)."""
    found = set()
    tvm_ffi.structural_walk(g.load, [(tvm.ir.TensorLoad, lambda l: found.add(l.source))])
    if g.cond is not None:
        tvm_ffi.structural_walk(g.cond, [(tvm.ir.TensorLoad, lambda l: found.add(l.source))])
    return found


def marked(stmt):
    """``stmt`` (a gather) with its outer loop marked GATHER."""
    ann = dict(stmt.annotations) if stmt.annotations is not None else {}
    ann[GATHER] = tirx.const(1, "int32")
    return tirx.For(stmt.loop_var, stmt.min, stmt.extent, stmt.kind, stmt.body, stmt.thread_binding, ann)


def is_marked(loop) -> bool:
    return loop.annotations is not None and GATHER in loop.annotations


def lower_async_gather(nest, st):
    """A marked gather as each thread's runs of ``vec`` elements, one async copy each (module
    docstring); None where no vector of 4 bytes or more fits (the caller lowers it as a loop)."""
    from tilelang_core.ir import region as R
    from tilelang_core.layout import Fragment

    g = as_gather(nest.loop)
    if g is None or not st.dialect.async_copy:
        return None
    nbytes = max(1, tvm.runtime.DataType(str(g.dst.ty.dtype)).bits // 8)
    extents = g.extents
    total = 1
    for e in extents:
        total *= e
    j = g.loop_vars[-1]
    start = st.simplify(tirx.Sub(g.load.indices[-1], j))  # the run's column offset in the tensor
    for width in (16, 8, 4):
        vec = width // nbytes
        if vec < 2 or extents[-1] % vec or total % (vec * st.num_threads):
            continue
        if not (R.rows_in_vectors(g.load.source, vec, st.analyzer) and R.rows_in_vectors(g.dst, vec, st.analyzer)
                and st.analyzer.can_prove(tirx.floormod(start, vec) == 0)):
            continue
        anchor = Fragment.spread(tuple(extents), st.num_threads, vec)
        if anchor.replicas != 1 or anchor.local_size % vec:
            continue
        return _emit_runs(g, st, anchor, vec, width)
    return None


def _emit_runs(g: Gather, st, anchor, vec: int, width: int):
    """``tl_cp_async_<width>(&dst[run], &src[run], in bounds)`` for each of the thread's runs; None
    where a read past the tensor would give other than zeros (T.annotate_safe_value)."""
    from .lower_parallel import guard_global_accesses  # (it imports this module)
    from .state import substitute

    q = tirx.Var("q", "int32")
    st.analyzer.bind(q, tvm.ir.Range.from_min_extent(0, anchor.local_size // vec))
    index = [st.simplify(e) for e in anchor.index_of(st.thread_var, q * vec)]
    at = dict(zip(g.loop_vars, index))
    dst = tirx.BufferLoad(g.dst, [substitute(i, at) for i in g.dst_indices])
    src = substitute(g.load, at)
    if g.cond is not None:
        src = tirx.if_then_else(substitute(g.cond, at), src, tirx.const(0, str(g.dst.ty.dtype)))
    # the run's first element guarded as an element read is (rows hold whole runs, so its bounds
    # are the run's); the row index's own reads (Indices[...]) guarded too
    guarded = guard_global_accesses(tirx.BufferStore(dst.source, src, list(dst.indices)), st).value
    conds, value = [], guarded
    while is_if_then_else(value):
        cond, value, other = value.args
        if not _is_zero(other):
            return None
        conds.append(cond)
    if not isinstance(value, tvm.ir.TensorLoad):
        return None
    pred = conds[0] if conds else tirx.const(True, "bool")
    for cond in conds[1:]:
        pred = tirx.And(pred, cond)
    call = I.call(f"tl_cp_async_{width}", tirx.address_of(dst), tirx.address_of(value), pred)
    return tirx.For(q, tirx.const(0, "int32"), tirx.const(anchor.local_size // vec, "int32"),
                    tirx.ForKind.UNROLLED, call)


__all__ = ["GATHER", "Gather", "as_gather", "gather_reads", "is_marked", "lower_async_gather", "marked"]
