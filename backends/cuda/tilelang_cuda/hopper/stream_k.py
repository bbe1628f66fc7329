"""Stream-K tail for persistent kernels whose loop state combines: GEMM and non-causal
FlashAttention (the default where it pays; ``tl.disable_stream_k`` turns it off,
``tl.enable_stream_k`` skips the cost model).

One CTA per tile leaves the last wave partial: GEMM 8192^3 in 128x256 tiles is 2048 tiles on
132 SMs, 15.5 waves that take 16 tile-times (3% over the mean; 4096^3: 3.88 waves -> 4). Here
min(tiles, SMs) resident CTAs first walk whole waves of tiles (``dp`` tiles, CTA c taking c,
c + CTAs, ...), then share the ``sk`` tiles left over by their k-iterations: the ``sk * n``
iterations are cut into one contiguous range per CTA, and a range that crosses tiles becomes one
piece per tile. A tile cut between CTAs is summed by the CTA holding its last k-iteration::

    sk = 0                 when tiles divide into waves (or the loop runs no iteration), or
                           sharing saves a CTA no more than ``fixup`` iterations (the cost model:
                           fixup_iterations; decided on the host, which knows the SM count)
    sk = tiles % CTAs      when that is at least half a wave
    sk = tiles % CTAs + CTAs   otherwise (a thin remainder cut over every CTA would leave each
                               tile in dozens of pieces, each summed through memory)
    CTA c: range [c q, min(c q + q, sk n)), q = ceil(sk n / CTAs), pieces taken top down:
        top piece, ends inside its tile   ("writer"): its partial sums -> workspace slot c,
                                           then flag[c] = 1 (st.release.gpu)
        bottom piece, starts inside one   ("finisher"): for each lower CTA whose top piece is
                                           in this tile: wait flag (ld.acquire.gpu), add its
                                           slot; then the kernel's own epilogue
        whole tiles                        the kernel's epilogue, as in the waves before

Each CTA writes at most one partial (its first piece) and a finisher waits only for lower CTAs,
which did their piece first: nothing waits on a CTA that may not have started. The host
allocates the workspace (4 KB of flags, zeroed, then one slot of the accumulators per CTA) on
the launch stream and frees it after the launch, like the dynamic scheduler's counter.

It applies where stream_k_state.py finds the loop's carried state combinable: GEMM's
accumulators (summed) or an online softmax's O, row sum and row max (rescaled to the larger
maximum, then summed), and no statement but tile ops reads the iteration index (attention's
key mask; in the tail's copy of the loop it cost spills and serialized wgmma). A piece runs the
loop over its own k-range; the producer walks the same pieces, its ring position the running
sum of their lengths. Whole tiles and tail pieces are two copies of the body (``loop``), so
that the waves keep the persistent walk's code.

Measured on the H200 (session 10, in turns): attention B8 H16 S4096 D128 628 against 616
TFLOP/s with whole tiles (cuDNN 591), S8192 D64 (192x128 tiles) 473 against 457.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from tilelang_core.ir import Gemm, TileOp, is_tile_op
from tilelang_core.ir import region as R
from tilelang_core.simt import intrinsics as I
from tilelang_core.simt.transform.state import if_then, seq, substitute, uses_var

from .intrinsics import scratch_statements
from .persistent import _PersistentTiles
from .stream_k_state import carried_state

#: flag words reserved at the workspace's start (one per resident CTA; SMs per GPU stay below)
FLAGS = 1024

#: the host helper (intrinsics.NUM_SMS_HOST) that hides the tail size from TVM's simplifier
OPAQUE = "tl_opaque_i32"

#: matrix flops (16-bit operands) an SM runs in the time its share of a tail's partial sums costs
#: per byte (a writer's store plus a finisher's load). H200: 5.98 TFLOP/s per SM, and a 128 KB
#: slot cost ~13 us on the critical path at both 4096^3 and 8192^3 (bench/stream_k.py and
#: hopper_sweep.py, session 9: stream-K 722 against 752 TFLOP/s persistent at 4096^3, 670 against
#: 658 at 8192^3), i.e. ~20 GB/s per SM while every SM does it at once.
FLOPS_PER_FIXUP_BYTE = 300


def _gemms(loop_stmts) -> list:
    """The Gemm tile ops among a loop body's statements."""
    ops = (TileOp.from_stmt(stmt) for stmt in loop_stmts if is_tile_op(stmt))
    return [op for op in ops if isinstance(op, Gemm)]


