"""LayoutInference: choose a Fragment (thread -> element mapping) for every register tile.

Sources of layouts, strongest first:

1. gemm accumulators, and gemm operands held in registers: the backend's instruction fixes them
   (``accumulator_layout`` and ``operand_layout`` hooks);
2. T.Parallel loops adopt the layout of a fragment they touch whose shape is the loop's, and hand
   it to the other fragments they touch (a fragment indexed by a subset of the loop variables gets
   the loop layout reduced over the missing ones: a row statistic next to its tile);
3. reductions: the destination gets the source layout reduced along ``dim``;
4. copies between fragments of one shape share a layout;
5. anything left is spread over the threads in runs of one 16-byte vector (``Fragment.spread``).

A T.reshape view of a fragment names the same registers: whatever layout one of them gets, the
others get re-indexed to their shapes (``Fragment.reshape``; transform/buffer_views.py).

A fragment that two sources want differently is a LayoutError naming the buffer and both layouts.
The pass is a pure function returning ``{buffer: Fragment}``; backends keep the map next to the
function while lowering (layouts are Python objects, not IR).

Example::

    layouts = infer_layouts(func, num_threads=128, accumulator_layout=my_backend_hook)
    layouts[C_frag]          # Fragment(shape=[128, 128], threads=128, local=128, ...)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import tvm
import tvm_ffi
from tvm import tirx

from ..errors import LayoutError
from ..ir import Copy, Gemm, Reduce, TileOp, is_tile_op
from ..ir import region as R
from ..ir.atomic_calls import is_parallel_loop
from ..layout import Fragment
from .buffer_views import buffer_views, root_of
from .divided_indices import divided_access, divided_layout, spans
from .fragment_windows import window_access, window_layout
from .lower_tile_ops import kernel_name
from .owned_accesses import anchor_from, not_owned, owned_access
from .serial_indexed import loop_shape, serial_indexed, with_serial_dims
from .structural import stmt_children

FRAGMENT_SCOPE = "local.fragment"

#: backend hook: (gemm op, num_threads) -> Fragment of its accumulator
AccumulatorLayout = Callable[[Gemm, int], Fragment]
#: backend hook: (gemm op, "A" or "B", num_threads) -> Fragment that operand must have in registers
OperandLayout = Callable[[Gemm, str, int], Fragment]


def is_fragment(buffer) -> bool:
    return tirx.is_buffer_var(buffer) and str(buffer.ty.storage_scope) == FRAGMENT_SCOPE


def buffer_shape(buffer) -> tuple[int, ...]:
    shape = []
    for s in buffer.ty.shape:
        v = R.as_int(s)
        if v is None:
            raise LayoutError(f"fragment {buffer.name} has a symbolic shape {list(buffer.ty.shape)}; "
                              f"register tiles need constant sizes")
        shape.append(v)
    return tuple(shape)


def dtype_bits(buffer) -> int:
    return tvm.runtime.DataType(str(buffer.ty.dtype)).bits


@dataclass
class ParallelNest:
    """A nest of T.Parallel loops: its loop variables, extents and the fragment accesses inside."""

    loop: tirx.For
    loop_vars: list
    #: constants, except in a ``symbolic`` nest (PrimExprs there)
    extents: list
    #: (buffer, indices) of every fragment load/store in the body
    accesses: list
    #: (buffer, indices) of the fragment stores among them
    stores: list = field(default_factory=list)
    #: an extent is known only at run time (``T.Parallel(valid_len)``): allowed over shared and
    #: global memory only; its elements are dealt over the threads round-robin
    symbolic: bool = False
    #: the serial loops around the nest with a constant start and extent, outermost first: an
    #: index may name them (``db[k, j]`` in ``for k: T.Parallel(j)``: serial_indexed.py)
    outer: list = field(default_factory=list)
    #: the author's ``T.Parallel(..., loop_layout=...)``: which thread runs each iteration
    layout: Fragment | None = None

    @property
    def inner(self):
        """The statement inside the innermost loop of the nest."""
        body = self.loop
        for _ in self.extents:
            body = body.body
        return body


def parallel_nests(stmt) -> list[ParallelNest]:
    """Outermost nests of ``tl.parallel`` loops in program order."""
    nests: list[ParallelNest] = []

    def visit(node, outer):
        if is_parallel_loop(node):
            nests.append(_collect_nest(node, outer))
            return
        if isinstance(node, tirx.For) and node.thread_binding is None and R.as_int(node.min) is not None \
                and R.as_int(node.extent) is not None:
            outer = outer + [node]
        for child in stmt_children(node):
            visit(child, outer)

    visit(stmt, [])
    return nests


def _collect_nest(loop, outer) -> ParallelNest:
    loop_vars, extents, body, symbolic = [], [], loop, []
    while isinstance(body, tirx.For) and is_parallel_loop(body):
        extent = R.as_int(body.extent)
        if extent is None:
            symbolic.append(body)
        loop_vars.append(body.loop_var)
        extents.append(extent if extent is not None else body.extent)
        body = body.body
    accesses, stores = [], []

    def on_load(load):
        if is_fragment(load.source):
            accesses.append((load.source, list(load.indices)))

    def on_store(store):
        if is_fragment(_buf(store)):
            accesses.append((_buf(store), list(store.indices)))
            stores.append((_buf(store), list(store.indices)))

    tvm_ffi.structural_walk(body, [(tvm.ir.TensorLoad, on_load), (tirx.BufferStore, on_store)])
    if symbolic and accesses:
        raise LayoutError(f"T.Parallel loop over {symbolic[0].loop_var} has the symbolic extent "
                          f"{symbolic[0].extent} and touches fragment '{accesses[0][0].name}'; a fragment "
                          f"is laid out over a loop of constant extents. Loop over the tile's full size "
                          f"and mask with `if`, or keep this loop on shared/global memory")
    from ..language.loops import LOOP_LAYOUT  # (language imports this module)

    layout = loop.annotations.get(LOOP_LAYOUT)
    return ParallelNest(loop, loop_vars, extents, accesses, stores, symbolic=bool(symbolic), outer=list(outer),
                        layout=None if layout is None else Fragment.from_description(str(layout)))


def _buf(node):
    """The buffer of a load (``TensorLoad.source``) or a store (``BufferStore.buffer``)."""
    return node.buffer if isinstance(node, tirx.BufferStore) else node.source


def access_dims(nest: ParallelNest, indices) -> list[int] | None:
    """Which loop dimension each index is, when every index is a bare loop variable."""
    dims = []
    for index in indices:
        hit = [k for k, v in enumerate(nest.loop_vars) if index.same_as(v)]
        if not hit:
            return None
        dims.append(hit[0])
    return dims


class _Solver:
    def __init__(self, func, num_threads: int, accumulator_layout: AccumulatorLayout | None,
                 vector_bytes: int, operand_layout: OperandLayout | None = None):
        self.func = func
        self.kernel = kernel_name(func)
        self.operand_layout = operand_layout
        self.num_threads = num_threads
        self.accumulator_layout = accumulator_layout
        self.vector_bytes = vector_bytes
        self.layouts: dict = {}
        self.why: dict = {}
        #: T.reshape views of fragments -> the fragment whose registers they name
        self.views = {v: r for v, r in buffer_views(func.body).items() if is_fragment(r)}

    def assign(self, buffer, layout: Fragment, why: str) -> bool:
        """Give ``buffer`` ``layout``, and every view of the same registers (T.reshape) the same
        registers re-indexed; False when they had it already."""
        root = root_of(buffer, self.views)
        changed = False
        for member in [root] + [v for v, r in self.views.items() if r.same_as(root)]:
            if member.same_as(buffer):
                changed |= self._assign_one(member, layout, why)
                continue
            try:
                shaped = layout.reshape(buffer_shape(member))
            except LayoutError as err:
                raise LayoutError(f"kernel '{self.kernel}': '{member.name}' is a T.reshape of the "
                                  f"registers of '{buffer.name}', whose layout ({why}) it cannot "
                                  f"follow: {err}") from None
            changed |= self._assign_one(member, shaped, f"{why}, seen through '{buffer.name}'")
        return changed

    def _assign_one(self, buffer, layout: Fragment, why: str) -> bool:
        current = self.layouts.get(buffer)
        if current is None:
            self.layouts[buffer] = layout
            self.why[buffer] = why
            return True
        if not same_owners(current, layout):
            raise LayoutError(
                f"kernel '{self.kernel}': fragment '{buffer.name}' gets two different layouts:\n"
                f"  {current}\n    (from {self.why[buffer]})\n  {layout}\n    (from {why})\n"
                f"Copy it into a second fragment where the uses disagree, or use shapes that "
                f"let both uses share one layout.")
        return False

    def ops(self) -> list[TileOp]:
        found = []
        tvm_ffi.structural_walk(self.func.body, [(tirx.TilePrimitiveCall, lambda c: found.append(c))],
                                order="pre")
        return [TileOp.from_stmt(c) for c in found if is_tile_op(c)]

    def solve(self) -> dict:
        ops = self.ops()
        nests = parallel_nests(self.func.body)
        for op in ops:
            if isinstance(op, Gemm) and is_fragment(op.C.source):
                if self.accumulator_layout is None:
                    raise LayoutError(f"kernel '{self.kernel}': this backend has no gemm layout")
                layout = self.accumulator_layout(op, self.num_threads)
                self.assign(op.C.source, layout, f"T.gemm accumulator of {op!r}")
            if isinstance(op, Gemm):
                for name in ("A", "B"):
                    operand = getattr(op, name)
                    if not is_fragment(operand.source):
                        continue
                    if self.operand_layout is None:
                        raise LayoutError(f"kernel '{self.kernel}': gemm operand {name} "
                                          f"'{operand.source.name}' is in registers, which this "
                                          f"backend does not support; copy it to shared memory")
                    layout = self.operand_layout(op, name, self.num_threads)
                    self.assign(operand.source, layout, f"T.gemm operand {name} of {op!r}")
        for nest in nests:
            self._check_loop_layout(nest)
        self._replicate_irregular(nests, ops)
        # Propagate until nothing changes; each round can only add layouts, so this terminates.
        changed = True
        while changed:
            changed = False
            for nest in nests:
                changed |= self._propagate_nest(nest)
            for op in ops:
                changed |= self._propagate_op(op)
            if not changed:
                changed = self._default_one(nests, ops)
        return self.layouts

    def _check_loop_layout(self, nest: ParallelNest) -> None:
        """A fragment laid out by an author's loop_layout must be laid out over every thread that
        runs the kernel's other uses of it: threads past the layout would hold registers no
        element names."""
        if nest.layout is None or not nest.accesses or nest.layout.num_threads == self.num_threads:
            return
        from ..lowering import source_location

        where = source_location(nest.loop)
        raise LayoutError(
            f"kernel '{self.kernel}': the T.Parallel loop over "
            f"({', '.join(str(v) for v in nest.loop_vars)}) has a loop_layout over "
            f"{nest.layout.num_threads} threads and touches fragment '{nest.accesses[0][0].name}', "
            f"which is laid out over the {self.num_threads} threads that run this code: give the "
            f"loop_layout {self.num_threads} threads (replicate=... for copies)"
            + (f"\n  --> {where}" if where else ""))

    def _replicate_irregular(self, nests, ops) -> None:
        """Fragments indexed other than by T.Parallel's own loop variables (``a[c, o]`` with ``c``
        a serial loop, ``lse[k, i]`` with ``k`` the pipeline's), or read in plain code
        (``if block_mask[k]:``), are held whole by every thread, as TileLang's layout inference
        does for them: any element is then in every thread's registers."""
        irregular = {}
        for nest in nests:
            for buffer, indices in nest.accesses:
                dims = access_dims(nest, indices)
                divided = divided_access(nest, indices) if dims is None else None
                if divided is not None and spans(nest, divided, buffer_shape(buffer)):
                    continue  # B[i, j // 2]: laid out through the index (_propagate_nest)
                if dims is None and serial_indexed(nest, indices, buffer_shape(buffer),
                                                   _stored(nest, buffer)) is not None:
                    continue  # db[k, j] with k a serial loop around the nest (serial_indexed.py)
                if dims is None:
                    irregular.setdefault(buffer, "indexed with other than T.Parallel's loop variables")
                elif tuple(nest.extents[d] for d in dims) != buffer_shape(buffer):
                    irregular.setdefault(buffer, f"indexed by a T.Parallel loop of extents "
                                                 f"{[nest.extents[d] for d in dims]} that do not span it")
        for buffer in _scalar_fragment_accesses(self.func.body):
            irregular.setdefault(buffer, "read or written outside T.Parallel loops and tile ops")
        # a part copied between fragments (extents known only at run time; the others are
        # T.Parallel loops since parse time, transform/element_copies.py): a thread reads the
        # part wherever it lies
        for op in ops:
            if isinstance(op, Copy) and is_fragment(op.src.source) and is_fragment(op.dst.source) \
                    and not R.covers_whole(op.src):
                irregular.setdefault(op.src.source, "part of it copied into another fragment")
        for buffer, why in irregular.items():
            if buffer in self.layouts:  # a gemm's: its layout stands, and the error below says why
                continue
            self.assign(buffer, Fragment.replicated(buffer_shape(buffer), self.num_threads, str(buffer.name)),
                        f"held whole by every thread: {why}")

    def _propagate_nest(self, nest: ParallelNest) -> bool:
        anchor = nest_anchor(nest, self.layouts)
        if anchor is None:
            return False
        changed = False
        for buffer, indices in nest.stores:
            if buffer in self.layouts and self.layouts[buffer].is_whole and not anchor.is_whole:
                raise LayoutError(
                    f"kernel '{self.kernel}': fragment '{buffer.name}' is held whole by every thread "
                    f"({self.why[buffer]}), but written in a T.Parallel loop that follows another "
                    f"fragment's layout, where each thread runs only its own elements; write it in "
                    f"a loop of its own, or copy it into shared memory")
        for buffer, indices in nest.accesses:
            if buffer in self.layouts and self.layouts[buffer].is_whole:
                continue  # every element is local: any index will do
            dims = access_dims(nest, indices)
            serial = serial_indexed(nest, indices, buffer_shape(buffer), _stored(nest, buffer)) \
                if dims is None else None
            if serial is not None and buffer not in self.layouts:  # db[k, j]: column j in j's thread
                shape = buffer_shape(buffer)
                part = access_layout(anchor, [d for d in serial if d is not None], loop_shape(serial, shape))
                changed |= self.assign(buffer, with_serial_dims(part, serial, shape),
                                       "a T.Parallel loop over it, inside serial loops indexing its other dims")
                continue
            if dims is None and buffer in self.layouts and \
                    window_access(nest, indices, self.layouts[buffer].shape) is not None:
                continue  # read through a window; LowerParallel checks that each thread holds it
            divided = divided_access(nest, indices) if dims is None else None
            if divided is not None:  # B[i, j // 2] (transform/divided_indices.py)
                shape = buffer_shape(buffer)
                layout = divided_layout(nest, anchor, divided, shape)
                if layout is None:
                    layout = Fragment.replicated(shape, self.num_threads, str(buffer.name))
                    changed |= self.assign(buffer, layout, "held whole by every thread: read at a divided "
                                                           "index the loop's layout does not split")
                else:
                    changed |= self.assign(buffer, layout, "a T.Parallel loop reading it at a divided index")
                continue
            access = owned_access(nest, indices) if buffer in self.layouts and \
                is_owned_form(nest, indices, self.layouts[buffer]) else None
            if access is not None:  # any other index: the element must be the runner's own
                why = not_owned(anchor, self.layouts[buffer], nest, access)
                if why is None:
                    continue
                raise LayoutError(
                    f"kernel '{self.kernel}': fragment '{buffer.name}' is indexed with "
                    f"{[str(i) for i in indices]} inside a T.Parallel loop, and {why}; a thread reads "
                    f"only its own registers: copy the fragment to shared memory and index that")
            if dims is None:
                raise LayoutError(
                    f"kernel '{self.kernel}': fragment '{buffer.name}' is indexed with "
                    f"{[str(i) for i in indices]} inside a T.Parallel loop; index fragments with "
                    f"the loop variables themselves")
            if len(set(dims)) != len(dims):
                raise LayoutError(f"kernel '{self.kernel}': fragment '{buffer.name}' is indexed "
                                  f"with one loop variable twice ({[str(i) for i in indices]}); a "
                                  f"thread holds no diagonal of a tile: copy it to shared memory")
            layout = access_layout(anchor, dims, buffer_shape(buffer))
            changed |= self.assign(buffer, layout, "a T.Parallel loop over it")
        return changed

    def _propagate_op(self, op: TileOp) -> bool:
        if isinstance(op, Reduce) and is_fragment(op.src.source) and is_fragment(op.dst.source):
            src = self.layouts.get(op.src.source)
            if src is None or op.dst.source in self.layouts:
                return False
            keep = len(buffer_shape(op.dst.source)) == len(src.shape)
            return self.assign(op.dst.source, src.reduce(op.dim, keepdim=keep), f"{op!r}")
        if isinstance(op, Copy) and is_fragment(op.src.source) and is_fragment(op.dst.source):
            a, b = op.src.source, op.dst.source
            if buffer_shape(a) == buffer_shape(b) and R.covers_whole(op.src) and R.covers_whole(op.dst):
                if a in self.layouts:
                    # register-to-register copies move no data between threads: same layout
                    return self.assign(b, self.layouts[a], f"{op!r} (copied from '{a.name}')")
                if b in self.layouts:
                    return self.assign(a, self.layouts[b], f"{op!r} (copied to '{b.name}')")
        return False

    def _default_one(self, nests, ops) -> bool:
        """Spread one unconstrained fragment, then propagate.

        The largest one goes first (program order breaks ties): smaller fragments are mostly
        reductions of larger ones (LayerNorm's ``mean`` of ``x``) and must take the layout the
        reduction gives them, which a default spread of their own would contradict.
        """
        candidates = [b for n in nests for b, _ in n.accesses]
        candidates += [r.source for op in ops for r in (*op.reads, *op.writes) if R.is_region(r)]
        candidates += _allocated_fragments(self.func.body)
        candidates = [b for b in dict.fromkeys(candidates) if is_fragment(b) and b not in self.layouts]
        if not candidates:
            return False
        buffer = max(candidates, key=lambda b: _prod(buffer_shape(b)))  # max keeps the first of ties
        # dims a serial loop around a nest indexes stay in registers (serial_indexed.py)
        serial = next((found for n in nests for b, indices in n.accesses if b.same_as(buffer)
                       for found in [serial_indexed(n, indices, buffer_shape(b), _stored(n, b))]
                       if found is not None), None)
        shape = buffer_shape(buffer) if serial is None else loop_shape(serial, buffer_shape(buffer))
        widest = max(1, self.vector_bytes * 8 // dtype_bits(buffer))
        options = []
        vector = widest
        while vector >= 1:
            if shape[-1] % vector == 0:
                options.append(Fragment.spread(shape, self.num_threads, vector, name=str(buffer.name)))
            vector //= 2
        # Fewest values per thread first (most threads at work), then the widest vector: 16-byte
        # runs of an 8x300 fp32 tile leave 75 runs that 128 threads cannot share (gcd 1), so 8
        # threads would hold 300 values each; single elements give 32 threads 75 each.
        layout = min(options, key=lambda f: f.local_size)  # min keeps the first (widest) of ties
        if serial is not None:
            layout = with_serial_dims(layout, serial, buffer_shape(buffer))
        return self.assign(buffer, layout, "the default spread over threads")


def nest_anchor(nest: ParallelNest, layouts: dict) -> Fragment | None:
    """The layout a T.Parallel nest follows: the author's ``loop_layout`` if it has one (as in
    TileLang, before any fragment's), else that of a fragment indexed by every loop variable
    over exactly the loop's extents, a distributed one before one every thread holds whole (then
    every thread runs every element), one indexed in loop order before one read transposed
    (``f[j, i]``, whose layout is permuted into the loop's order); None when no such fragment has
    a layout yet."""
    if nest.layout is not None:
        return nest.layout
    full = []
    n = len(nest.extents)
    for buffer, indices in nest.accesses:
        dims = access_dims(nest, indices)
        if buffer not in layouts or dims is None or sorted(dims) != list(range(n)):
            continue
        layout = layouts[buffer]
        if tuple(layout.shape) != tuple(nest.extents[d] for d in dims):
            continue
        # loop dim k is the buffer's dim dims.index(k)
        full.append((layout.is_whole, dims != sorted(dims),
                     layout if dims == sorted(dims) else layout.permute([dims.index(k) for k in range(n)])))
    if full:
        return min(full, key=lambda entry: entry[:2])[2]  # min keeps the first
    for buffer, indices in nest.accesses:  # x_frag[i, jj * 4 + j]: a window of a laid-out fragment
        layout = layouts.get(buffer)
        if layout is None or layout.is_whole or access_dims(nest, indices) is not None:
            continue
        access = window_access(nest, indices, layout.shape)
        anchor = window_layout(layout, access, nest.extents) if access is not None else None
        if anchor is not None:
            return anchor
    for buffer, indices in nest.accesses:  # mix[i, j + 8], out[x, y * 8 + j]: TileLang's general rule
        layout = layouts.get(buffer)
        if layout is None or not is_owned_form(nest, indices, layout):
            continue
        access = owned_access(nest, indices)
        anchor = anchor_from(layout, nest, access) if access is not None else None
        if anchor is not None:
            return anchor
    return None


def is_owned_form(nest, indices, layout) -> bool:
    """An access of a laid-out fragment that none of the closed forms takes (the loop variables
    over the whole fragment, a window, a divided index), the loop variables over a part of it
    (``mix[i, j]`` for the first 4 of 24 columns) included: transform/owned_accesses.py's numeric
    rule decides it."""
    dims = access_dims(nest, indices)
    if dims is not None:
        return len(set(dims)) == len(dims) == len(layout.shape) and \
            tuple(nest.extents[d] for d in dims) != tuple(layout.shape)
    return divided_access(nest, indices) is None and window_access(nest, indices, layout.shape) is None


def access_layout(anchor: Fragment, dims: list[int], shape: tuple[int, ...]) -> Fragment:
    """The layout a fragment of ``shape`` indexed by loop dims ``dims`` (buffer dim p = loop dim
    dims[p]) must have for each thread of a nest following ``anchor`` to hold the elements it
    touches: the anchor reduced over the loop dims it skips, permuted into the buffer's order."""
    layout = anchor
    for d in sorted(set(range(len(anchor.shape))) - set(dims), reverse=True):
        layout = layout.reduce(d)
    kept = sorted(dims)
    if kept != list(dims):
        layout = layout.permute([kept.index(d) for d in dims])
    if len(shape) != len(layout.shape):
        layout = _with_unit_dims(layout, shape)
    return layout


def same_owners(a: Fragment, b: Fragment) -> bool:
    """Do ``a`` and ``b`` put every element in the same threads' same registers (replicas in any
    order)?"""
    return a.canonical() == b.canonical()  # (canonical orders and merges the replica digits)


def _stored(nest: ParallelNest, buffer) -> bool:
    return any(b.same_as(buffer) for b, _ in nest.stores)


def _scalar_fragment_accesses(body) -> list:
    """Fragments loaded or stored outside T.Parallel nests and tile ops, in program order."""
    found = []

    def visit(node):
        if (is_parallel_loop(node)) or isinstance(node, tirx.TilePrimitiveCall):
            return
        if isinstance(node, tirx.BufferStore):
            if is_fragment(node.buffer):
                found.append(node.buffer)
            for expr in (node.value, *node.indices):
                _loads(expr, found)
            return
        if isinstance(node, (tirx.Bind, tirx.Evaluate)):
            _loads(node.value, found)
        elif isinstance(node, (tirx.IfThenElse, tirx.While)):
            _loads(node.condition, found)
        for child in stmt_children(node):
            visit(child)

    visit(body)
    return list(dict.fromkeys(found))


def _loads(expr, found: list) -> None:
    def on_load(load):
        if is_fragment(load.source):
            found.append(load.source)

    tvm_ffi.structural_walk(expr, [(tvm.ir.TensorLoad, on_load)])


def _prod(xs) -> int:
    out = 1
    for x in xs:
        out *= x
    return out


def _with_unit_dims(layout: Fragment, shape: tuple[int, ...]) -> Fragment:
    """``layout`` of a squeezed tile, re-expanded with the unit dims of ``shape``."""
    from ..layout import LOCAL, Digit

    digits, k, extra = [], 0, len(shape) - len(layout.shape)
    for s in shape:
        if extra > 0 and s == 1 and (k == len(layout.shape) or layout.shape[k] != 1):
            digits.append((Digit(1, LOCAL, 0),))
            extra -= 1
        else:
            digits.append(layout.digits[k])
            k += 1
    return Fragment(tuple(shape), tuple(digits), layout.replica_digits, name=layout.name)


def _allocated_fragments(stmt) -> list:
    found = []
    tvm_ffi.structural_walk(stmt, [(tirx.AllocBuffer, lambda a: found.append(a.buffer))])
    return [b for b in found if is_fragment(b)]


def infer_layouts(func: tirx.PrimFunc, num_threads: int,
                  accumulator_layout: AccumulatorLayout | None = None,
                  vector_bytes: int = 16, operand_layout: OperandLayout | None = None,
                  annotated: dict | None = None) -> dict:
    """``{fragment buffer: Fragment}`` for every ``local.fragment`` buffer of ``func``;
    ``annotated`` (T.annotate_layout's, ``{buffer: Fragment}``) are given before any other source.

    Fragments used under a condition that selects a group of threads (``T.ws``, ``if tx < 128``:
    transform/thread_ranges.py) are laid out over that group's threads, from the group's code
    alone; the rest over the block's ``num_threads``."""
    groups = _group_bodies(func.body)
    fixed: dict = {}
    for (_lo, threads), bodies in groups.items():
        sub = func.with_body(bodies[0] if len(bodies) == 1 else tirx.SeqStmt(bodies))
        fixed.update(_Solver(sub, threads, accumulator_layout, vector_bytes, operand_layout).solve())
    body = _without_groups(func.body) if groups else func.body
    solver = _Solver(func.with_body(body), num_threads, accumulator_layout, vector_bytes, operand_layout)
    for buffer, layout in (annotated or {}).items():
        solver.assign(buffer, layout, "T.annotate_layout")
    solver.layouts.update(fixed)
    solver.why.update({b: "its thread group's code" for b in fixed})
    return solver.solve()


def _group_bodies(body) -> dict:
    """``{(lo, threads): [bodies of the THREAD_RANGE regions of that group that use fragments]}``."""
    from .thread_ranges import THREAD_RANGE, region_lo

    found: dict = {}

    def on_attr(attr):
        if attr.attr_key == THREAD_RANGE and _uses_fragments(attr.body):
            found.setdefault((region_lo(attr), int(attr.value)), []).append(attr.body)

    tvm_ffi.structural_walk(body, [(tirx.AttrStmt, on_attr)], order="pre")
    return found


def _uses_fragments(body) -> bool:
    found = []
    tvm_ffi.structural_walk(body, [(tvm.ir.TensorRegion, lambda r: found.append(r.source)),
                                   (tvm.ir.TensorLoad, lambda l: found.append(l.source)),
                                   (tirx.BufferStore, lambda st: found.append(st.buffer))])
    return any(is_fragment(b) for b in found if tirx.is_buffer_var(b))


def _without_groups(body):
    """``body`` with the fragment-using THREAD_RANGE regions emptied (solved on their own)."""
    from .thread_ranges import THREAD_RANGE

    def on_attr(attr):
        if attr.attr_key == THREAD_RANGE and _uses_fragments(attr.body):
            return tirx.Evaluate(tirx.const(0, "int32"))
        return attr

    return tvm_ffi.structural_map(body, [(tirx.AttrStmt, on_attr)])
