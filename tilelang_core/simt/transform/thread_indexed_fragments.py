"""Fragment elements a thread names by its own index, outside T.Parallel (TileLang's rule).

TileLang lowers a fragment access outside T.Parallel and tile ops through the fragment's layout
alone: ``C_local[tx // 4, tx % 4 * 2]`` reads the register where the layout puts that element,
which is right when the thread running it holds the element (hand-written register code: an
accumulator laid out by ``T.annotate_layout`` and addressed by lane, TileLang's MMA emitters).
Here the same access is taken when that holds, and checked, not assumed: its indices (values
bound in the kernel put in) must be expressions of the thread index and of constant-extent loops
around the access; they are evaluated for every thread and iteration (numpy) and each element must
be held by the thread that names it; for a store, by that thread alone (the other copies of a
replicated element would not see the write). The access then becomes that thread's register
(``layout.local_of``). Anything else keeps apply_layouts' refusal, which gives the reason found here.

Example::

    body, why_not = thread_indexed_elements(body, st)    # why_not: {fragment name: reason}
"""

from __future__ import annotations

import numpy as np
import tvm
import tvm_ffi
from tvm import tirx

from tilelang_core.errors import LoweringError
from tilelang_core.ir.substitute import substitute_nested
from tilelang_core.layout.fitted import MAX_ELEMENTS
from tilelang_core.transform.per_thread import PER_THREAD_SCOPES
from tilelang_core.transform.layout_inference import is_fragment
from tilelang_core.transform.owned_accesses import first_not_held, out_of_range


def _loops_and_values(body):
    """The constant-range loops of ``body`` (handle -> (var, min, extent)) and its bound values."""
    loops, values = {}, {}

    def on_for(loop):
        if isinstance(loop.min, tirx.IntImm) and isinstance(loop.extent, tirx.IntImm):
            loops[loop.loop_var.__chandle__()] = (loop.loop_var, int(loop.min.value), max(int(loop.extent.value), 0))

    def on_bind(bind):
        values[bind.var.__chandle__()] = bind.value

    tvm_ffi.structural_walk(body, [(tirx.For, on_for), (tirx.Bind, on_bind)])
    return loops, values


def _per_thread_values(body, st):
    """A predicate: may this expression differ between threads? True where it names the thread
    index, a value bound from such a value, or a T.alloc_local / T.alloc_var buffer written such a
    value, at such an index, or under a condition on one (a lane's own counter). A value read from
    memory at the same address in every thread is the same (a uniform counter is not per-thread)."""
    binds, stores, branches = [], [], []

    def per_thread(buffer) -> bool:
        return str(buffer.ty.storage_scope) in PER_THREAD_SCOPES

    def on_store(store):
        if per_thread(store.buffer):
            stores.append(store)

    tvm_ffi.structural_walk(body, [(tirx.Bind, binds.append), (tirx.BufferStore, on_store),
                                   (tirx.IfThenElse, branches.append)])
    varying = {st.thread_var.__chandle__()}

    def depends(expr) -> bool:
        found = []
        tvm_ffi.structural_walk(expr, [(tirx.Var, lambda v: found.append(v.__chandle__())),
                                       (tvm.ir.TensorLoad, lambda load: found.append(load.source.__chandle__()))])
        return any(h in varying for h in found)

    def stores_in(stmt) -> set:
        inner = []
        tvm_ffi.structural_walk(stmt, [(tirx.BufferStore, lambda s: inner.append(s.buffer.__chandle__())
                                        if per_thread(s.buffer) else None)])
        return set(inner)

    while True:
        before = len(varying)
        varying |= {b.var.__chandle__() for b in binds if depends(b.value)}
        varying |= {s.buffer.__chandle__() for s in stores if depends(s.value) or any(depends(i) for i in s.indices)}
        for branch in branches:
            if depends(branch.condition):
                varying |= stores_in(branch)
        if len(varying) == before:
            return depends


