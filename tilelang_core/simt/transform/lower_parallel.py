"""LowerParallel: T.Parallel loop nests -> per-thread loops over registers.

A nest that touches fragments follows the layout of the fragment indexed by all its loop
variables (layout inference made every other fragment in it compatible): thread ``tx`` runs
``for l in range(local_size)`` over the elements ``index_of(tx, l)`` it owns, and fragment
accesses become register accesses. A nest over shared/global memory only is dealt round-robin
over the threads (replica threads of an uneven split do nothing).
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from tilelang_core.layout import THREAD, Fragment
from tilelang_core.ir import region as R
from tilelang_core.lowering import in_bounds
from tilelang_core.transform.bindings import (bound_vars, calls_above, drop_bindings, is_pure, reads_any,
                                              written_buffers)
from tilelang_core.transform.safe_values import padding_for
from tilelang_core.transform.divided_indices import divided_access, divided_layout
from tilelang_core.transform.fragment_windows import window_access, window_owned
from tilelang_core.transform.layout_inference import (access_dims, access_layout, is_fragment, is_owned_form,
                                                     nest_anchor, parallel_nests, same_owners)
from tilelang_core.transform.owned_accesses import not_owned, owned_access

from .. import intrinsics as I
from .lane_guards import split_lane_guards
from .gathers import is_marked, lower_async_gather
from .shifted_reads import emit_by_registers, shifted_read
from .state import KernelState, if_then, loop_layout_guard, substitute


def lower_parallel(body, st: KernelState):
    nests = parallel_nests(body)
    if not nests:
        return body
    replacements = [(n.loop, _lower_nest(n, st, body)) for n in nests]
    body = _replace_loops(body, replacements)
    left = parallel_nests(body)
    if left:  # every thread would run the whole loop: a race on shared memory, never an answer
        from tilelang_core.errors import LoweringError
        from tilelang_core.lowering import source_location

        raise LoweringError(f"kernel '{st.kernel}': internal error: a T.Parallel loop over "
                            f"{left[0].loop_vars[0]} was not distributed over the threads (inside a "
                            f"statement LowerParallel does not descend into); please report it"
                            + (f"\n  --> {source_location(left[0].loop)}" if source_location(left[0].loop) else ""))
    return body


def _replace_loops(body, replacements):
    """Replace whole loop nests (outermost first) without descending into replaced nodes."""
    def visit(node):
        for old, new in replacements:
            if node.same_as(old):
                return new
        if isinstance(node, tirx.SeqStmt):
            return tirx.SeqStmt([visit(s) for s in node.seq])
        if isinstance(node, tirx.For):
            return tirx.For(node.loop_var, node.min, node.extent, node.kind, visit(node.body),
                            node.thread_binding, node.annotations)
        if isinstance(node, tirx.AttrStmt):
            return tirx.AttrStmt(node.node, node.attr_key, node.value, visit(node.body))
        if isinstance(node, tirx.IfThenElse):
            return tirx.IfThenElse(node.condition, visit(node.then_case),
                                   visit(node.else_case) if node.else_case is not None else None)
        if isinstance(node, tirx.While):  # a T.Parallel inside `while` (was left unlowered)
            return tirx.While(node.condition, visit(node.body), node.span)
        return node  # leaves, including Bind (x = expr): no body in TVM 0.27

    return visit(body)


def _global_bounds(buffer, indices, st: KernelState):
    """The in-bounds condition of a global access; None when the analyzer proves it."""
    return in_bounds(st.analyzer, indices, buffer.ty.shape)


def guard_global_accesses(body, st: KernelState):
    """Tiles overhang tensors whose sizes the tile does not divide: a T.Parallel element past the
    end reads 0 (or the tensor's T.annotate_safe_value) and writes nothing (TileLang's safe memory
    access), unless provably inside."""

    def is_global(buffer) -> bool:
        return str(buffer.ty.storage_scope) in ("global", "")

    def on_load(load):
        if is_global(load.source):
            cond = _global_bounds(load.source, load.indices, st)
            if cond is not None:
                return tirx.if_then_else(cond, load, padding_for(load, st.safe_values))
        return load

    def on_store(store):
        value = tvm_ffi.structural_map(store.value, [(tvm.ir.TensorLoad, on_load)])
        store = tirx.BufferStore(store.buffer, value, store.indices)
        if is_global(store.buffer):
            cond = _global_bounds(store.buffer, store.indices, st)
            if cond is not None:
                return tirx.IfThenElse(cond, store, None)
        return store

    def on_bind(bind):  # a bound value reads memory where it stands (v = A[r, c] * 2)
        return tirx.Bind(bind.var, tvm_ffi.structural_map(bind.value, [(tvm.ir.TensorLoad, on_load)]), bind.span)

    def on_if(node):
        cond = tvm_ffi.structural_map(node.condition, [(tvm.ir.TensorLoad, on_load)])
        return tirx.IfThenElse(cond, node.then_case, node.else_case, node.span)

    body = tvm_ffi.structural_map(body, [(tirx.BufferStore, on_store), (tirx.Bind, on_bind),
                                         (tirx.IfThenElse, on_if)])
    return body


def _lower_nest(nest, st: KernelState, body=None):
    if nest.symbolic:
        return _emit_strided(nest, st)
    if is_marked(nest.loop):  # a row gather the software pipeline issues ahead (gathers.py)
        runs = lower_async_gather(nest, st)
        if runs is not None:
            return runs
    if nest.layout is not None:  # the author's loop_layout decides (TileLang's first source too)
        from tilelang_core.lowering import source_location

        past = loop_layout_guard(nest.layout, st, f"the T.Parallel loop over "
                                 f"({', '.join(str(v) for v in nest.loop_vars)})", source_location(nest.loop))
        stmt = _emit(nest, st, nest.layout, guard_replicas=False)[0]
        return stmt if past is None else if_then(past, stmt)  # threads past the layout run nothing
    read = shifted_read(nest, st, body) if body is not None else None
    if read is not None:  # acc[i + s * 16, j]: walked by the registers that hold it (shifted_reads.py)
        return emit_by_registers(nest, st, read, guard_global_accesses)
    anchor = nest_anchor(nest, st.layouts)  # the one layout inference followed
    if anchor is not None:
        return _emit(nest, st, anchor, guard_replicas=False)[0]
    if any(st.layouts[b].is_whole for b, _ in nest.stores):
        # writes into fragments every thread holds whole: every thread runs every element
        return _emit(nest, st, Fragment.replicated(nest.extents, st.num_threads), guard_replicas=False)[0]
    partial = _partial_anchor(nest, st)
    if partial is not None:
        # a fragment indexed by some of the loop variables (a row statistic m[i] read in a loop
        # over i, j of shared tiles): each thread runs the elements whose m it holds
        return _emit(nest, st, partial, guard_replicas=True)[0]
    # No fragment to follow: deal elements over threads, in 16-byte runs when that vectorizes.
    vec = _widest_vector(nest, st)
    while vec > 1:
        anchor = Fragment.spread(tuple(nest.extents), st.num_threads, vec)
        if anchor.local_size % vec == 0 and anchor.replicas == 1:
            stmt, vectorized = _emit(nest, st, anchor, guard_replicas=True)
            if vectorized:
                return stmt
        vec //= 2
    return _emit(nest, st, Fragment.spread(tuple(nest.extents), st.num_threads), True)[0]


def _emit_strided(nest, st: KernelState):
    """A nest whose extents are known at run time (no fragments in it): thread ``tx`` runs the
    flat elements ``tx, tx + threads, ...`` below their product, each unflattened row-major."""
    inner = nest.inner
    total = st.simplify(_prod(nest.extents))
    trip, flat = tirx.Var("it", "int32"), tirx.Var("flat", "int32")
    threads = tirx.const(st.num_threads, "int32")
    index, place = [], tirx.const(1, "int32")
    for extent in reversed(nest.extents):
        index.insert(0, tirx.floormod(tirx.floordiv(flat, place), extent))
        place = place * extent
    body = substitute(inner, dict(zip(nest.loop_vars, index)))
    body = guard_global_accesses(body, st)
    body = tirx.IfThenElse(flat < total, body, None)
    body = substitute(body, {flat: trip * threads + st.thread_var})
    return tirx.For(trip, tirx.const(0, "int32"), tirx.floordiv(total + threads - 1, threads),
                    tirx.ForKind.SERIAL, body)


def _partial_anchor(nest, st: KernelState):
    """The loop layout read off a distributed fragment that a subset of the loop variables index
    (in order), or None when the nest touches no distributed fragment."""
    for buffer, indices in nest.accesses:
        dims = access_dims(nest, indices)
        layout = st.layouts[buffer]
        if layout.is_whole or dims is None or len(set(dims)) != len(dims):
            continue
        kept = sorted(dims)
        in_order = layout if kept == dims else layout.permute([dims.index(d) for d in kept])
        if list(in_order.shape) != [nest.extents[d] for d in kept]:
            continue
        anchor = in_order.broadcast(kept, nest.extents)
        if anchor.replicas > 1 and nest.stores:
            _refuse(nest, st, buffer, "is read by a subset of the loop variables while the loop also writes "
                    "fragments, and its copies cannot split the other loop dimensions")
        return anchor
    return None


def _check_owners(nest, st: KernelState, anchor) -> None:
    """Every distributed fragment the loop touches must be held by the thread that runs each of
    its elements under ``anchor``; where layout inference could not make that so (two fragments
    read transposed to one another, two row statistics of different layouts), the kernel is
    refused: running it would read other threads' registers, a silent wrong answer."""
    for buffer, indices in nest.accesses:
        layout = st.layouts[buffer]
        dims = access_dims(nest, indices)
        if layout.is_whole:
            continue
        divided = divided_access(nest, indices) if dims is None else None
        if divided is not None:  # B[i, j // 2] (transform/divided_indices.py)
            if any(b.same_as(buffer) for b, _ in nest.stores):
                _refuse(nest, st, buffer, "is written at a divided index in a T.Parallel loop (several "
                        "iterations would write one element)")
            want = divided_layout(nest, anchor, divided, tuple(layout.shape))
            if want is None or not same_owners(want, layout):
                _refuse(nest, st, buffer, f"is read at [{', '.join(map(str, indices))}], laid out as {layout}, "
                        f"which does not hold each element in the threads whose iterations read it")
            continue
        if is_owned_form(nest, indices, layout):  # any other index, or a part (owned_accesses.py)
            why = not_owned(anchor, layout, nest, owned_access(nest, indices))
            if why is not None:
                _refuse(nest, st, buffer, f"is accessed at [{', '.join(map(str, indices))}], and {why}")
            continue
        if dims is None:  # a window (_check_fragment_indices refused every other form)
            # (read or written: a window is one element per iteration, in the threads checked below)
            window = window_access(nest, indices, layout.shape)
            _check_window_bounds(nest, st, buffer, window)
            if not window_owned(layout, anchor, window, nest.extents):
                _refuse(nest, st, buffer, f"is read at [{', '.join(map(str, indices))}], whose windows lie in "
                        f"other threads than the loop's ({layout})")
            continue
        if len(set(dims)) != len(dims):
            _refuse(nest, st, buffer, "is indexed with one loop variable twice (a diagonal)")
        want = access_layout(anchor, dims, tuple(layout.shape))
        dropped = [k for k in range(len(nest.extents)) if k not in dims]
        if any(b.same_as(buffer) for b, _ in nest.stores) and any(
                x.space == THREAD and x.extent > 1 for k in dropped for x in anchor.digits[k]):
            _refuse(nest, st, buffer, f"is written at [{', '.join(map(str, indices))}] in a loop whose other "
                    f"variables run in other threads: each thread's copy would see only its own iterations")
        if not same_owners(want, layout):
            _refuse(nest, st, buffer, f"is laid out as {layout}, but this loop runs its elements in "
                    f"other threads ({want})")


