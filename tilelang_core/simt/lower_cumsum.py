"""T.cumsum / T.cummax: inclusive scans along ``dim`` of a tile.

Many short lines: one thread scans one line (all other indices fixed), lines dealt round-robin
over the block, the running value in a register. Few long lines (a chunk's 64 decay values in
linear attention: one thread walking them was ~1.4 us of every chunk): a warp scans one line,
each lane a contiguous run of ``ceil(length / warp)`` elements in a register, then the lanes'
totals by a Hillis-Steele scan over shuffles (``tl_shfl_sync``, log2(warp) steps), and each lane
combines its run with the lanes' before it. ``_use_warps`` picks by the dependent steps each
takes. Every element is read before any lane writes it back, by the lane that owns it, so
``src`` and ``dst`` may be the same buffer either way. A fragment side goes through a shared
workspace (staging.py), as TileLang stages fragment scans.
"""

from __future__ import annotations

from tvm import tirx

from tilelang_core.ir import Cumsum, TileOp
from tilelang_core.ir import region as R

from . import intrinsics as I
from .lowering import FRAGMENT, cast, dtype, load, scope, state_of
from .staging import flat, fragment_to_shared, shared_to_fragment, size, unflatten
from .transform.state import if_then, loop, seq


def lower_cumsum(call, ctx):
    op: Cumsum = TileOp.from_stmt(call)
    st = state_of(ctx)
    what = op.user_name
    extents = [R.as_int(r.extent) for r in op.src.region]
    if any(e is None for e in extents):
        raise ctx.error("cumsum", f"the tile {what} scans must have constant extents")
    stmts = []
    src, dst = op.src, op.dst
    if scope(src) == FRAGMENT:
        staged, src_ws = fragment_to_shared(src, st, what, "scan_in")
        stmts.append(staged)
        read = lambda index: tirx.BufferLoad(src_ws, [flat(index, extents)])  # noqa: E731
    else:
        read = lambda index: load(src, [r.min + i for r, i in zip(src.region, index)])  # noqa: E731
    to_fragment = scope(dst) == FRAGMENT
    if to_fragment:
        out_ws = st.alloc(f"{dst.source.name}_scan_out", (size(extents),), dtype(dst), "shared.dyn")
        place = lambda index: (out_ws, [flat(index, extents)])  # noqa: E731
    else:
        place = lambda index: (dst.source, [r.min + i for r, i in zip(dst.region, index)])  # noqa: E731

    def write(index, value):
        buffer, indices = place(index)
        return tirx.BufferStore(buffer, value, indices)

    written = lambda index: tirx.BufferLoad(*place(index))  # noqa: E731
    length, lines = extents[op.dim], size([e for d, e in enumerate(extents) if d != op.dim])
    threads = st.num_threads
    acc_dtype = dtype(dst)
    acc = st.alloc(f"{dst.source.name}_scan", (1,), acc_dtype, "local")
    if _use_warps(lines, length, threads, st.dialect.warp_size):
        stmts.append(_warp_scans(op, st, read, write, written, extents, acc))
        return seq(stmts + _back(to_fragment, src, dst, out_ws if to_fragment else None, st, what))

    def body(it):
        line = it * threads + st.thread_var

        def step(s):
            tile = _line_index(op, extents, line, s)
            value = cast(read(tile), acc_dtype)
            running = tirx.BufferLoad(acc, [0])
            if op.kind == "max":
                running = tirx.if_then_else(s > 0, tirx.Max(running, value), value) \
                    if not isinstance(s, tirx.IntImm) else value
            else:
                running = running + value
            return seq([tirx.BufferStore(acc, running, [0]), write(tile, tirx.BufferLoad(acc, [0]))])

        scan = seq([tirx.BufferStore(acc, tirx.const(0, acc_dtype), [0]),
                    loop("s", length, step, tirx.ForKind.SERIAL)])
        return if_then(line < lines, scan) if lines % threads else scan

    stmts.append(loop("line", (lines + threads - 1) // threads, body, tirx.ForKind.SERIAL))
    return seq(stmts + _back(to_fragment, src, dst, out_ws if to_fragment else None, st, what))


def _back(to_fragment, src, dst, out_ws, st, what) -> list:
    out = [shared_to_fragment(out_ws, dst, st, what)] if to_fragment else []
    if to_fragment or scope(src) == FRAGMENT:
        out.append(I.syncthreads())  # the workspaces may be reused by the next op
    return out


def _use_warps(lines: int, length: int, threads: int, warp: int) -> bool:
    """A warp per line when that takes fewer dependent steps than a thread per line (a run of
    ``ceil(length / warp)`` twice, and the shuffle scan's ~3 steps per level)."""
    if threads % warp or length < 2 * warp:
        return False
    per_thread = -(-lines // threads) * length
    per_warp = -(-lines // (threads // warp)) * (2 * -(-length // warp) + 3 * (warp.bit_length() - 1))
    return per_warp < per_thread


def _line_index(op, extents, line, position):
    """The tile index of element ``position`` (in scan order) of line ``line``."""
    index = unflatten(line, [e for d, e in enumerate(extents) if d != op.dim])
    index.insert(op.dim, (extents[op.dim] - 1 - position) if op.reverse else position)
    return index


def _warp_scans(op, st, read, write, written, extents, acc):
    """Lines dealt round-robin over the warps; within one, each lane scans its run of the line in
    place, the lanes' totals are scanned by shuffles, and each lane folds the lanes' before it
    into its run (module docstring). ``written(index)``: what ``write`` stored there."""
    warp = st.dialect.warp_size
    warps = st.num_threads // warp
    length, lines = extents[op.dim], size([e for d, e in enumerate(extents) if d != op.dim])
    run = -(-length // warp)
    acc_dtype = dtype(op.dst)
    lane = tirx.floormod(st.thread_var, warp)
    total = st.alloc(f"{op.dst.source.name}_scan_lanes", (1,), acc_dtype, "local")
    full = tirx.const((1 << warp) - 1, "uint64")
    is_max = op.kind == "max"
    combine = (lambda a, b: tirx.Max(a, b)) if is_max else (lambda a, b: a + b)  # noqa: E731

    def one_line(line):
        def own(k, body):  # element k of this lane's run, where the line has one
            position = lane * run + k
            at = _line_index(op, extents, line, position)
            return if_then(position < length, body(at)) if length % warp else body(at)

        def scan_step(k):
            def body(index):
                value = cast(read(index), acc_dtype)
                running = tirx.BufferLoad(acc, [0])
                new = value if isinstance(k, tirx.IntImm) and int(k.value) == 0 else \
                    tirx.if_then_else(k == 0, value, combine(running, value))
                return seq([tirx.BufferStore(acc, new, [0]), write(index, tirx.BufferLoad(acc, [0]))])
            return own(k, body)

        def shuffle_level(level):  # every lane shuffles (acc is free now), the upper ones combine
            distance = 1 << level
            running = tirx.BufferLoad(total, [0])
            return seq([
                tirx.BufferStore(acc, I.call("tl_shfl_sync", full, running, tirx.Max(lane - distance, 0),
                                             dtype=acc_dtype), [0]),
                tirx.BufferStore(total, tirx.if_then_else(lane >= distance,
                                                          combine(running, tirx.BufferLoad(acc, [0])), running), [0])])

        def fold_step(k):
            def body(index):  # the lanes before this one, combined with this lane's prefix
                return write(index, combine(tirx.BufferLoad(acc, [0]), written(index)))
            return own(k, body)

        # a lane with no element of the line still takes part in the shuffles, with the identity
        identity = tirx.min_value(acc_dtype) if is_max else tirx.const(0, acc_dtype)
        prefix = I.call("tl_shfl_sync", full, tirx.BufferLoad(total, [0]), tirx.Max(lane - 1, 0), dtype=acc_dtype)
        return seq([
            tirx.BufferStore(acc, identity, [0]),
            loop("k", run, scan_step, tirx.ForKind.SERIAL),
            tirx.BufferStore(total, tirx.BufferLoad(acc, [0]), [0]),
            *[shuffle_level(level) for level in range(warp.bit_length() - 1)],
            # the lanes before this one: the inclusive total of the lane before (none for lane 0)
            tirx.BufferStore(acc, prefix, [0]),
            if_then(lane > 0, loop("k", run, fold_step, tirx.ForKind.SERIAL)),
        ])

    def body(it):
        line = it * warps + tirx.floordiv(st.thread_var, warp)
        return if_then(line < lines, one_line(line)) if lines % warps else one_line(line)

    return loop("line", -(-lines // warps), body, tirx.ForKind.SERIAL)