def refuse_thread_indexed_stores_to_whole(body, st) -> None:
    """Every thread holds its own copy of a whole fragment (a statistic every thread keeps), so a
    store outside T.Parallel writes the storing thread's copy: at an index that differs between
    threads (``F[tx] = ...``, or a lane's own counter), each copy gets other elements and the
    copies no longer agree; what a later tile op reads from them is one thread's. Refused rather
    than silently wrong."""
    depends = _per_thread_values(body, st)

    def on_store(store):
        layout = st.layouts.get(store.buffer) if is_fragment(store.buffer) else None
        if layout is None or not layout.is_whole:
            return
        if any(depends(index) for index in store.indices):
            raise LoweringError(
                f"kernel '{st.kernel}': a store to fragment '{store.buffer.name}' at "
                f"{list(store.indices)} outside T.Parallel depends on the thread, but every thread holds the "
                f"whole fragment (its layout: nothing in the kernel spreads it over the threads), so each "
                f"thread would write its own copy and the copies would disagree. Write it in a T.Parallel "
                f"loop, lay it out with T.annotate_layout so that each thread names its own elements, or use "
                f"T.alloc_shared")

    tvm_ffi.structural_walk(body, [(tirx.BufferStore, on_store)])


def thread_indexed_elements(body, st):
    """``body`` with each provably owned thread-indexed fragment access made a register access;
    and why each fragment left was not (its name -> reason)."""
    loops, values = _loops_and_values(body)
    why_not: dict = {}

    def owned(buffer, indices, store: bool):
        """The register index of this access, or None (the reason recorded)."""
        layout = st.layouts.get(buffer)
        if layout is None or layout.is_whole:
            return None
        reason = _not_owned(layout, [substitute_nested(i, values) for i in indices], store, st, loops)
        if reason is not None:
            why_not.setdefault(str(buffer.name), reason)
            return None
        return st.simplify(layout.local_of(*indices))

    def on_load(load):
        if not is_fragment(load.source):
            return load
        local = owned(load.source, list(load.indices), store=False)
        return load if local is None else tirx.BufferLoad(st.local_buffer(load.source), [local])

    def on_store(store):
        if not is_fragment(store.buffer):
            return store
        local = owned(store.buffer, list(store.indices), store=True)
        return store if local is None else tirx.BufferStore(st.local_buffer(store.buffer), store.value, [local])

    body = tvm_ffi.structural_map(body, [(tvm.ir.TensorLoad, on_load), (tirx.BufferStore, on_store)])
    return body, why_not


def _not_owned(layout, indices, store: bool, st, loops: dict) -> str | None:
    from tilelang_core.ir.numpy_ops import Unsupported, evaluate

    names = []
    for index in indices:
        tvm_ffi.structural_walk(index, [(tirx.Var, names.append)])
    thread = st.thread_var.__chandle__()
    used = []
    for var in names:
        handle = var.__chandle__()
        if handle != thread and handle not in loops:
            return (f"an index names '{var.name}', which is neither the thread index nor a loop of constant "
                    f"range (each thread's elements are checked before an access outside T.Parallel is taken)")
        if handle in loops and all(h != handle for h in used):
            used.append(handle)
    axes = [(st.thread_var, 0, st.num_threads)] + [loops[h] for h in used]
    extents = [n for _, _, n in axes]
    if int(np.prod(extents)) > MAX_ELEMENTS:
        return "the threads and the loops around the access are too many points to check"
    grids = np.indices(extents, dtype=np.int64, sparse=True)
    env = {v.__chandle__(): g + lo for (v, lo, _), g in zip(axes, grids)}
    try:
        element = [np.asarray(evaluate(index, env), dtype=np.int64) for index in indices]
    except Unsupported as err:
        return f"its indices cannot be evaluated ({err})"
    shape = np.broadcast_shapes(grids[0].shape, *(e.shape for e in element))
    element = [np.broadcast_to(e, shape) for e in element]
    runner = np.broadcast_to(grids[0], shape)
    outside = out_of_range(element, layout.shape)
    if outside is not None:
        return outside
    if store and layout.replicas > 1:
        return "a store to a replicated fragment outside T.Parallel would change one copy of the element only"
    missed = first_not_held(layout, element, runner)
    if missed is not None:
        at, holder = missed
        return f"thread {int(runner[at])} names element {[int(e[at]) for e in element]}, which thread {holder} holds"
    return None


__all__ = ["refuse_thread_indexed_stores_to_whole", "thread_indexed_elements"]