def fixup_iterations(loop_stmts, carried) -> int:
    """Loop iterations a CTA could run in the time one partial-sum round trip costs: a tail is
    shared along K only where that saves more iterations per CTA than this. A loop's time is
    counted as its gemms' (attention's softmax makes the real count a little larger)."""
    work = 0.0
    for op in _gemms(loop_stmts):
        m, n = (int(e) for e in R.extents_of(op.C)[-2:])
        a = R.extents_of(op.A)[-2:]
        k = int(a[0] if op.transpose_A else a[1])
        bits = tvm.runtime.DataType(str(op.A.source.ty.dtype)).bits
        work += 2 * m * n * k * 16 / bits  # fp8 runs twice, tf32 half the 16-bit rate
    slot_bytes = 4 * sum(_elements(buf) for buf in carried)
    return max(1, round(2 * slot_bytes * FLOPS_PER_FIXUP_BYTE / work))


#: gemms a loop may have for its tail to be shared: FlashAttention backward's loop (five gemms,
#: D64 and D128) compiled with the tail's second copy of it made ptxas 13.0 serialize every wgmma
#: of the kernel (C7511, "insufficient register resources for the wgmma pipeline") and spill
#: 172-352 bytes; with either copy alone, neither. GEMM (one) and FlashAttention forward (two)
#: compile clean with both copies.
MAX_GEMMS = 2

#: "auto" (the default): loops whose state combines share a partial last wave where the cost
#: model says it pays; "always": wherever there is one (``tl.enable_stream_k``); "off" (``tl.disable_stream_k``)
MODES = ("off", "auto", "always")


def stream_k_declined(mode: str, persistent: str, two_fit: bool, cluster: bool) -> str:
    """Why a kernel cannot take stream-K whatever its loop ("" when it can): it needs the
    persistent launch, one block per SM (one persistent 128x128 block per SM ran 0.57x of two at
    8192^3 on the H200) and no cluster pair."""
    if mode not in MODES:
        raise ValueError(f"stream_k={mode!r} must be one of {MODES}")
    return ("off" if mode == "off" else "tl.disable_persistent" if persistent == "off" else
            "two blocks per SM" if two_fit else "tl.enable_cluster_multicast" if cluster else "")


def with_stream_k(tiles, mode: str, declined: str, before, loop_stmts, after, n, index, layouts, notes):
    """``tiles`` (the persistent walk or None), or a StreamKTiles over it where the loop's state
    combines (stream_k_state.py) and no statement but tile ops reads the iteration ``index``; a
    note says which, for such loops and wherever stream-K was asked for."""
    if mode == "off":
        return tiles
    state, why = carried_state(before, loop_stmts, after)
    why = declined or why or ("no static tile walk: the grid or the tiles' trip counts vary"
                                 if not isinstance(tiles, _PersistentTiles) else "")
    if not why and any(not is_tile_op(s) and uses_var(s, index) for s in loop_stmts):
        # attention's key mask: in the tail's copy of the loop (iterations from a piece's own
        # start) ptxas 13.0 spilled 328 bytes and serialized every wgmma of the kernel (C7512)
        why = "the loop masks by its iteration index"
    gemms = len(_gemms(loop_stmts))
    if not why and gemms > MAX_GEMMS:
        why = f"{gemms} gemms in the loop; the tail's copy of such a loop serializes every wgmma"
    if why:
        if notes is not None and (state or mode == "always"):
            notes.append(f"no stream-K ({why})")
        return tiles
    carried = state.fragments
    fixup = 0 if mode == "always" else fixup_iterations(loop_stmts, carried)
    if notes is not None:
        notes.append("stream-K: whole waves of tiles, then the rest shared along K by every CTA"
                     + (f" where that saves a CTA more than {fixup} iterations" if fixup else "")
                     + (f" (partial softmax states combined by their row maxima, {state.row_max.max.name})"
                        if state.row_max else ""))
    return StreamKTiles(tiles, n, carried, [layouts[buf] for buf in carried], fixup=fixup, row_max=state.row_max)


