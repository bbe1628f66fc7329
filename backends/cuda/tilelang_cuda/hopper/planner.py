"""What the sm_90a path decides for one kernel, in one place the passes and rules consult.

``HopperPlanner`` is the cuda backend's ``KernelState.backend``: the gemm rule and the layout
functions ask it whether a gemm runs on wgmma (``plan``), and the kit's two backend hooks run its
passes: ``specialize`` (wgmma operand layouts; TMA + warp specialization of the T.Pipelined loop)
and ``finalize`` (named barriers for the consumer warpgroups).
"""

from __future__ import annotations

import tvm_ffi
from tvm import tirx

from tilelang_core.errors import LoweringError
from tilelang_core.ir import Gemm, TileOp, is_tile_op
from tilelang_core.ir.atomic_calls import is_parallel_loop
from tilelang_core.layout.swizzle import BANK_KINDS, HINT_KINDS
from tilelang_core.simt.lowering import SHARED, scope
from tilelang_core.simt.transform.apply_layouts import swizzle_tag
from tilelang_core.simt.transform.block_swizzle import has_cluster, has_swizzle, rasterize
from tilelang_core.simt.transform.insert_barriers import touched
from tilelang_core.transform.thread_ranges import tile_ops_with_threads

from ..target import capability
from .gemm_batches import batch_gemms
from .occupancy import fragment_registers
from .warp_specialize import NotSpecialized, named_barriers, warp_specialize, with_producer_threads
from .tile_scheduler import walks_to_while
from .wgmma import (WARPGROUP, element_bits, explain_wgmma, shared_tile, tile_swizzle, wgmma_k,
                    wgmma_shared_layout)


def per_thread_arrays(body) -> list:
    """The kernel's T.alloc_local / T.alloc_var buffers: registers every thread holds whole."""
    found = []
    tvm_ffi.structural_walk(body, [(tirx.AllocBuffer, lambda a: found.append(a.buffer) if str(
        a.buffer.ty.storage_scope) in ("local", "local.var") else None)])
    return found


def tied_gemms(body) -> dict:
    """{accumulator buffer: the gemms whose accumulators share its layout}: the gemms of one
    accumulator, and those of same-shape fragments a T.Parallel loop reads or writes together
    (element by element, so their layouts must agree). Union-find over the fragments."""
    parent: dict = {}

    def find(b):
        while parent.setdefault(b, b) is not b:
            b = parent[b]
        return b

    def on_for(loop):
        if is_parallel_loop(loop):
            reads, writes = touched(loop.body)
            by_shape: dict = {}  # (fragments of other shapes are indexed differently: not tied)
            for frag in reads | writes:
                if str(frag.ty.storage_scope) == "local.fragment":
                    by_shape.setdefault(tuple(str(d) for d in frag.ty.shape), []).append(frag)
            for tied in by_shape.values():
                for other in tied[1:]:
                    parent[find(other)] = find(tied[0])

    gemms = []

    def on_call(call):
        op = TileOp.from_stmt(call) if is_tile_op(call) else None
        if isinstance(op, Gemm):
            gemms.append(op)

    tvm_ffi.structural_walk(body, [(tirx.For, on_for), (tirx.TilePrimitiveCall, on_call)])
    groups: dict = {}
    for op in gemms:
        groups.setdefault(find(op.C.source), []).append(op)
    return {op.C.source: groups[find(op.C.source)] for op in gemms}


def user_annotated(body) -> set:
    """Names of shared buffers the author laid out with T.annotate_layout, less those whose layout
    wgmma's own may take the place of: a ``make_swizzled_layout`` (a request for some swizzle,
    TileLang's way to ask for a bank-conflict-free tile) and a bank swizzle equal to wgmma's."""
    names = set()

    def on_attr(attr):
        if attr.attr_key == "tl.layout_map":
            names.update(str(buf.name) for buf, value in attr.node.items()
                         if not yields_to_wgmma(buf, swizzle_tag(value)[1]))

    tvm_ffi.structural_walk(body, [(tirx.AttrStmt, on_attr)])
    return names


def yields_to_wgmma(buf, kind) -> bool:
    """Whether the annotated layout ``kind`` of shared ``buf`` may become wgmma's layout for it:
    a make_swizzled_layout hint, or the bank swizzle wgmma_shared_layout would pick (the same
    offsets: tests/layout/test_bank_swizzles.py)."""
    if kind in HINT_KINDS:
        return True
    if kind not in BANK_KINDS or len(buf.ty.shape) != 2:
        return False
    return BANK_KINDS[kind] == tile_swizzle(int(buf.ty.shape[-1]), element_bits(str(buf.ty.dtype)))