def _check_window_bounds(nest, st: KernelState, buffer, window) -> None:
    """Every window an offset can select lies inside the fragment (else a register past its end)."""
    for size, k, offset in zip(st.layouts[buffer].shape, window.dims, window.offsets):
        top = size - int(nest.extents[k])
        if not st.analyzer.can_prove(tirx.all(offset >= 0, offset <= top)):
            _refuse(nest, st, buffer, f"is read through the window offset {offset}, which is not provably "
                    f"within 0..{top}")


def _refuse(nest, st: KernelState, buffer, why: str):
    from tilelang_core.errors import LayoutError
    from tilelang_core.lowering import source_location

    where = source_location(nest.loop)
    raise LayoutError(
        f"kernel '{st.kernel}': fragment '{buffer.name}' {why}; a fragment's element lives in one "
        f"thread's registers. Copy the fragment to shared memory first (T.copy(frag, frag_shared)) "
        f"and index that in this loop." + (f"\n  --> {where}" if where else ""))


def _widest_vector(nest, st: KernelState) -> int:
    """Elements per 16 bytes of the widest element type the loop touches in memory."""
    widest = 1
    inner = nest.inner

    def on_buffer(buffer):
        nonlocal widest
        # a bool never vectorizes (simt/lowering.py's BOOL says why; importing it here is circular)
        bits = 128 if str(buffer.ty.dtype) == "bool" else tvm.runtime.DataType(str(buffer.ty.dtype)).bits
        widest = max(widest, bits // 8)

    tvm_ffi.structural_walk(inner, [(tvm.ir.TensorLoad, lambda l: on_buffer(l.source)),
                                    (tirx.BufferStore, lambda s: on_buffer(s.buffer))])
    vec = 16 // widest
    while vec > 1 and (nest.extents[-1] % vec or _prod(nest.extents) // vec < st.num_threads):
        vec //= 2
    return vec


def _prod(xs):
    """The product of constants, or of extents some of which are PrimExprs (a symbolic nest)."""
    out = 1
    for x in xs:
        out *= x
    return out


def _emit(nest, st: KernelState, anchor, guard_replicas: bool):
    """The nest as per-thread code over ``anchor``'s elements; (stmt, vectorized?)."""
    l_var = tirx.Var("l", "int32")
    st.analyzer.bind(l_var, tvm.ir.Range.from_min_extent(0, anchor.local_size))
    index = [st.simplify(e) for e in anchor.index_of(st.thread_var, l_var)]
    inner = nest.inner

    _check_fragment_indices(nest, st)
    _check_owners(nest, st, anchor)

    def frag_index(buffer, indices):
        dims = access_dims(nest, indices)
        layout = st.layouts[buffer]
        args = [index[d] for d in dims]
        if len(args) < len(layout.shape):  # unit dims of the buffer
            args = [tirx.const(0, "int32") if s == 1 and len(args) < len(layout.shape) else None
                    for s in layout.shape]
            it = iter(index[d] for d in dims)
            args = [a if a is not None else next(it) for a in args]
        return st.simplify(layout.local_of(*args))

    def register(buffer, indices):
        layout = st.layouts[buffer]
        regular = access_dims(nest, indices) is not None
        if layout.is_whole and not regular:
            return st.simplify(layout.local_of(*indices))  # held whole: the element is local
        divided = None if regular else divided_access(nest, indices)
        if divided is not None:  # B[i, j // 2]: the element its layout puts with iteration (i, j)
            return st.simplify(layout.local_of(*[tirx.floordiv(index[d], c) for d, c in divided]))
        window = None if regular else window_access(nest, indices, layout.shape)
        if window is not None:  # this thread's element of the window the offsets select
            return st.simplify(layout.local_of(*[index[k] + o for k, o in zip(window.dims, window.offsets)]))
        if not regular:  # any other index, checked to be this thread's (owned_accesses.py)
            return st.simplify(layout.local_of(*indices))
        return frag_index(buffer, indices)

    def on_load(load):
        if is_fragment(load.source):
            return tirx.BufferLoad(st.local_buffer(load.source), [register(load.source, load.indices)])
        return load

    def on_store(store):
        if is_fragment(store.buffer):
            value = tvm_ffi.structural_map(store.value, [(tvm.ir.TensorLoad, on_load)])
            return tirx.BufferStore(st.local_buffer(store.buffer), value,
                                    [register(store.buffer, store.indices)])
        return store

    body = tvm_ffi.structural_map(inner, [(tvm.ir.TensorLoad, on_load)])
    body = tvm_ffi.structural_map(body, [(tirx.BufferStore, on_store)])
    body = substitute(body, dict(zip(nest.loop_vars, index)))
    body = guard_global_accesses(body, st)
    if guard_replicas and anchor.replicas > 1:
        body = if_then(anchor.replica_of(st.thread_var) == 0, body)
    elif anchor.replicas > 1:
        # every replica updates its own registers, but an element's atomic happens once
        from ..lower_atomic_calls import refuse_replicated  # (it imports this package)
        refuse_replicated(body, st.kernel, st.dialect.kind)  # ... and one whose value is used cannot
        first = anchor.replica_of(st.thread_var) == 0
        if not nest.stores:  # (nest.stores: its fragment stores)
            body = if_then(first, body)  # shared/global stores only: one replica runs it (TileLang's rule)
        else:
            _refuse_replicated_read_write(nest, st)
            body = _memory_on_one_replica(body, first)
    if anchor.local_size == 1:
        return substitute(body, {l_var: tirx.const(0, "int32")}), False
    vec = _printable(anchor.register_run, body, st)
    # (an access at any other index may give several iterations one element: they stay in order)
    general = any(not st.layouts[b].is_whole and access_dims(nest, idx) is None
                  and is_owned_form(nest, idx, st.layouts[b]) for b, idx in nest.accesses)
    while vec > 1 and not general:  # (rows of 8 halves may not align where rows of 4 do)
        vectorized = _vectorized(body, l_var, anchor.local_size, vec, st)
        if vectorized is not None:
            return vectorized, True
        vec //= 2
    if st.dialect.vector_atomic_adds and anchor.register_run > 1:  # a body of atomic adds
        from ..vector_atomic_adds import vector_loop  # (it imports this package)

        vectorized = vector_loop(body, l_var, anchor.local_size, anchor.register_run, st)
        if vectorized is not None:
            return vectorized, True
    return tirx.For(l_var, tirx.const(0, "int32"), tirx.const(anchor.local_size, "int32"),
                    tirx.ForKind.UNROLLED, body), False


def _check_fragment_indices(nest, st: KernelState) -> None:
    """A fragment the loop does not hold whole must be indexed by the loop's own variables: an
    element at a shifted index (``acc[i + s * 16, j]``) is another thread's register. Refused
    with the line (was a TypeError deep in the lowering); TileLang's sparse MLA backward does this."""
    from tilelang_core.errors import LayoutError
    from tilelang_core.lowering import source_location

    bad = [(buffer, indices) for buffer, indices in nest.accesses
           if not st.layouts[buffer].is_whole and access_dims(nest, indices) is None
           and window_access(nest, indices, st.layouts[buffer].shape) is None
           and divided_access(nest, indices) is None and owned_access(nest, indices) is None]
    if bad:
        buffer, indices = bad[0]
        loop_vars = ", ".join(str(v) for v in nest.loop_vars)
        where = source_location(nest.loop)
        raise LayoutError(
            f"kernel '{st.kernel}': fragment '{buffer.name}' is accessed at [{', '.join(map(str, indices))}] in a "
            f"T.Parallel loop over ({loop_vars}); a fragment's element lives in one thread's registers, so "
            "inside T.Parallel it must be indexed by the loop variables themselves (or a constant for a "
            "unit dimension). Copy the fragment to shared memory first (T.copy(frag, frag_shared)) and "
            "index that. (A read at a shifted index, f[i + k, j], is taken when every iteration that "
            "does anything provably reads inside the fragment: guard it, e.g. `if i < n - k:`.)"
            + (f"\n  --> {where}" if where else ""))


def _memory_on_one_replica(body, first_replica):
    """A loop whose replicas also fill their own fragments: each element's atomics and stores to
    shared or global memory done by one replica (all would store the same value; an atomic or a
    read-modify-write done by each would add its change once per replica)."""
    from ..lowering import GLOBAL, SHARED  # (it imports this package)

    def on_eval(ev):
        return tirx.IfThenElse(first_replica, ev, None) if I.is_call_of(ev, I.ATOMIC_HELPER) else ev

    def on_store(store):  # (a fragment's stores are to its registers, a per-thread buffer, by now)
        memory = str(store.buffer.ty.storage_scope) in SHARED + GLOBAL
        return tirx.IfThenElse(first_replica, store, None) if memory else store

    return tvm_ffi.structural_map(body, [(tirx.Evaluate, on_eval), (tirx.BufferStore, on_store)])


def _refuse_replicated_read_write(nest, st: KernelState) -> None:
    """A loop whose elements several threads run (replicas, to fill their fragments) and that reads
    shared or global memory it also writes: one replica could read before or after another's
    store, and the copies of a fragment would differ. Refused with the line."""
    from tilelang_core.errors import LayoutError
    from tilelang_core.lowering import source_location

    written, loads = [], []
    inner = nest.inner
    tvm_ffi.structural_walk(inner, [
        (tirx.BufferStore, lambda store: None if is_fragment(store.buffer) else written.append(store.buffer)),
        (tvm.ir.TensorLoad, lambda load: loads.append(load.source))])
    clash = next((b for b in written if any(l.same_as(b) for l in loads)), None)
    if clash is not None:
        where = source_location(nest.loop)
        raise LayoutError(
            f"kernel '{st.kernel}': '{clash.name}' is read and written in a T.Parallel loop whose elements "
            f"several threads run (each holds a copy of the fragments the loop writes), so a copy could read "
            f"it before or after another's store; update the fragments in one T.Parallel loop and store to "
            f"'{clash.name}' in another" + (f"\n  --> {where}" if where else ""))


def _printable(run: int, body, st: KernelState) -> int:
    """The widest vector that splits ``run`` evenly whose loads and stores move at most 16 bytes a
    value and whose computed values fit the dialect's ``value_vector_bytes``: a fragment held
    whole has a run of all its registers (128 floats), which no C type spells, and half values
    scaled by a float literal become a float32 vector twice as wide as their loads (CUDA prints
    8 floats as ``ulonglong4``; a backend whose printer cannot stops at 16 bytes)."""
    widest = {"access": 1, "value": 1}

    def widen(kind, dtype):
        widest[kind] = max(widest[kind], tvm.runtime.DataType(str(dtype)).bits // 8)

    def on_access(node):
        widen("access", (node.buffer if isinstance(node, tirx.BufferStore) else node.source).ty.dtype)

    tvm_ffi.structural_walk(body, [(tvm.ir.TensorLoad, on_access), (tirx.BufferStore, on_access),
                                   (tirx.Cast, lambda c: widen("value", c.dtype))])
    vec = run
    while vec > 1 and (vec * widest["access"] > 16 or vec * widest["value"] > st.dialect.value_vector_bytes
                       or run % vec):
        vec //= 2
    return vec


def _vectorized(body, l_var, local_size: int, vec: int, st: KernelState):
    """``for lo: for vi in vectorized(vec): body[l = lo * vec + vi]`` when every memory access in
    it is a provably aligned, contiguous run along vi; else None (the scalar loop is kept)."""
    body = _inline_bindings(body)
    if body is None:
        return None
    lo, vi = tirx.Var("lo", "int32"), tirx.Var("vi", "int32")
    st.analyzer.bind(lo, tvm.ir.Range.from_min_extent(0, local_size // vec))
    st.analyzer.bind(vi, tvm.ir.Range.from_min_extent(0, vec))
    # indices simplified under vi's range: a spread layout's (lo * 4 + vi) // 4 is lo, and
    # (lo * 4 + vi) % 4 is vi, which the checks below must see to find a run
    candidate = st.simplify_indices(substitute(body, {l_var: lo * vec + vi}))
    split = split_lane_guards(candidate, vi, vec, st)  # a ragged edge's guards (lane_guards.py)
    if split is None:
        return None
    fast, every, outer = split
    ok = [True]

    def uses_vi(expr) -> bool:
        found = []
        tvm_ffi.structural_walk(expr, [(tvm.ir.Var, lambda v: found.append(v) if v.same_as(vi) else None)])
        return bool(found)

    def same_for_every_lane(expr) -> bool:  # (a row index (lo * 4 + vi) // 8 is one row)
        return not uses_vi(expr) or st.analyzer.can_prove(
            st.simplify(expr - substitute(expr, {vi: tirx.const(0, "int32")})) == 0)

    def run_start(indices, fixed):
        """The last index of lane 0 when lane k accesses the element k after it, the other
        indices ``fixed`` over the lanes; else None."""
        *outer, last = list(indices)
        if not all(fixed(i) for i in outer):
            return None
        start = st.simplify(substitute(last, {vi: tirx.const(0, "int32")}))
        return start if st.analyzer.can_prove(st.simplify(last - start) == vi) else None

    def check(buffer, indices):
        scope = str(buffer.ty.storage_scope)
        if scope.startswith("local"):
            if scope != "local" or not indices:  # per-thread scalars would become reductions
                ok[0] = False
            return
        if scope.startswith("shared"):  # swizzled later: element by element (see bench/NOTES.md, stop 50)
            ok[0] = False
            return
        start = run_start(indices, lambda i: not uses_vi(i))
        aligned = start is not None and st.analyzer.can_prove(tirx.floormod(start, vec) == 0)
        # (a compact 1-D buffer: the index's own alignment and range decide, as checked above)
        rows = (len(indices) == 1 and not buffer.ty.strides) or R.rows_in_vectors(buffer, vec, st.analyzer)
        if not (aligned and rows):
            ok[0] = False

    def on_store(store):
        scope = str(store.buffer.ty.storage_scope)
        if scope == "local.var" or (scope == "local" and (
                not store.indices or run_start(store.indices, same_for_every_lane) is None)):
            ok[0] = False  # lanes would write one register (amax[(lo * 4 + vi) // 8]): a race in vector form
        check(store.buffer, store.indices)

    def on_call(ev):  # a call statement (an atomic) has effects per lane TVM's vectorizer does not model
        if not isinstance(ev.value, tirx.IntImm):  # (a dropped binding leaves a no-op)
            ok[0] = False

    tvm_ffi.structural_walk(fast, [(tvm.ir.TensorLoad, lambda l: check(l.source, l.indices)),
                                   (tirx.BufferStore, on_store),
                                   (tirx.IfThenElse, lambda _: ok.__setitem__(0, False)),
                                   (tirx.Evaluate, on_call)])
    if not ok[0]:
        return None
    inner = tirx.For(vi, tirx.const(0, "int32"), tirx.const(vec, "int32"), tirx.ForKind.VECTORIZED, fast)
    if every is not None:  # the ragged edge: each lane with its own guards
        lane = tirx.Var("vs", "int32")
        inner = tirx.IfThenElse(every, inner, tirx.For(lane, tirx.const(0, "int32"), tirx.const(vec, "int32"),
                                                       tirx.ForKind.SERIAL, substitute(candidate, {vi: lane})))
    if outer is not None:  # guards the same on every lane (a ragged tile's rows)
        inner = tirx.IfThenElse(outer, inner, None)
    return tirx.For(lo, tirx.const(0, "int32"), tirx.const(local_size // vec, "int32"),
                    tirx.ForKind.UNROLLED, inner)


def _inline_bindings(body):
    """``body`` with its bindings inlined, ready to become vector lanes: the pure ones (``q_idx = bx
    * 64 + i``), and those that only read memory the body does not write (``x = A[i, j] * 2``: the
    read moves to where ``x`` is used, with no store in between that could change it); None when
    a binding reads memory the body writes, or calls anything with effects. TVM 0.27's
    VectorizeLoop turns a Bind into a vector binding and then, where it must scalarize a statement
    (an ``if_then_else`` whose condition is a vector), emits the scalar copy with the original, now
    unbound, name: the kernel then fails in codegen ("variables (k_idx, q_idx) are used, but are
    not passed in as API arguments"). A binding that cannot be inlined keeps the loop scalar."""
    variables = bound_vars(body)
    if not variables:
        return body
    written = written_buffers(body)
    values = {}
    for bind in _binds_in_order(body):
        value = substitute(bind.value, values)
        if not is_pure(value) and (calls_above(value, 1) or reads_any(value, written)):  # 1: kPure
            return None
        values[bind.var] = value
    return substitute(drop_bindings(body, variables), values)


def _binds_in_order(body) -> list:
    found = []
    tvm_ffi.structural_walk(body, [(tirx.Bind, found.append)], order="pre")
    return found