class StreamKTiles:
    """The persistent walk of _PersistentTiles (``static``: its grid and launch) with the stream-K
    tail of the module docstring. Interface of the other walks, plus ``k0`` and ``trip`` (the
    k-range of the current piece, for the loops) and ``epilogue(after, tx)``."""

    init = []
    #: the tail's walk values, in one per-thread array (registers): read as loads, the analyzer
    #: cannot fold them back into ever longer expressions (whole tiles use whole_values instead)
    FIELDS = ("waves", "lo", "hi", "top", "tile", "k0", "end", "done", "first")

    def __init__(self, static, n, accs, layouts, fixup: int = 0, row_max=None):
        """``accs``: the fragments a piece carries (stream_k_state.py), ``row_max`` their
        RowMax if they are an online softmax's; ``fixup``: share the tail only where it saves a
        CTA more loop iterations than this (decided on the host, where the number of SMs is
        known; 0: whenever there is a tail)."""
        self.static, self.fixup, self.row_max = static, fixup, row_max
        self.blocks, self.total = static.blocks, static.total
        self.n, self.accs, self.layouts = n, accs, list(layouts)  # the accumulators' fragment layouts
        self.state = tirx.decl_buffer((len(self.FIELDS),), "int32", name="tl_stream_k_state", scope="local")
        self.allocs = [tirx.AllocBuffer(self.state)]
        self.t = tirx.Var("u", "int32")
        self.k0, self.end = self._get("k0"), self._get("end")
        self.trip = self.end - self.k0
        self.done, self.first, self.tile = self._get("done"), self._get("first"), self._get("tile")
        sizes = [_elements(acc) for acc in accs]
        self.slot = sum(sizes)
        self.offsets = [sum(sizes[:i]) for i in range(len(sizes))]
        # flag words, then each CTA's slot (the partial sums of every accumulator)
        self.scratch = scratch = tirx.Var("tl_stream_k", "handle")
        # the tail's size in tiles and each CTA's share of its k-iterations, decided on the host
        # (kernel arguments; all values here are non-negative, so C's / and % are floor's)
        div, mod = tirx.truncdiv, tirx.truncmod
        tiles, ctas = _i32(self.total), static.ctas
        rest = mod(tiles, ctas)
        self.sk, self.q = tirx.Var("tl_sk_tiles", "int32"), tirx.Var("tl_sk_share", "int32")
        # whole waves as a quotient and remainder from the host: no division by the CTA count in
        # the kernel
        self.whole, self.extra = tirx.Var("tl_sk_waves", "int32"), tirx.Var("tl_sk_waves_rest", "int32")
        self.host = static.host + [
            tirx.Bind(self.sk, tirx.call_extern("int32", OPAQUE, tirx.Select(
                tirx.Or(tirx.Or(rest == 0, n <= 0), (ctas - rest) * n <= fixup * ctas), _i32(0),
                tirx.Select(tirx.And(2 * rest < ctas, tiles >= rest + ctas), rest + ctas, rest)))),
            tirx.Bind(self.q, div(self.sk * n + ctas - 1, ctas)),
            tirx.Bind(self.whole, div(tiles - self.sk, ctas)), tirx.Bind(self.extra, mod(tiles - self.sk, ctas))]
        # no tail, no workspace: no allocation, no memset on the stream (measured ~3 us a launch
        # at 4096^3, where the cost model keeps whole tiles)
        total_bytes = tirx.Select(self.sk > 0, tirx.Cast("int64", ctas) * (4 * self.slot) + 4 * FLAGS,
                                  tirx.const(0, "int64"))
        zeroed = tirx.Min(total_bytes, tirx.const(4 * FLAGS, "int64"))  # the flags
        host, self.after = scratch_statements(scratch, total_bytes, zeroed,
                                              "the stream-K workspace of a persistent kernel")
        self.host += host

    def _get(self, field):
        return tirx.BufferLoad(self.state, [self.FIELDS.index(field)])

    def _set(self, field, value):
        return tirx.BufferStore(self.state, value, [self.FIELDS.index(field)])

    def _launch_values(self):
        """This CTA's share of the tail (module docstring): waves of whole tiles, then the range
        [lo, hi) of the tail's k-iterations and the tail tile ``top`` that holds its last one."""
        cta, q = self.static.cta, self.q
        # whole tiles cta, cta + CTAs, ... below the tail (a ragged last wave only without a tail:
        # a loop of no iterations)
        waves = self.whole + tirx.Select(cta < self.extra, _i32(1), _i32(0))
        hi = tirx.Min(cta * q + q, self.sk * self.n)
        return [self._set("waves", waves), self._set("lo", cta * q), self._set("hi", hi),
                self._set("top", tirx.truncdiv(hi - 1, self._nz()))]

    def _nz(self):
        """The trip count as a divisor: the divisions stay defined when the loop is empty (there
        is no tail then)."""
        return tirx.Max(self.n, _i32(1))

    def _piece_values(self, p):
        """This CTA's ``p``-th piece of the tail, taken top down: its tile, k-range, ring position
        and the lowest CTA sharing its tile."""
        n = self.n
        waves, lo, hi = self._get("waves"), self._get("lo"), self._get("hi")
        ts = self._get("top") - p  # the piece's tile, counted in the tail
        return [
            self._set("tile", self.total - self.sk + ts),
            self._set("k0", tirx.Max(lo - ts * n, _i32(0))),
            self._set("end", tirx.Min(hi - ts * n, n)),
            self._set("done", waves * n + hi - tirx.Min(hi, (ts + 1) * n)),
            self._set("first", tirx.truncdiv(ts * n, tirx.Max(self.q, _i32(1))))]

    def loop(self, body, role: str = "", n=None):
        """``body`` once per unit of this CTA: its whole tiles, then its pieces of the tail, in
        two copies. In the first the walk's values are plain expressions of the tile counter, as
        in the persistent walk: read from the state array, ptxas computed the ring slots and
        wgmma descriptors of every iteration on the vector datapath (48 R2UR against 16 per
        attention iteration, WARPSYNC and BSSY in the loop; 8% slower on the H200, session 10)."""
        waves, lo, hi = self._get("waves"), self._get("lo"), self._get("hi")
        pieces = tirx.Select(lo < hi, self._get("top") - tirx.truncdiv(lo, self._nz()) + 1, _i32(0))
        whole = self.whole_values()
        p = tirx.Var("p", "int32")
        tail = seq(self._piece_values(p) + [substitute(_renamed(body), {
            **self._block_values(self.tile), self.t: waves + p})])
        return seq(self._launch_values() + [
            tirx.For(self.t, _i32(0), waves, tirx.ForKind.SERIAL,
                     self._fields_as(substitute(body, self._block_values(whole["tile"])), whole)),
            tirx.For(p, _i32(0), pieces, tirx.ForKind.SERIAL, tail)])

    def whole_values(self) -> dict:
        """The walk's values for whole tile number ``t`` of this CTA (``t`` below ``waves``)."""
        return {"tile": self.static.cta + self.t * self.static.ctas, "k0": _i32(0), "end": self.n,
                "done": self.t * self.n, "first": _i32(0)}

    def _block_values(self, tile):
        """The block indices of tile number ``tile`` (x fastest, as the launch grid had them)."""
        vmap, stride = {}, 1
        for var, extent in self.blocks:
            vmap[var] = tirx.floormod(tirx.floordiv(tile, stride), extent)
            stride *= extent
        return vmap

    def _fields_as(self, stmt, values: dict):
        """``stmt`` with the walk's state array read replaced by ``values`` (field -> expression)."""
        index = {self.FIELDS.index(f): v for f, v in values.items()}

        def on_load(load):
            if load.source.same_as(self.state) and int(load.indices[0]) in index:
                return index[int(load.indices[0])]
            return load

        return _constant_branches(tvm_ffi.structural_map(stmt, [(tvm.ir.TensorLoad, on_load)]))

    def launch(self, chain, inner, thread_var):
        return self.static.launch(chain, inner, thread_var)

    def _slots(self, cta):
        """(declarations, {fragment: (its view, its layout)}): ``cta``'s workspace slot, one flat
        float32 view over the scratch per carried fragment."""
        decls, views = [], {}
        for acc, layout, off in zip(self.accs, self.layouts, self.offsets):
            view = tirx.decl_buffer((_elements(acc),), "float32", name=f"{acc.name}_partial", scope="global",
                                    elem_offset=FLAGS + cta * self.slot + off)
            decls.append(tirx.DeclBuffer(view, data=self.scratch))
            views[acc] = (view, layout)
        return decls, views

    def _in_slot(self, views, acc, idx):
        """(view, indices): where element ``idx`` of ``acc`` lies in the slot of ``views``."""
        view, layout = views[acc]
        return view, [self._where(acc, layout, idx)]

    def _where(self, acc, layout, idx):
        """Where element ``idx`` of ``acc`` lies in a slot: by thread and register, pairs of
        registers of all threads one after another, so that a warp's 8-byte accesses (the
        accumulator's registers hold column pairs) cover 256 contiguous bytes. In logical order
        they touched half of each 32-byte sector and cost the 4096^3 GEMM 9% (ncu, session 9).
        A fragment that several threads hold alike (a softmax's row maximum) goes in logical
        order, every copy to the same place."""
        if layout.replicas > 1:
            flat = idx[0]
            for d in range(1, len(idx)):
                flat = flat * acc.ty.shape[d] + idx[d]
            return flat
        pair = 2 if layout.local_size % 2 == 0 else 1
        reg, thread = layout.local_of(*idx), layout.thread_of(*idx)
        return (tirx.floordiv(reg, pair) * layout.num_threads + thread) * pair + tirx.floormod(reg, pair)

    def epilogue(self, after, tx):
        """The consumers' code after the loop of a piece: a writer stores its partial sums and
        raises its flag; a finisher adds the lower CTAs' partials, then runs ``after``."""
        cta = self.static.cta
        decls, views = self._slots(cta)

        def stored(acc, idx):
            view, at = self._in_slot(views, acc, idx)
            return tirx.BufferStore(view, tirx.BufferLoad(acc, idx), at)

        store = seq(decls + [_parallel(acc, lambda idx, acc=acc: stored(acc, idx)) for acc in self.accs] + [
            I.syncthreads(),
            if_then(tx == 0, I.call("tl_stream_k_publish", self.scratch, cta))])
        partner = tirx.Var("tl_sk_partner", "int32")
        gather = tirx.For(partner, self.first, cta - self.first, tirx.ForKind.SERIAL, seq([
            if_then(tx == 0, I.call("tl_stream_k_wait", self.scratch, partner)),
            I.syncthreads(),
            self._combine(partner)]))
        return tirx.IfThenElse(self.end < self.n, store, seq([if_then(self.k0 > 0, gather), after]))

    def _combine(self, partner):
        """This CTA's state combined with ``partner``'s slot: sums added, or with a row max
        rescaled to the larger maximum first (stream_k_state.py's docstring, using the
        kernel's own M' copy and S statement)."""
        decls, views = self._slots(partner)

        def theirs(acc, idx):
            return tirx.BufferLoad(*self._in_slot(views, acc, idx))

        rm = self.row_max
        if rm is None:
            return seq(decls + [_parallel(acc, lambda idx, acc=acc: tirx.BufferStore(
                acc, tirx.BufferLoad(acc, idx) + theirs(acc, idx), idx)) for acc in self.accs])
        sums = [acc for acc in self.accs if not acc.same_as(rm.max)]

        def rescaled(acc, extra):
            axis = rm.axes[acc]
            return _parallel(acc, lambda idx: tirx.BufferStore(acc, extra(
                tirx.BufferLoad(acc, idx), idx, tirx.BufferLoad(rm.scale, [idx[axis]])), idx))

        return seq(decls + [
            rm.copy,                                                   # M' = M
            _parallel(rm.max, lambda idx: tirx.BufferStore(rm.max, tirx.Max(
                tirx.BufferLoad(rm.max, idx), theirs(rm.max, idx)), idx)),  # M = max(M, Mp)
            rm.scale_stmt,                                             # S = f(M', M)
            *[rescaled(acc, lambda x, idx, s: x * s) for acc in sums],
            _parallel(rm.prev, lambda idx: tirx.BufferStore(rm.prev, theirs(rm.max, idx), idx)),  # M' = Mp
            rm.scale_stmt,                                             # S = f(Mp, M)
            *[rescaled(acc, lambda x, idx, s, acc=acc: x + theirs(acc, idx) * s) for acc in sums]])