class HopperPlanner:
    def __init__(self, arch: str, options, func: tirx.PrimFunc):
        self.arch = arch
        self.options = options
        self.annotated = user_annotated(func.body)
        #: gemms whose accumulators share a layout run on one instruction family (wgmma and
        #: mma.sync lay a fragment out differently: TileLang's GDN backward accumulates dq from two
        #: gemms and combines two gemms' accumulators element by element)
        self.tied = tied_gemms(func.body)
        self.user_swizzle = has_swizzle(func.body)
        #: a T.ClusterKernel: its clusters are the author's neighbouring blocks, so the launch order
        #: stays (no rasterization, persistent tiles, stream-K or multicast clusters of our own)
        self.user_cluster = has_cluster(func.body)
        self.enabled = arch == "sm_90a"
        self.specialized = False
        #: what was chosen and why, for the user (a comment at the top of the kernel source)
        self.notes: list[str] = []
        #: shared buffers only TMA writes (wgmma reading them needs no proxy fence)
        self.tma_loaded: set = set()
        #: shared buffers the consumers write only before the pipelined loop, fenced once there
        self.fenced_once: set = set()

    def plan(self, op: Gemm, num_threads: int):
        if not self.enabled:
            return None
        return self.explain(op, num_threads)[0]

    def explain(self, op: Gemm, num_threads: int):
        """(wgmma plan, "") or (None, why not): explain_wgmma's answer, and None for every gemm
        tied to one that cannot run on wgmma (``tied_gemms``)."""
        plan, why = explain_wgmma(op, self.arch, num_threads, self.options.disable_wgmma, self.annotated)
        if plan is None:
            return plan, why
        for other in self.tied.get(op.C.source, []):
            other_plan, other_why = explain_wgmma(other, self.arch, num_threads, self.options.disable_wgmma,
                                                  self.annotated)
            if other_plan is None:
                return None, (f"its accumulator {op.C.source.name} shares a layout with gemm({other.A.source.name}, "
                              f"{other.B.source.name} -> {other.C.source.name}), which is not wgmma ({other_why})")
        return plan, ""

    def specialize(self, body, st):
        """Shared operands of wgmma gemms take the 128-byte-swizzle layout; then, unless turned
        off, the T.Pipelined loop becomes a TMA producer + consumers (warp_specialize.py)."""
        if not self.enabled:
            return body
        widest = [0]  # the widest wgmma instruction (N): what two blocks per SM must fit

        def on_call(call, threads):
            if not is_tile_op(call):
                return
            op = TileOp.from_stmt(call)
            if not isinstance(op, Gemm):
                return
            # the threads its rule will have: a thread group's, inside `if tx < 128:` / T.ws
            plan, why = self.explain(op, threads)
            names = f"gemm({op.A.source.name}, {op.B.source.name} -> {op.C.source.name})"
            if plan is None:
                self.notes.append(f"{names}: not wgmma ({why})")
            else:
                for operand in (op.A, op.B):
                    if operand.source in st.views:
                        raise LoweringError(
                            f"kernel '{st.kernel}': {names} reads '{operand.source.name}', a T.reshape "
                            f"view of shared '{st.views[operand.source].name}', with wgmma on {self.arch}; "
                            f"pass the allocated tile itself, or set tl.disable_wgmma")
                widest[0] = max(widest[0], plan.n_inst)
                self.notes.append(f"{names}: wgmma m64n{plan.n_inst}k{wgmma_k(str(op.A.source.ty.dtype))}, "
                                  f"{plan.wg_m}x{plan.wg_n} warpgroups")
                for operand in (op.A, op.B):
                    if scope(operand) in SHARED:
                        rows, cols = shared_tile(operand)
                        st.annotated[str(operand.source.name)] = wgmma_shared_layout(
                            rows, cols, element_bits(str(operand.source.ty.dtype)))

        for call, threads in tile_ops_with_threads(body, st.num_threads):
            on_call(call, threads)
        body = self._rasterize(body)
        # (where the producer warpgroup is not made: its consumer schedule places the gemms itself)
        batched = batch_gemms(body, lambda op: self.plan(op, st.num_threads) is not None) \
            if self.options.enable_gemm_batches else body
        if any(str(v.ty.storage_scope) in SHARED for v in st.views):
            # a TMA box writes the allocation's swizzle; a view's accesses are composed with the
            # layout only in the kit's own lowering, so keep the pipeline there
            self.notes.append("T.Pipelined: cp.async pipeline (the kernel views shared memory with T.reshape/T.view)")
            return batched
        if self.options.disable_tma_lower or self.options.disable_warp_specialized:
            self.notes.append("T.Pipelined: cp.async pipeline (tl.disable_tma_lower / tl.disable_warp_specialized)")
            return batched
        try:
            notes = []
            new = warp_specialize(body, st, st.annotated, self.tma_loaded,
                                  pingpong=not self.options.disable_pingpong,
                                  persistent=("off" if self.options.disable_persistent or self.user_cluster else
                                              "always" if self.options.enable_persistent else "tile_operands"),
                                  overlap=not self.options.disable_wgmma_overlap,
                                  is_wgmma=lambda op: self.plan(op, st.num_threads) is not None, notes=notes,
                                  fenced_once=self.fenced_once, tma_store=not self.options.disable_tma_store,
                                  tma_reduce=self.options.enable_tma_reduce,
                                  early_issue=self.options.enable_early_gemm_issue,
                                  shared_limit=capability(self.arch, "max_shared_memory_per_block"),
                                  overlap_block=self.options.enable_overlap_block,
                                  conditional_mask=not self.options.disable_conditional_mask,
                                  cluster=self.options.enable_cluster_multicast and not self.user_cluster,
                                  two_blocks=not self.options.disable_two_blocks_per_sm, widest_n=widest[0],
                                  fragment_regs=fragment_registers(st.layouts, per_thread_arrays(body)),
                                  shared_per_sm=capability(self.arch, "shared_memory_per_sm"),
                                  stream_k=("off" if self.options.disable_stream_k or self.user_cluster else
                                            "always" if self.options.enable_stream_k else "auto"))
        except NotSpecialized as why:
            self.notes.append(f"T.Pipelined: cp.async pipeline, no TMA producer warpgroup ({why})")
            return batched
        self.specialized = True
        self.notes.append(f"T.Pipelined: TMA producer warpgroup + {st.num_threads} consumer threads, "
                          f"tiles {', '.join(sorted(self.tma_loaded))}")
        self.notes += notes
        return new

    def _rasterize(self, body):
        """A 2-D grid of gemm tiles walked in panels of block rows, so that neighbouring blocks
        share A rows and B columns in L2 (measured on the H200, GEMM 8192^3 fp16: 655 TFLOP/s in
        launch order, 690 with panels of 8, 715 with 16). Kernels with T.use_swizzle keep theirs
        (``panel_size=1`` keeps the launch order); 3-D grids (attention: batch, head, rows) too."""
        if self.user_swizzle or self.user_cluster or self.options.disable_rasterization or \
                not any("gemm(" in n for n in self.notes):
            return body
        extents = {}
        tvm_ffi.structural_walk(body, [(tirx.AttrStmt, lambda a: extents.__setitem__(
            str(a.node.thread_tag), a.value) if a.attr_key == "thread_extent" else None)])
        gx, gy, gz = (extents.get(f"blockIdx.{d}") for d in "xyz")
        if gz is not None or not isinstance(gx, tirx.IntImm) or not isinstance(gy, tirx.IntImm):
            return body
        panel = 16 if int(gy) >= 64 else 8 if int(gy) >= 16 else 0
        if panel == 0 or int(gx) < 2:
            return body
        if self.options.enable_cluster_multicast and int(gy) % 2 == 0:
            # a cluster pairs rows 2i and 2i + 1 of a column: panels of row pairs keep them so
            self.notes.append(f"blocks: walked in panels of {panel} pairs of block rows (L2 reuse; clusters)")
            return rasterize(body, panel, pairs=True)
        self.notes.append(f"blocks: walked in panels of {panel} block rows (L2 reuse; T.use_swizzle overrides)")
        return rasterize(body, panel)

    def needs_proxy_fence(self, op: Gemm) -> bool:
        """Whether a wgmma gemm may read shared memory written through the generic proxy."""
        return any(scope(x) in SHARED and str(x.source.name) not in self.tma_loaded | self.fenced_once
                   for x in (op.A, op.B))

    def finalize(self, body, st):
        if not self.specialized:
            return body
        body = walks_to_while(named_barriers(body))
        return with_producer_threads(body, st.thread_var, st.num_threads + WARPGROUP)
