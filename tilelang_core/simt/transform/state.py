"""What the SIMT kit's passes and rules share about one kernel: threads, layouts, register
buffers, and the backend's SimtDialect (warp size, async copies, helper names).

Layouts are Python objects (tilelang_core.layout), not IR, so the passes of one compile pass this
state along instead of annotating the function (see tilelang_core/simt/pipeline.py for the order).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import tvm
import tvm_ffi
from tvm import tirx

from tilelang_core.errors import LoweringError
from tilelang_core.ir.substitute import substitute  # noqa: F401 - re-exported: the kit's callers import it here
from tilelang_core.transform.structural import seq  # noqa: F401 - re-exported: the kit's callers import it here

from ..dialect import SimtDialect


#: AttrStmt key around the code software_pipeline generates (insert_barriers treats it as a unit)
PIPELINE_REGION = "tl.pipeline_region"

#: Gemm option software_pipeline sets on the gemm that ends a pipelined loop body: its rule may
#: lower it as marked k-steps (below) so that prefetch_fragments can load the next stage's first
#: operand fragments before the last k-step's matrix instructions
FRAGMENT_PREFETCH = "tl_fragment_prefetch"
#: AttrStmt keys of such a lowering: FRAGMENT_STEPS (value: the number of k-steps) around a
#: sequence FRAGMENT_LOAD(0), FRAGMENT_COMPUTE(0), FRAGMENT_LOAD(1), ... (value: the k-step); each
#: step loads into registers of its own, so a load may move ahead of earlier steps' compute
FRAGMENT_STEPS = "tl.fragment_steps"
FRAGMENT_LOAD = "tl.fragment_load"
FRAGMENT_COMPUTE = "tl.fragment_compute"


@dataclass
class KernelState:
    kernel: str
    thread_var: tirx.Var
    num_threads: int
    dialect: SimtDialect
    #: fragment buffer -> Fragment
    layouts: dict = field(default_factory=dict)
    #: fragment buffer -> its per-thread 1-D buffer (scope "local")
    locals: dict = field(default_factory=dict)
    #: buffers the lowering created (register scratch, shared workspaces): allocated at the top
    extra_allocs: list = field(default_factory=list)
    analyzer: tvm.sym.Analyzer = field(default_factory=tvm.sym.Analyzer)
    options: object = None
    #: shared buffer name -> Layout from T.annotate_layout (the others get the default swizzle);
    #: a backend's ``specialize`` hook may add the layouts its instructions need
    annotated: dict = field(default_factory=dict)
    #: what the backend's own rules need to know about this compile (cuda: arch, Hopper planning)
    backend: object = None
    #: [(global tensor, value)] from T.annotate_safe_value: what a T.Parallel read past its edge gives
    safe_values: list = field(default_factory=list)
    #: threads of the whole block (``num_threads`` is a thread group's inside ``for_group``)
    block_threads: int = 0
    #: the block's thread index (``thread_var`` is a thread group's inside ``for_group``)
    block_thread_var: object = None
    #: block-wide shared workspaces each use of which ends at a barrier (written, barrier, read,
    #: barrier): they may share bytes with one another (shared_pool.py)
    scratch: set = field(default_factory=set)
    #: T.reshape views of on-chip buffers -> the allocation whose storage they name
    #: (transform/buffer_views.py); a view's accesses go to its allocation's registers or slot
    views: dict = field(default_factory=dict)
    #: T.alloc_barrier buffers (mbarriers.py): a fixed shared array of their own
    barriers: list = field(default_factory=list)

    def for_group(self, thread_var, num_threads: int) -> "KernelState":
        """This state for a group of ``num_threads`` threads indexed by ``thread_var``
        (transform/thread_ranges.py); layouts, registers and scratch stay shared with the block's
        (``replace`` copies fields shallowly)."""
        return replace(self, thread_var=thread_var, num_threads=num_threads)

    def simplify(self, expr):
        if isinstance(expr, int):
            return expr
        return self.analyzer.simplify(expr)

    def simplify_indices(self, node):
        """``node`` with the indices of its loads and stores simplified (the analyzer's
        ``simplify`` leaves a load's indices as they are)."""
        def on_load(load):
            return tirx.BufferLoad(load.source, [self.simplify(i) for i in load.indices])

        def on_store(store):
            return tirx.BufferStore(store.buffer, store.value, [self.simplify(i) for i in store.indices])

        node = tvm_ffi.structural_map(node, [(tvm.ir.TensorLoad, on_load)])
        return tvm_ffi.structural_map(node, [(tirx.BufferStore, on_store)])

    def local_buffer(self, fragment):
        try:
            return self.locals[fragment]
        except KeyError:
            raise LoweringError(f"kernel '{self.kernel}': fragment '{fragment.name}' has no layout; "
                                f"this is a compiler bug (layout inference missed it)") from None

    def alloc(self, name: str, shape, dtype: str, scope: str):
        buffer = tirx.decl_buffer(shape, dtype, name=name, scope=scope)
        self.extra_allocs.append(buffer)
        return buffer

    def alloc_scratch(self, name: str, shape, dtype: str):
        """A shared workspace the caller uses only as written, barrier, read, barrier. Used by the
        whole block, it may share bytes with the other such workspaces (two reductions in a loop
        take one); a thread group's may run beside another group's, so it keeps its own."""
        buffer = self.alloc(name, shape, dtype, "shared.dyn")
        if self.num_threads == self.block_threads:
            self.scratch.add(buffer)
        return buffer


def thread_binding(func: tirx.PrimFunc, kind: str) -> tuple[tirx.Var, int]:
    """``threadIdx.x`` of the kernel and its extent (the block size); ``kind`` names the backend
    in messages."""
    found = {}

    def on_attr(attr):
        if attr.attr_key == "thread_extent" and isinstance(attr.node, tirx.IterVar):
            found[str(attr.node.thread_tag)] = (attr.node.var, attr.value)

    tvm_ffi.structural_walk(func.body, [(tirx.AttrStmt, on_attr)])
    if "threadIdx.y" in found or "threadIdx.z" in found:
        raise LoweringError(f"kernels with threads=(x, y) are not supported by the {kind} backend yet; "
                            "use threads=<int> and compute the 2-D index from T.get_thread_binding()")
    if "threadIdx.x" not in found:
        raise LoweringError("kernel has no threadIdx.x launch: open it with T.Kernel(..., threads=N)")
    var, extent = found["threadIdx.x"]
    if not isinstance(extent, tirx.IntImm):
        raise LoweringError(f"the block size must be a constant, got threads={extent}")
    return var, int(extent.value)


def uses_var(node, var) -> bool:
    """Whether ``var`` occurs free in ``node`` (an expression or a statement)."""
    from tvm.tirx.analysis import undefined_vars

    return any(v.same_as(var) for v in undefined_vars(node))


def loop(var_name: str, extent, body_fn, kind=tirx.ForKind.SERIAL):
    """``for v in range(extent): body_fn(v)``, unrolled when ``kind`` says so; inlined for 1."""
    if isinstance(extent, int) and extent == 1:
        return body_fn(tirx.const(0, "int32"))
    var = tirx.Var(var_name, "int32")
    return tirx.For(var, tirx.const(0, "int32"), tirx.const(extent, "int32") if isinstance(extent, int)
                    else extent, kind, body_fn(var))


def if_then(cond, body):
    if isinstance(cond, bool):
        return body if cond else None
    if isinstance(cond, tirx.IntImm):
        return body if int(cond.value) else None
    return tirx.IfThenElse(cond, body, None)


def is_pipeline_region(stmt) -> bool:
    return isinstance(stmt, tirx.AttrStmt) and stmt.attr_key == PIPELINE_REGION


def region_entry(region):
    """The statements of a pipeline region that run before its first wait and barrier (the
    prologue: software_pipeline builds a region as [prologue, loop, wait, barrier] and the
    prologue writes only the staged slots): what insert_barriers orders against earlier
    statements. Everything after them is ordered by that barrier."""
    return region.body.seq[0]


def bound_values(body) -> dict:
    """{var: value} of every Bind in ``body`` (``loop_range = T.min(...)``), each value with the
    Binds before it inlined, so that substituting the dict resolves a name in one step."""
    bound = {}

    def on_bind(node):
        bound[node.var] = substitute(node.value, bound)

    tvm_ffi.structural_walk(body, [(tirx.Bind, on_bind)])
    return bound


def loop_layout_guard(layout, st: KernelState, what: str, where: str | None = None):
    """The condition under which a thread takes part in work an author's ``loop_layout`` deals
    (T.Parallel's or T.copy's): threads past the layout do nothing (None when it covers the
    block). A layout over more threads than the block has cannot run and is refused."""
    if layout.num_threads > st.num_threads:
        raise LoweringError(f"kernel '{st.kernel}': the loop_layout of {what} spreads it over "
                            f"{layout.num_threads} threads, but the block has {st.num_threads}: lay it "
                            f"out over at most {st.num_threads}" + (f"\n  --> {where}" if where else ""))
    return st.thread_var < layout.num_threads if layout.num_threads < st.num_threads else None