def _constant_branches(stmt):
    """``stmt`` with each ``if`` whose condition is a constant replaced by the branch taken: a
    whole tile's copy of the loop has no writer or finisher (``end < n`` is false there), which
    TVM's passes would otherwise unroll before simplifying it away."""
    analyzer = tvm.sym.Analyzer()

    def on_if(node):
        cond = analyzer.simplify(node.condition)
        if isinstance(cond, tirx.IntImm):
            return node.then_case if int(cond) else (node.else_case or tirx.Evaluate(_i32(0)))
        return node

    return tvm_ffi.structural_map(stmt, [(tirx.IfThenElse, on_if)])


def _renamed(stmt):
    """``stmt`` with fresh variables for the loops and bindings it defines: the body appears
    twice in a walk, and the analyzer refuses one variable with two different ranges."""
    defs = []
    tvm_ffi.structural_walk(stmt, [(tirx.For, lambda f: defs.append(f.loop_var)),
                                   (tirx.Bind, lambda b: defs.append(b.var))])
    return substitute(stmt, {v: tirx.Var(str(v.name), str(v.ty.dtype)) for v in defs})


def _i32(value):
    return tirx.const(value, "int32")


def _elements(buf) -> int:
    count = 1
    for s in buf.ty.shape:
        count *= int(s)
    return count


def _parallel(buf, body_fn):
    """``for idx in T.Parallel(*buf.shape): body_fn(idx)``, which LowerParallel deals out by the
    fragment's layout."""
    loop_vars = [tirx.Var(f"sk_i{d}", "int32") for d in range(len(buf.ty.shape))]
    stmt = body_fn(loop_vars)
    for var, extent in reversed(list(zip(loop_vars, buf.ty.shape))):
        stmt = tirx.For(var, tirx.const(0, "int32"), extent, tirx.ForKind.PARALLEL, stmt,
                        annotations={"tl.parallel": 1})
    return stmt


__all__ = ["FLAGS", "MODES", "OPAQUE", "StreamKTiles", "fixup_iterations", "stream_k_declined",
           "with_stream_k"]
