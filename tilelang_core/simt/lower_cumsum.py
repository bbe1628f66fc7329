"""T.cumsum / T.cummax: inclusive scans along ``dim`` of a tile.

One thread scans one line (all other indices fixed), lines dealt round-robin over the block; the
running value is kept in a register, so ``src`` and ``dst`` may be the same buffer. A fragment
side goes through a shared workspace (staging.py), as TileLang stages fragment scans.
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
        write = lambda index, v: tirx.BufferStore(out_ws, v, [flat(index, extents)])  # noqa: E731
    else:
        write = lambda index, v: tirx.BufferStore(  # noqa: E731
            dst.source, v, [r.min + i for r, i in zip(dst.region, index)])
    length = extents[op.dim]
    others = [d for d in range(len(extents)) if d != op.dim]
    lines = size([extents[d] for d in others])
    threads = st.num_threads
    acc_dtype = dtype(dst)
    acc = st.alloc(f"{dst.source.name}_scan", (1,), acc_dtype, "local")

    def index_of(line, step):
        full = unflatten(line, [extents[d] for d in others])
        full.insert(op.dim, (length - 1 - step) if op.reverse else step)
        return full

    def body(it):
        line = it * threads + st.thread_var

        def step(s):
            tile = index_of(line, s)
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
    if to_fragment:
        stmts.append(shared_to_fragment(out_ws, dst, st, what))
    if to_fragment or scope(src) == FRAGMENT:
        stmts.append(I.syncthreads())  # the workspaces may be reused by the next op
    return seq(stmts)
